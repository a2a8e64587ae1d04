//! The congestion controls Linux lacks here, which daqnet brings as BPF `struct_ops` programs,
//! compiled with clang against this kernel's BTF and registered with bpftool, once per boot (a
//! congestion control is global to the machine, like the built-in ones):
//! - `congestion_control = "static"`: `daqnet_static` (`bpf/static_cc.bpf.c`) holds every
//!   connection's window at its route's `initcwnd`;
//! - `congestion_control = "dctcp"`: `daqnet_dctcp` (`bpf/dctcp.bpf.c`), DCTCP after Linux's
//!   `tcp_dctcp.c`, which this kernel neither has nor can load as a module.

use anyhow::{bail, Context};
use std::path::PathBuf;
use std::process::Command;

/// One of daqnet's BPF congestion controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfCc {
    /// Its name, as sockets ask for it (`TCP_CONGESTION`).
    pub name: &'static str,
    /// Name of its struct_ops map (for `bpftool struct_ops unregister`).
    map: &'static str,
    /// The source's file name, and the source.
    file: &'static str,
    source: &'static str,
}

/// The static window.
pub const STATIC: BpfCc = BpfCc {
    name: "daqnet_static",
    map: "dqs",
    file: "static_cc.bpf.c",
    source: include_str!("../bpf/static_cc.bpf.c"),
};

/// DCTCP.
pub const DCTCP: BpfCc =
    BpfCc { name: "daqnet_dctcp", map: "dqd", file: "dctcp.bpf.c", source: include_str!("../bpf/dctcp.bpf.c") };

/// What to install when the tools are missing.
pub const INSTALL: &str = "apt-get install clang bpftool libbpf-dev (or run scripts/testbed-deps.sh)";

/// Daqnet's congestion control called `name`, if it is one.
pub fn named(name: &str) -> Option<BpfCc> {
    [STATIC, DCTCP].into_iter().find(|c| c.name == name)
}

pub(crate) fn run(cmd: &mut Command, what: &str) -> anyhow::Result<Vec<u8>> {
    let out = cmd.output().with_context(|| format!("cannot run {what}: {INSTALL}"))?;
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out.stdout)
}

/// Compiles BPF C `source` (named `file`) against this kernel's types in `dir`, with clang
/// `defines` (`-DNAME=VALUE`); returns the object's path.
pub(crate) fn compile(dir: &std::path::Path, file: &str, source: &str, defines: &[String]) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let btf = run(
        Command::new("bpftool").args(["btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"]),
        "bpftool btf dump (the kernel's types)",
    )?;
    std::fs::write(dir.join("vmlinux.h"), btf)?;
    std::fs::write(dir.join(file), source)?;
    let object = dir.join(file.replace(".c", ".o"));
    run(
        Command::new("clang")
            .args(["-O2", "-g", "-target", "bpf", "-c", file, "-o"])
            .arg(&object)
            .args(defines)
            .current_dir(dir),
        &format!("clang (compiling {file})"),
    )?;
    Ok(object)
}

impl BpfCc {
    /// Whether the kernel offers it.
    pub fn available(self) -> bool {
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .is_ok_and(|s| s.split_whitespace().any(|c| c == self.name))
    }

    /// Makes sure the kernel offers it: builds and registers it if it does not. Returns whether
    /// this call registered it (then [`BpfCc::unregister`] when done).
    pub fn ensure(self) -> anyhow::Result<bool> {
        if self.available() {
            return Ok(false);
        }
        let dir = PathBuf::from(format!("/run/daqnet/bpf-{}-{}", self.map, std::process::id()));
        let object = compile(&dir, self.file, self.source, &[])?;
        run(Command::new("bpftool").args(["struct_ops", "register"]).arg(&object), "bpftool struct_ops register")?;
        let _ = std::fs::remove_dir_all(&dir);
        if !self.available() {
            bail!("registered {}, but the kernel does not offer it", self.name);
        }
        Ok(true)
    }

    /// Removes it from the kernel (sockets still using it keep it until they close).
    pub fn unregister(self) -> anyhow::Result<()> {
        run(
            Command::new("bpftool").args(["struct_ops", "unregister", "name", self.map]),
            "bpftool struct_ops unregister",
        )?;
        Ok(())
    }
}
