//! `daqnet bench`: simulator speed on reference loads.

use clap::Args;
use std::process::ExitCode;

/// Measure simulator speed.
#[derive(Args)]
pub struct BenchArgs {}

/// Runs the verb.
pub fn run(_a: BenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not yet")
}
