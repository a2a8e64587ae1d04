//! `daqnet scenario`: the default scenario and scenario checking.

use clap::Args;
use daqnet_core::scenario::DEFAULT_SCENARIO_TOML;
use std::path::PathBuf;
use std::process::ExitCode;

/// Print the commented default scenario, or check a scenario file and print it resolved.
#[derive(Args)]
#[command(
    after_help = "Examples:\n  daqnet scenario --print-default > my.toml\n  daqnet scenario scenarios/atlas-2015/switch1.toml --set system.credits_per_node=240"
)]
pub struct ScenarioArgs {
    /// Print the default scenario with a comment on every field.
    #[arg(long, conflicts_with = "file")]
    print_default: bool,
    /// Scenario file to check; printed back with every field resolved.
    file: Option<PathBuf>,
    /// Override a field: dotted.path=value (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
}

/// Runs the verb.
pub fn run(a: ScenarioArgs) -> anyhow::Result<ExitCode> {
    if a.print_default {
        print!("{DEFAULT_SCENARIO_TOML}");
        return Ok(ExitCode::SUCCESS);
    }
    let Some(file) = a.file else {
        anyhow::bail!("give a scenario file to check, or --print-default");
    };
    let s = super::load_scenario(&file, &a.set)?;
    print!("{}", s.to_toml());
    Ok(ExitCode::SUCCESS)
}
