//! packetdrill against the live kernel: built from its source (`../shared/packetdrill` or
//! `PACKETDRILL_DIR`, GPL-2.0, never copied into the repository) into a folder of our own, and
//! run on one script at a time in a network namespace of its own (`unshare -n`), as upstream's
//! `in_netns.sh` does. Needs root, `/dev/net/tun`, and bison and flex to build
//! (`scripts/packetdrill-deps.sh`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The packetdrill source tree: `PACKETDRILL_DIR`, or `shared/packetdrill` beside the
/// repository `repo`. `None` when neither holds packetdrill's sources.
pub fn source(repo: &Path) -> Option<PathBuf> {
    let dir =
        std::env::var_os("PACKETDRILL_DIR").map(PathBuf::from).unwrap_or_else(|| repo.join("../shared/packetdrill"));
    dir.join("gtests/net/packetdrill/configure").is_file().then_some(dir)
}

/// A built packetdrill.
#[derive(Debug, Clone)]
pub struct Packetdrill {
    /// The binary.
    pub binary: PathBuf,
}

/// Why packetdrill could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// A step of the build failed: which, and the end of its output.
    #[error("building packetdrill: `{step}` failed: {output}")]
    Build {
        /// The command.
        step: String,
        /// Its last lines.
        output: String,
    },
    /// A file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> KernelError {
    let what = what.into();
    move |source| KernelError::Io { what, source }
}

impl Packetdrill {
    /// Builds packetdrill from `source` (see [`source`]) in `into` (its own folder under
    /// `target/`), unless a build is already there. About a minute on two cores.
    pub fn build(source: &Path, into: &Path) -> Result<Packetdrill, KernelError> {
        let binary = into.join("packetdrill");
        if binary.is_file() {
            return Ok(Packetdrill { binary });
        }
        let tmp = into.with_extension("building");
        let _ = std::fs::remove_dir_all(&tmp);
        copy_tree(&source.join("gtests/net/packetdrill"), &tmp)?;
        for step in [&["./configure"][..], &["make", "-j2"][..]] {
            let out = Command::new(step[0])
                .args(&step[1..])
                .current_dir(&tmp)
                .output()
                .map_err(io(format!("starting {}", step[0])))?;
            if !out.status.success() {
                let text = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
                let tail: Vec<&str> = text.lines().rev().take(8).collect();
                let output = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
                return Err(KernelError::Build { step: step.join(" "), output });
            }
        }
        let _ = std::fs::remove_dir_all(into);
        std::fs::rename(&tmp, into).map_err(io(format!("moving the build to {}", into.display())))?;
        Ok(Packetdrill { binary })
    }

    /// Runs `script` once, from its own folder (where its shell commands find what they call),
    /// in a new network namespace, for at most `limit`.
    pub fn run(&self, script: &Path, limit: Duration) -> Outcome {
        let dir = script.parent().unwrap_or(Path::new("."));
        let started = Instant::now();
        let child = Command::new("timeout")
            .arg("--kill-after=5")
            .arg(format!("{}", limit.as_secs().max(1)))
            .args(["unshare", "-n"])
            .arg(&self.binary)
            .arg(script.file_name().unwrap_or_default())
            .current_dir(dir)
            .stdin(Stdio::null())
            .output();
        match child {
            Ok(out) => Outcome {
                passed: out.status.success(),
                output: String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
                wall: started.elapsed(),
            },
            Err(e) => {
                Outcome { passed: false, output: format!("cannot start packetdrill: {e}"), wall: started.elapsed() }
            }
        }
    }
}

/// One run of a script.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// packetdrill exited 0: every segment and call as the script says.
    pub passed: bool,
    /// What it printed.
    pub output: String,
    /// How long it took.
    pub wall: Duration,
}

/// Copies the tree `from` to `to` (files and folders; modes kept, made writable).
fn copy_tree(from: &Path, to: &Path) -> Result<(), KernelError> {
    std::fs::create_dir_all(to).map_err(io(format!("creating {}", to.display())))?;
    for entry in std::fs::read_dir(from).map_err(io(format!("reading {}", from.display())))? {
        let entry = entry.map_err(io(format!("reading {}", from.display())))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(io(format!("copying {}", src.display())))?;
            let mut perms = std::fs::metadata(&dst).map_err(io(format!("reading {}", dst.display())))?.permissions();
            // Writable by its owner (the build writes beside the sources), by no one else.
            perms.set_mode(perms.mode() | 0o200);
            std::fs::set_permissions(&dst, perms).map_err(io(format!("making {} writable", dst.display())))?;
        }
    }
    Ok(())
}
