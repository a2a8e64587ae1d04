//! What a link sends: pieces of frames, each in memory and, when it is a slice of the shared
//! fragment payload template, also in a file, so a transport that can send from a file (TCP,
//! with `sendfile`) does not copy those bytes from memory.
//!
//! Why: on loopback, `sendfile` from a memory file hands the file's pages to the socket by
//! reference (`splice_to_socket` with `MSG_SPLICE_PAGES`), where `write` copies them into new
//! socket buffers (`_copy_from_iter`). A C sender measured on this project's 2-core machine,
//! 128 KiB per call, one cubic stream to one reader over loopback: 0.104–0.114 ns of the
//! sender's CPU per byte with `write` (70–76 Gb/s), 0.073–0.089 with `sendfile` (87–95 Gb/s);
//! the rest of either is the loopback's receive path, which the sender's CPU runs.

use bytes::{Buf, Bytes};
use std::fs::File;
use std::sync::Arc;

/// The shortest piece worth sending from a file, between the fragment sizes measured level and
/// better (a 64 KiB fragment's payload after its first word is 8 bytes short of 64 KiB); shorter
/// pieces are left out of files. Below it, the two system calls a fragment costs from the file
/// (its header with `MSG_MORE`, its payload with `sendfile`; memory pieces share one vectored
/// write) cost what the saved copy gains. `daqnet run`, 16 readout units → 1 node over loopback,
/// verification on, Gb/s from memory vs from the file (two runs each): 16 KiB fragments
/// 17.4–18.2 vs 16.9–17.6, 32 KiB 29.0–29.5 vs 28.4–29.6, 64 KiB 37.8–40.0 vs 41.3, 128 KiB
/// 49.6 vs 57.7; the ATLAS-like system's 1.1 kB fragments, 12 to a response, fell from 6,552
/// to 3,218 events/s when every one went from the file. Even holding the file for a short
/// piece it is not sent from cost that system 5 % (reference counts, one per fragment).
pub const FROM_FILE_MIN_BYTES: usize = 48 << 10;

/// Where a piece's bytes also lie: `file` from `offset` on.
#[derive(Debug, Clone)]
pub struct InFile {
    /// The file (a memory file: nothing reaches a disk).
    pub file: Arc<File>,
    /// Offset of the piece's first byte.
    pub offset: u64,
}

/// A piece of one or more frames.
#[derive(Debug, Clone, Default)]
pub struct Piece {
    /// Its bytes.
    pub bytes: Bytes,
    /// The same bytes in a file, for a transport that can send from one (only pieces of
    /// [`FROM_FILE_MIN_BYTES`] or more are worth it).
    pub in_file: Option<InFile>,
}

impl Piece {
    /// Its length.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Drops its first `n` bytes (from memory and file alike).
    pub fn advance(&mut self, n: usize) {
        self.bytes.advance(n);
        if let Some(f) = &mut self.in_file {
            f.offset += n as u64;
        }
    }
}

/// Pieces are equal when their bytes are: where else the bytes lie does not change them.
impl PartialEq for Piece {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl From<Bytes> for Piece {
    fn from(bytes: Bytes) -> Self {
        Piece { bytes, in_file: None }
    }
}

/// A memory file (`memfd_create`) holding `bytes`; `None` where the system cannot make one,
/// and pieces are then sent from memory. The file is sealed against execution where the kernel
/// knows the flag (Linux 6.3 on), as `vm.memfd_noexec = 2` requires; older kernels refuse the
/// flag with `EINVAL` and get the file without it.
pub fn memory_file(bytes: &[u8]) -> Option<File> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    let create = |flags| {
        // SAFETY: the name is a NUL-terminated string; the call returns a new descriptor or -1.
        unsafe { libc::memfd_create(c"daqnet-piece".as_ptr(), flags) }
    };
    let mut fd = create(libc::MFD_CLOEXEC | libc::MFD_NOEXEC_SEAL);
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        fd = create(libc::MFD_CLOEXEC);
    }
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    let mut f = unsafe { File::from_raw_fd(fd) };
    f.write_all(bytes).ok()?;
    Some(f)
}
