//! `congestion_control = "static"` in the testbed: Linux has no fixed-window congestion
//! control, so daqnet brings one — a BPF `struct_ops` program (`bpf/static_cc.bpf.c`) that holds
//! every connection's window at its route's `initcwnd`. It is compiled with clang against this
//! kernel's BTF and registered with bpftool, once per boot (a congestion control is global to
//! the machine, like the built-in ones).

use anyhow::{bail, Context};
use std::path::PathBuf;
use std::process::Command;

/// Name of the congestion control, as sockets ask for it (`TCP_CONGESTION`).
pub const NAME: &str = "daqnet_static";
/// Name of its struct_ops map (for `bpftool struct_ops unregister`).
const MAP: &str = "dqs";
const SOURCE: &str = include_str!("../bpf/static_cc.bpf.c");
/// What to install when the tools are missing.
pub const INSTALL: &str = "apt-get install clang bpftool libbpf-dev (or run scripts/testbed-deps.sh)";

/// Whether the kernel offers `daqnet_static`.
pub fn available() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .is_ok_and(|s| s.split_whitespace().any(|c| c == NAME))
}

fn run(cmd: &mut Command, what: &str) -> anyhow::Result<Vec<u8>> {
    let out = cmd.output().with_context(|| format!("cannot run {what}: {INSTALL}"))?;
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out.stdout)
}

/// Makes sure the kernel offers `daqnet_static`: builds and registers it if it does not.
/// Returns whether this call registered it (then [`unregister`] when done).
pub fn ensure() -> anyhow::Result<bool> {
    if available() {
        return Ok(false);
    }
    let dir = PathBuf::from(format!("/run/daqnet/bpf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let btf = run(
        Command::new("bpftool").args(["btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"]),
        "bpftool btf dump (the kernel's types)",
    )?;
    std::fs::write(dir.join("vmlinux.h"), btf)?;
    std::fs::write(dir.join("static_cc.bpf.c"), SOURCE)?;
    run(
        Command::new("clang")
            .args(["-O2", "-g", "-target", "bpf", "-c", "static_cc.bpf.c", "-o", "static_cc.bpf.o"])
            .current_dir(&dir),
        "clang (compiling the static-window congestion control)",
    )?;
    run(
        Command::new("bpftool").args(["struct_ops", "register"]).arg(dir.join("static_cc.bpf.o")),
        "bpftool struct_ops register",
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    if !available() {
        bail!("registered the static-window congestion control, but the kernel does not offer `{NAME}`");
    }
    Ok(true)
}

/// Removes `daqnet_static` from the kernel (sockets still using it keep it until they close).
pub fn unregister() -> anyhow::Result<()> {
    run(Command::new("bpftool").args(["struct_ops", "unregister", "name", MAP]), "bpftool struct_ops unregister")?;
    Ok(())
}
