//! One switch port on Linux: an AF_PACKET socket bound to an interface, with a TPACKET_V3
//! receive ring (frames are read from shared memory, a block of them per wake-up) and batched
//! sends (`sendmmsg`). Frames the switch itself sends are not received back
//! (`PACKET_IGNORE_OUTGOING`).

use anyhow::{bail, Context};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, Ordering};

/// Receive ring geometry: blocks of 256 KiB, 32 of them (8 MiB per port). A block is handed to
/// the switch when full or after `RETIRE_MS` — the latency bound at low load.
const BLOCK_BYTES: u32 = 256 << 10;
const BLOCKS: u32 = 32;
const FRAME_BYTES: u32 = 2048;
const RETIRE_MS: u32 = 1;
/// Largest batch handed to one `sendmmsg`.
pub const SEND_BATCH: usize = 64;

/// One port.
pub struct Port {
    fd: OwnedFd,
    ring: *mut u8,
    ring_len: usize,
    block: usize,
    /// Interface name.
    pub name: String,
}

// SAFETY: `ring` is a mapping owned by this port alone (made in `open`, unmapped in `drop`);
// no other `Port` or thread holds the pointer, and the kernel's side of it is synchronised by
// each block's status word (see `receive`). Moving the port to another thread moves that sole
// ownership with it.
unsafe impl Send for Port {}

fn check(r: libc::c_int, what: &str) -> anyhow::Result<()> {
    if r < 0 {
        return Err(io::Error::last_os_error()).context(what.to_string());
    }
    Ok(())
}

fn setopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T, what: &str) -> anyhow::Result<()> {
    // SAFETY: `value` is a live reference to a `T` and the length passed is `size_of::<T>()`, so
    // the kernel reads only memory we own; a bad `fd` or option is an error return, not UB.
    let r = unsafe {
        libc::setsockopt(fd, level, name, value as *const T as *const libc::c_void, std::mem::size_of::<T>() as u32)
    };
    check(r, what)
}

impl Port {
    /// Opens interface `name` (in the calling thread's network namespace).
    pub fn open(name: &str) -> anyhow::Result<Port> {
        let cname = CString::new(name).context("interface name")?;
        // SAFETY: `cname` is a NUL-terminated string that outlives the call.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            bail!("no interface `{name}` in this network namespace");
        }
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain system call with integer arguments; the result is checked below.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto as i32) };
        check(raw, "AF_PACKET socket (needs CAP_NET_RAW)")?;
        // SAFETY: `raw` is a socket just opened (checked non-negative) and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let v = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
        setopt(raw, libc::SOL_PACKET, libc::PACKET_VERSION, &v, "PACKET_VERSION = TPACKET_V3")?;
        let req = libc::tpacket_req3 {
            tp_block_size: BLOCK_BYTES,
            tp_block_nr: BLOCKS,
            tp_frame_size: FRAME_BYTES,
            tp_frame_nr: BLOCK_BYTES / FRAME_BYTES * BLOCKS,
            tp_retire_blk_tov: RETIRE_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        setopt(raw, libc::SOL_PACKET, libc::PACKET_RX_RING, &req, "PACKET_RX_RING")?;
        let one: libc::c_int = 1;
        setopt(raw, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one, "PACKET_IGNORE_OUTGOING")?;
        let sndbuf: libc::c_int = 8 << 20;
        setopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &sndbuf, "SO_SNDBUFFORCE")?;
        let ring_len = (BLOCK_BYTES * BLOCKS) as usize;
        // SAFETY: maps `ring_len` bytes of the socket's receive ring, set up above with exactly
        // BLOCKS × BLOCK_BYTES; the result is checked against MAP_FAILED before any use.
        let ring = unsafe {
            libc::mmap(std::ptr::null_mut(), ring_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, raw, 0)
        };
        if ring == libc::MAP_FAILED {
            return Err(io::Error::last_os_error()).context("mmap of the receive ring");
        }
        let port = Port { fd, ring: ring as *mut u8, ring_len, block: 0, name: name.to_string() };
        // SAFETY: `sockaddr_ll` is plain old data, for which all-zero bytes are a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a live `sockaddr_ll` and the length passed is its size.
        let r = unsafe {
            libc::bind(
                raw,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        check(r, &format!("bind to {name}"))?;
        Ok(port)
    }

    /// The socket, for `poll`.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Hands every frame waiting in the receive ring to `f`; returns how many there were.
    pub fn receive(&mut self, mut f: impl FnMut(&[u8])) -> usize {
        let mut n = 0;
        loop {
            // SAFETY: `block < BLOCKS`, so the block starts inside the `BLOCKS × BLOCK_BYTES`
            // mapping, which lives as long as `self`.
            let base = unsafe { self.ring.add(self.block * BLOCK_BYTES as usize) };
            let desc = base as *mut libc::tpacket_block_desc;
            // SAFETY: every TPACKET_V3 block begins with its descriptor, which the kernel
            // initialised when the ring was set up; the mapping is aligned to a page.
            let bh = unsafe { &mut (*desc).hdr.bh1 };
            // SAFETY: `bh` points into the mapping; the kernel writes the status concurrently,
            // hence a volatile read.
            let status = unsafe { std::ptr::read_volatile(&bh.block_status) };
            if status & libc::TP_STATUS_USER == 0 {
                return n;
            }
            fence(Ordering::Acquire);
            let mut off = bh.offset_to_first_pkt as usize;
            for _ in 0..bh.num_pkts {
                // SAFETY: the block belongs to user space (TP_STATUS_USER, acquired above) until
                // handed back, and the kernel lays out `num_pkts` frame headers from
                // `offset_to_first_pkt`, each `tp_next_offset` after the last, inside the block.
                let hdr = unsafe { &*(base.add(off) as *const libc::tpacket3_hdr) };
                // SAFETY: the kernel put `tp_snaplen` bytes of frame at `tp_mac` from its header,
                // inside the same block; the slice is used only before the block is handed back.
                let data =
                    unsafe { std::slice::from_raw_parts(base.add(off + hdr.tp_mac as usize), hdr.tp_snaplen as usize) };
                f(data);
                n += 1;
                off += hdr.tp_next_offset as usize;
            }
            fence(Ordering::Release);
            // SAFETY: hands the block back to the kernel after the release fence; no reference
            // into it outlives this point.
            unsafe { std::ptr::write_volatile(&mut bh.block_status, libc::TP_STATUS_KERNEL) };
            self.block = (self.block + 1) % BLOCKS as usize;
        }
    }

    /// Sends `frames` in order, in batches; returns how many went. It stops early only when the
    /// kernel pushes back (`ENOBUFS`, `EAGAIN`: the caller retries the rest later — the switch
    /// never drops a frame for it); any other error is returned.
    pub fn send(&self, frames: &[Vec<u8>]) -> io::Result<usize> {
        let mut sent = 0;
        while sent < frames.len() {
            let batch = &frames[sent..frames.len().min(sent + SEND_BATCH)];
            let mut iov: Vec<libc::iovec> = batch
                .iter()
                .map(|f| libc::iovec { iov_base: f.as_ptr() as *mut libc::c_void, iov_len: f.len() })
                .collect();
            let mut msgs: Vec<libc::mmsghdr> = iov
                .iter_mut()
                .map(|v| {
                    // SAFETY: `mmsghdr` is plain old data; all-zero is a valid (empty) header.
                    let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                    m.msg_hdr.msg_iov = v;
                    m.msg_hdr.msg_iovlen = 1;
                    m
                })
                .collect();
            // SAFETY: `msgs` holds `msgs.len()` headers, each pointing at one iovec of `iov`,
            // each pointing at a frame of `batch`; all of them live until the call returns.
            let r = unsafe { libc::sendmmsg(self.raw_fd(), msgs.as_mut_ptr(), msgs.len() as u32, libc::MSG_DONTWAIT) };
            if r < 0 {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(sent),
                    _ => Err(e),
                };
            }
            sent += r as usize;
            if (r as usize) < batch.len() {
                return Ok(sent);
            }
        }
        Ok(sent)
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        // SAFETY: unmaps the ring mapped in `open`, exactly once; nothing borrows it any more.
        unsafe { libc::munmap(self.ring as *mut libc::c_void, self.ring_len) };
    }
}
