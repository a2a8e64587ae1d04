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
