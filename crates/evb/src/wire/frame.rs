//! Framing: every message travels as one frame, `magic "DQ" | version | kind | body length` (8
//! bytes, little-endian length) followed by the body. The decoder is sans-IO: feed it bytes as
//! they arrive, take whole frames out. It never panics and never allocates more than the
//! configured maximum frame size, whatever it is fed.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::fmt;

/// The two bytes every frame starts with.
pub const MAGIC: [u8; 2] = *b"DQ";
/// Version of the wire format this build speaks.
pub const VERSION: u8 = 2;
/// Bytes of a frame header.
pub const HEADER_BYTES: usize = 8;

/// A frame that cannot be accepted; the connection it came on must be closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The first two bytes are not `DQ`: not a daqnet peer, or the stream lost sync.
    BadMagic([u8; 2]),
    /// A wire format version this build does not speak.
    Version(u8),
    /// The body is larger than the maximum frame size.
    TooLarge {
        /// Announced body bytes.
        bytes: u64,
        /// Largest accepted.
        max: u64,
        /// Where the limit comes from.
        limit: &'static str,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            FrameError::BadMagic(m) => write!(f, "bad frame magic {m:02x?} (expected \"DQ\")"),
            FrameError::Version(v) => write!(f, "wire format version {v} (this build speaks {VERSION})"),
            FrameError::TooLarge { bytes, max, limit } => {
                write!(f, "frame of {bytes} bytes exceeds the maximum of {max} ({limit})")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// Writes a frame header for a body of `body_bytes` bytes.
pub fn put_header(out: &mut BytesMut, kind: u8, body_bytes: usize) {
    out.put_slice(&MAGIC);
    out.put_u8(VERSION);
    out.put_u8(kind);
    out.put_u32_le(body_bytes as u32);
}

/// Splits a byte stream into frames.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    max_body: u64,
    limit: &'static str,
}

impl FrameDecoder {
    /// A decoder accepting bodies of at most `max_body_bytes` (`deploy.max_frame_bytes`, at
    /// most `u32::MAX`).
    pub fn new(max_body_bytes: u64) -> Self {
        FrameDecoder { max_body: max_body_bytes.min(u32::MAX as u64), limit: "deploy.max_frame_bytes" }
    }

    /// A decoder for the first frame of a connection that has not identified itself: a hello,
    /// at most `max_body_bytes`.
    pub fn for_hello(max_body_bytes: u64) -> Self {
        FrameDecoder { max_body: max_body_bytes, limit: "the largest hello" }
    }

    /// Takes the next whole frame, `(kind, body)`, off the front of `buf`, if `buf` holds one.
    /// On an error the stream cannot be resynchronised: close the connection.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<(u8, Bytes)>, FrameError> {
        if buf.len() < HEADER_BYTES {
            // Reject a wrong magic as soon as it is visible.
            if buf.len() >= 2 && buf[..2] != MAGIC {
                return Err(FrameError::BadMagic([buf[0], buf[1]]));
            }
            return Ok(None);
        }
        let magic = [buf[0], buf[1]];
        if magic != MAGIC {
            return Err(FrameError::BadMagic(magic));
        }
        if buf[2] != VERSION {
            return Err(FrameError::Version(buf[2]));
        }
        let kind = buf[3];
        let len = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]) as u64;
        if len > self.max_body {
            return Err(FrameError::TooLarge { bytes: len, max: self.max_body, limit: self.limit });
        }
        let total = HEADER_BYTES + len as usize;
        if buf.len() < total {
            // Make room for the rest of the frame in one allocation.
            buf.reserve(total - buf.len());
            return Ok(None);
        }
        buf.advance(HEADER_BYTES);
        Ok(Some((kind, buf.split_to(len as usize).freeze())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut b = BytesMut::new();
        put_header(&mut b, kind, body.len());
        b.put_slice(body);
        b.to_vec()
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let d = FrameDecoder::new(100);
        let mut b = BytesMut::from(&b"GET / HTTP/1.1\r\n"[..]);
        assert_eq!(d.decode(&mut b), Err(FrameError::BadMagic(*b"GE")));
        let mut b = BytesMut::from(&[b'D', b'Q', 9, 1, 0, 0, 0, 0][..]);
        assert_eq!(d.decode(&mut b), Err(FrameError::Version(9)));
        let mut b = BytesMut::from(&frame(1, &[0; 101])[..]);
        let e = FrameError::TooLarge { bytes: 101, max: 100, limit: "deploy.max_frame_bytes" };
        assert_eq!(d.decode(&mut b), Err(e.clone()));
        assert!(e.to_string().contains("deploy.max_frame_bytes"));
    }

    proptest! {
        /// Frames cut into arbitrary pieces come out whole, in order, unchanged.
        #[test]
        fn frames_survive_any_chunking(
            frames in proptest::collection::vec((any::<u8>(), proptest::collection::vec(any::<u8>(), 0..300)), 0..20),
            cuts in proptest::collection::vec(1usize..64, 1..50),
        ) {
            let stream: Vec<u8> = frames.iter().flat_map(|(k, b)| frame(*k, b)).collect();
            let d = FrameDecoder::new(300);
            let mut buf = BytesMut::new();
            let mut got = Vec::new();
            let mut pos = 0;
            let mut cut = cuts.iter().cycle();
            while pos < stream.len() {
                let n = (*cut.next().unwrap()).min(stream.len() - pos);
                buf.extend_from_slice(&stream[pos..pos + n]);
                pos += n;
                while let Some((k, body)) = d.decode(&mut buf).unwrap() {
                    got.push((k, body.to_vec()));
                }
            }
            prop_assert_eq!(got, frames);
            prop_assert!(buf.is_empty());
        }

        /// Arbitrary bytes never panic the decoder; it either waits, yields frames within the
        /// size limit, or reports an error.
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2000), max in 0u64..5000) {
            let d = FrameDecoder::new(max);
            let mut buf = BytesMut::from(&bytes[..]);
            while let Ok(Some((_, body))) = d.decode(&mut buf) {
                prop_assert!(body.len() as u64 <= max);
            }
        }
    }
}
