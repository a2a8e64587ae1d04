//! Working inside a named network namespace (`/run/netns/NAME`, as `ip netns` makes them):
//! a thread that enters one, a child process that starts in one, and what daqnet does there
//! without external tools: interface offloads (the ethtool ioctl), sysctls, TCP counters.

use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// Where `ip netns` keeps the namespace `name`.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from("/run/netns").join(name)
}

/// Names of every namespace `ip netns` knows.
pub fn list() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/run/netns") else { return Vec::new() };
    let mut v: Vec<String> = dir.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    v.sort();
    v
}

fn open(name: &str) -> anyhow::Result<File> {
    File::open(path(name)).with_context(|| format!("network namespace {name} does not exist"))
}

fn enter(file: &File) -> std::io::Result<()> {
    // SAFETY: setns on a valid namespace fd; it changes only the calling thread's namespace.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `f` on a new thread inside namespace `name` (sockets it opens and `/proc/thread-self/net`
/// and `/proc/sys/net` are that namespace's), and returns what it returns.
pub fn within<T: Send>(name: &str, f: impl FnOnce() -> anyhow::Result<T> + Send) -> anyhow::Result<T> {
    let file = open(name)?;
    std::thread::scope(|s| {
        s.spawn(move || {
            enter(&file).with_context(|| format!("cannot enter network namespace {name}"))?;
            f()
        })
        .join()
        .unwrap_or_else(|_| bail!("a thread inside network namespace {name} panicked"))
    })
}

/// Makes `cmd` start inside namespace `name`.
pub fn place(cmd: &mut Command, name: &str) -> anyhow::Result<()> {
    let file = open(name)?;
    // SAFETY: the closure runs between fork and exec and only calls setns (async-signal-safe);
    // the namespace file is opened close-on-exec, so the role does not inherit it.
    unsafe { cmd.pre_exec(move || enter(&file)) };
    Ok(())
}

/// Writes a sysctl (dotted name) of the calling thread's namespace.
pub fn sysctl(key: &str, value: &str) -> anyhow::Result<()> {
    let p = PathBuf::from("/proc/sys").join(key.replace('.', "/"));
    std::fs::write(&p, value).with_context(|| format!("cannot set {key} = {value} ({})", p.display()))
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;
/// (get, set) ethtool commands of TSO, GSO, GRO and transmit checksumming (linux/ethtool.h).
/// Checksums are computed by the sender's kernel, as on a wire: a veth would otherwise pass
/// frames with their checksum left to "hardware", which a switch that copies frames (the
/// daqring switch's AF_PACKET sockets) would forward unfinished.
const OFFLOADS: [(&str, u32, u32); 4] =
    [("tso", 0x1e, 0x1f), ("gso", 0x23, 0x24), ("gro", 0x2b, 0x2c), ("tx-checksumming", 0x16, 0x17)];

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[repr(C)]
struct IfReq {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut EthtoolValue,
    _pad: [u8; 16],
}

fn ethtool(sock: &std::net::UdpSocket, dev: &str, cmd: u32, data: u32) -> std::io::Result<u32> {
    let mut value = EthtoolValue { cmd, data };
    let mut req = IfReq { name: [0; libc::IFNAMSIZ], data: &mut value, _pad: [0; 16] };
    for (d, s) in req.name.iter_mut().zip(dev.bytes().take(libc::IFNAMSIZ - 1)) {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCETHTOOL with an ifreq pointing at a live ethtool_value, both on this stack.
    if unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL as _, &mut req) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(value.data)
}

/// Turns TSO, GSO, GRO and transmit checksum offload off on `dev` in the calling thread's namespace and checks that they
/// are off, so queues hold frames of wire size, not 64 kB aggregates.
pub fn offloads_off(dev: &str) -> anyhow::Result<()> {
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").context("cannot open a socket for ethtool")?;
    for (name, get, set) in OFFLOADS {
        ethtool(&sock, dev, set, 0).with_context(|| format!("cannot turn {name} off on {dev}"))?;
        if ethtool(&sock, dev, get, 0).with_context(|| format!("cannot read {name} of {dev}"))? != 0 {
            bail!("{name} is still on on {dev} after turning it off");
        }
    }
    Ok(())
}

/// The calling thread's namespace's SNMP and extended TCP counters, by `nstat` name
/// (`TcpRetransSegs`, `TcpExtTCPTimeouts`, …): what `nstat -asz` prints in that namespace.
pub fn counters() -> anyhow::Result<BTreeMap<String, u64>> {
    let mut all = BTreeMap::new();
    for file in ["snmp", "netstat"] {
        let p = format!("/proc/thread-self/net/{file}");
        let text = std::fs::read_to_string(&p).with_context(|| format!("cannot read {p}"))?;
        parse_counters(&text, &mut all);
    }
    Ok(all)
}

/// Parses `/proc/net/snmp`-style text (pairs of `Group: names…` / `Group: values…` lines).
fn parse_counters(text: &str, into: &mut BTreeMap<String, u64>) {
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.chunks(2) {
        let [names, values] = pair else { continue };
        let (Some((group, names)), Some((_, values))) = (names.split_once(':'), values.split_once(':')) else {
            continue;
        };
        for (n, v) in names.split_whitespace().zip(values.split_whitespace()) {
            if let Ok(v) = v.parse::<u64>() {
                into.insert(format!("{group}{n}"), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_named_as_nstat_names_them() {
        let text =
            "Tcp: RtoAlgorithm RetransSegs MaxConn\nTcp: 1 42 -1\nTcpExt: TCPTimeouts TCPLossProbes\nTcpExt: 3 7\n";
        let mut m = BTreeMap::new();
        parse_counters(text, &mut m);
        assert_eq!(m["TcpRetransSegs"], 42);
        assert_eq!(m["TcpExtTCPTimeouts"], 3);
        assert_eq!(m["TcpExtTCPLossProbes"], 7);
        assert!(!m.contains_key("TcpMaxConn"), "negative values are not counters");
    }

    #[test]
    fn this_namespace_has_tcp_counters() {
        let m = counters().unwrap();
        assert!(m.contains_key("TcpRetransSegs") && m.contains_key("TcpExtTCPTimeouts"));
    }
}
