//! `daqnet switch`: run the lossless software switch on this namespace's interfaces.

use clap::Args;
use daqnet_switch::SwitchConfig;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Arguments of `daqnet switch`.
#[derive(Args)]
#[command(after_help = "daqnet's lossless software switch ([LOSSLESS] §III), on interfaces of the current network \
namespace until SIGTERM or SIGINT: one AF_PACKET socket per port with a TPACKET_V3 receive ring, a \
queue (daqring) per data collector bounded in bytes, round-robin service of each port's queues with \
an optional per-poll burst limit, and pacing at each port's line rate. Frames are dropped only when a \
queue's byte cap is reached, and counted. Once every port is open it prints `daqnet switch: ready on N \
ports`; on exit it writes its statistics as JSON. Needs CAP_NET_RAW (root).\n\n\
`daqnet testbed run` starts it by itself when the scenario says [network.switch] kind = \"daqring\", \
with the configuration it writes to OUT/switch.json; run it by hand only to experiment.\n\n\
Example (inside the switch namespace of a testbed that is up):\n  \
ip netns exec daqnet-NAME-sw daqnet switch out/switch.json --report stats.json")]
pub struct SwitchArgs {
    /// The switch configuration (JSON: ports, routes, collectors, limits).
    pub config: PathBuf,
    /// Write the statistics here on exit (default: standard output).
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// Runs `daqnet switch`.
pub fn run(a: SwitchArgs) -> anyhow::Result<ExitCode> {
    let cfg = SwitchConfig::load(&a.config)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let ports = cfg.ports.len();
    let report = daqnet_switch::run::run(&cfg, &stop, || {
        use std::io::Write;
        println!("daqnet switch: ready on {ports} ports");
        let _ = std::io::stdout().flush();
    })?;
    let text = serde_json::to_string_pretty(&report)?;
    match &a.report {
        Some(p) => daqnet_core::output::write_whole(p, (text + "\n").as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
        None => println!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
