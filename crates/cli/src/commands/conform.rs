//! `daqnet conform SCRIPT.pkt…`: packetdrill scripts against the simulator's TCP model.

use clap::builder::TypedValueParser;
use clap::Args;
use daqnet_conform::model::{self, Outcome};
use daqnet_conform::Script;
use std::path::PathBuf;
use std::process::ExitCode;

/// Run packetdrill scripts against the simulator's TCP model, on a virtual clock.
///
/// The socket under test is the model's TCP endpoint: the script's handshake (passive or
/// active) seeds its RTT, MSS, SACK and timestamps, its writes feed the sender and its reads
/// drain the receiver, its injected segments are what the endpoint hears, and its timers fire
/// at the kernel tick of --hz. As packetdrill does, each `>` line takes the next segment the
/// endpoint sent and compares it, MSS by MSS (a TSO segment is its MSS pieces), with the line:
/// sequence range, ACK, SACK blocks and time, with packetdrill's tolerance (4 ms or 12.5 % of
/// the time since the previous event). `%{ assert tcpi_… }%` lines are read against its state.
/// Shell lines and socket options set what the model has (tcp_recovery, tcp_early_retrans,
/// tcp_reordering, slow start after idle, the congestion control, …); one that asks for a
/// behaviour the model lacks makes the script UNSUPPORTED, named. Prints one line per script
/// and a total; exits 1 if any failed. The project's own scripts, each proven on this kernel,
/// are in crates/conform/scripts; how the public ones fare is in
/// crates/conform/public-outcomes.txt.
#[derive(Args)]
#[command(after_help = "Examples:\n  \
daqnet conform crates/conform/scripts/rto-backoff.pkt crates/conform/scripts/tlp-one-out.pkt\n  \
daqnet conform --hz 250 crates/conform/scripts/rto-backoff.pkt   # this machine's kernel tick\n\
Every script of the project: daqnet conform crates/conform/scripts/*.pkt\n\
Public scripts, in place: cd ../shared/packetdrill/gtests/net/tcp; daqnet conform sack/*.pkt")]
pub struct ConformArgs {
    /// packetdrill scripts (their shell commands are read relative to each script's folder).
    #[arg(required = true)]
    scripts: Vec<PathBuf>,
    /// Kernel tick the model's timers run on, Hz (upstream's scripts assume 1000; a kernel
    /// built with HZ 250 rounds its timers to 4 ms ticks and its timer wheel's slots).
    #[arg(long, default_value_t = 1000, value_parser = clap::builder::PossibleValuesParser::new(["100", "250", "300", "1000"]).map(|s| s.parse::<u32>().expect("listed values are numbers")))]
    hz: u32,
}

/// Runs the verb.
pub fn run(a: ConformArgs) -> anyhow::Result<ExitCode> {
    let (mut passed, mut failed, mut unsupported) = (0, 0, 0);
    for path in &a.scripts {
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        let shown = path.display();
        let outcome = match Script::parse(&text) {
            Ok(script) => model::run(&script, path.parent().unwrap_or(std::path::Path::new(".")), a.hz),
            Err(e) => Outcome::Unsupported(format!("cannot read the script: {e}")),
        };
        match outcome {
            Outcome::Pass => {
                passed += 1;
                println!("PASS {shown}");
            }
            Outcome::Fail { line, what } => {
                failed += 1;
                println!("FAIL {shown}:{line}: {what}");
            }
            Outcome::Unsupported(what) => {
                unsupported += 1;
                println!("UNSUPPORTED {shown}: {what}");
            }
        }
    }
    println!("{passed} passed, {failed} failed, {unsupported} unsupported");
    Ok(if failed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
