//! Running the `daqnet` binary from the repository root, as a user does.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `daqnet ARGS` in the repository root.
pub fn daqnet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_daqnet"))
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(args)
        .output()
        .expect("daqnet runs")
}

/// Standard output and error together.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A test's output folder: removed when the test passes, kept for a look when it fails.
pub struct OutDir(PathBuf);

impl std::ops::Deref for OutDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A fresh, empty output folder `daqnet-test-PID-NAME` in the temporary folder.
pub fn out_dir(name: &str) -> OutDir {
    let d = std::env::temp_dir().join(format!("daqnet-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    OutDir(d)
}
