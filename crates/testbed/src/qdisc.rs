//! Queue statistics of every root qdisc in a namespace, read over rtnetlink (what `tc -s qdisc`
//! prints), cheaply enough to sample the backlog every millisecond during a run.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const RTM_NEWQDISC: u16 = 36;
const RTM_GETQDISC: u16 = 38;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const TCA_KIND: u16 = 1;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
const TC_H_ROOT: u32 = 0xFFFF_FFFF;
const NLMSG_HDR: usize = 16;
const TCMSG: usize = 20;

/// Counters of one root qdisc.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QdiscStats {
    /// Interface index (in its namespace).
    pub ifindex: u32,
    /// Qdisc kind, e.g. `tbf`.
    pub kind: String,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets sent.
    pub packets: u64,
    /// Packets dropped.
    pub drops: u64,
    /// Bytes queued now.
    pub backlog_bytes: u64,
}

/// An rtnetlink socket of the namespace of the thread that opened it.
pub struct QdiscReader {
    fd: OwnedFd,
    seq: u32,
    buf: Vec<u8>,
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl QdiscReader {
    /// Opens a socket in the calling thread's namespace.
    pub fn open() -> io::Result<QdiscReader> {
        // SAFETY: plain socket(2); the fd is owned right away.
        let fd =
            check(unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) })?;
        // SAFETY: fd is a fresh socket nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(QdiscReader { fd, seq: 0, buf: vec![0; 1 << 16] })
    }

    /// Statistics of every root qdisc in the namespace.
    pub fn root_qdiscs(&mut self) -> io::Result<Vec<QdiscStats>> {
        self.seq = self.seq.wrapping_add(1);
        let mut req = [0u8; NLMSG_HDR + TCMSG];
        req[0..4].copy_from_slice(&((NLMSG_HDR + TCMSG) as u32).to_ne_bytes());
        req[4..6].copy_from_slice(&RTM_GETQDISC.to_ne_bytes());
        req[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        req[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        req[NLMSG_HDR] = libc::AF_UNSPEC as u8;
        // SAFETY: an all-zero sockaddr_nl is valid; it addresses the kernel (pid 0).
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: req and kernel live across the call; lengths are theirs.
        check(unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                req.as_ptr().cast(),
                req.len(),
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            ) as libc::c_int
        })?;
        let mut out = Vec::new();
        loop {
            // SAFETY: buf is ours and its length is passed.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), self.buf.as_mut_ptr().cast(), self.buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if parse_messages(&self.buf[..n as usize], self.seq, &mut out)? {
                return Ok(out);
            }
        }
    }
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_ne_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_ne_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Attributes (type, payload) in `b`; stops at the first malformed one.
fn attributes(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let len = u16_at(b, 0) as usize;
        if len < 4 || len > b.len() {
            return None;
        }
        let item = (u16_at(b, 2) & 0x3FFF, &b[4..len]);
        b = &b[align4(len).min(b.len())..];
        Some(item)
    })
}

/// Parses one datagram of a dump reply into `out`; true when the dump is complete.
fn parse_messages(mut b: &[u8], seq: u32, out: &mut Vec<QdiscStats>) -> io::Result<bool> {
    while b.len() >= NLMSG_HDR {
        let len = u32_at(b, 0) as usize;
        if len < NLMSG_HDR || len > b.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "truncated netlink message"));
        }
        let (kind, msg_seq, body) = (u16_at(b, 4), u32_at(b, 8), &b[NLMSG_HDR..len]);
        b = &b[align4(len).min(b.len())..];
        if msg_seq != seq {
            continue;
        }
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = if body.len() >= 4 { -(u32_at(body, 0) as i32) } else { libc::EIO };
                if errno != 0 {
                    return Err(io::Error::from_raw_os_error(errno));
                }
            }
            RTM_NEWQDISC if body.len() >= TCMSG && u32_at(body, 12) == TC_H_ROOT => {
                let mut q = QdiscStats { ifindex: u32_at(body, 4), ..Default::default() };
                for (t, v) in attributes(&body[TCMSG..]) {
                    match t {
                        TCA_KIND => q.kind = String::from_utf8_lossy(v).trim_end_matches('\0').to_string(),
                        TCA_STATS2 => {
                            for (t, v) in attributes(v) {
                                match t {
                                    TCA_STATS_BASIC if v.len() >= 12 => {
                                        q.bytes = u64::from_ne_bytes(v[0..8].try_into().expect("8 bytes"));
                                        q.packets = u32_at(v, 8) as u64;
                                    }
                                    TCA_STATS_QUEUE if v.len() >= 12 => {
                                        q.backlog_bytes = u32_at(v, 4) as u64;
                                        q.drops = u32_at(v, 8) as u64;
                                    }
                                    _ => {}
                                }
                            }
                        }
                        _ => {}
                    }
                }
                out.push(q);
            }
            _ => {}
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(t: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = ((4 + payload.len()) as u16).to_ne_bytes().to_vec();
        v.extend(t.to_ne_bytes());
        v.extend(payload);
        v.resize(align4(v.len()), 0);
        v
    }

    fn message(kind: u16, seq: u32, body: &[u8]) -> Vec<u8> {
        let mut v = ((NLMSG_HDR + body.len()) as u32).to_ne_bytes().to_vec();
        v.extend(kind.to_ne_bytes());
        v.extend(0u16.to_ne_bytes());
        v.extend(seq.to_ne_bytes());
        v.extend(0u32.to_ne_bytes());
        v.extend(body);
        v
    }

    #[test]
    fn a_dump_reply_is_parsed_into_root_qdisc_counters() {
        let mut tcmsg = vec![0u8; TCMSG];
        tcmsg[4..8].copy_from_slice(&7u32.to_ne_bytes());
        tcmsg[12..16].copy_from_slice(&TC_H_ROOT.to_ne_bytes());
        let mut basic = 123_456u64.to_ne_bytes().to_vec();
        basic.extend(99u32.to_ne_bytes());
        basic.extend(0u32.to_ne_bytes());
        let queue: Vec<u8> = [2u32, 3000, 5, 0, 11].iter().flat_map(|x| x.to_ne_bytes()).collect();
        let mut stats = attr(TCA_STATS_BASIC, &basic);
        stats.extend(attr(TCA_STATS_QUEUE, &queue));
        let mut body = tcmsg.clone();
        body.extend(attr(TCA_KIND, b"tbf\0"));
        body.extend(attr(TCA_STATS2 | 0x8000, &stats));
        // A child qdisc (parent not root) is skipped.
        let mut child = tcmsg.clone();
        child[12..16].copy_from_slice(&0x8001_0001u32.to_ne_bytes());
        child.extend(attr(TCA_KIND, b"bfifo\0"));
        let mut dgram = message(RTM_NEWQDISC, 9, &body);
        dgram.extend(message(RTM_NEWQDISC, 9, &child));
        let mut out = Vec::new();
        assert!(!parse_messages(&dgram, 9, &mut out).unwrap());
        assert_eq!(
            out,
            [QdiscStats { ifindex: 7, kind: "tbf".into(), bytes: 123_456, packets: 99, drops: 5, backlog_bytes: 3000 }]
        );
        assert!(parse_messages(&message(NLMSG_DONE, 9, &[0; 4]), 9, &mut out).unwrap());
        let err = message(NLMSG_ERROR, 9, &(-libc::EPERM).to_ne_bytes());
        assert_eq!(parse_messages(&err, 9, &mut out).unwrap_err().raw_os_error(), Some(libc::EPERM));
    }

    #[test]
    fn this_namespace_can_be_read() {
        // Loopback has a root qdisc ("noqueue") in every namespace.
        let qs = QdiscReader::open().unwrap().root_qdiscs().unwrap();
        assert!(qs.iter().any(|q| q.ifindex == 1), "{qs:?}");
    }
}
