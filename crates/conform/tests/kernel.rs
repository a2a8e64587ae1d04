//! The project's own packetdrill scripts (`crates/conform/scripts/` and its `gaps/`) against the
//! live kernel:
//! every script passes five runs out of five (a run late beyond packetdrill's timing tolerance,
//! the machine not keeping pace, is run again, twice at most), so what the TCP model is held to
//! is first shown to be what Linux does. Builds packetdrill from `PACKETDRILL_DIR` or `../shared/packetdrill`
//! into `target/packetdrill` (installing bison and flex with `scripts/packetdrill-deps.sh`);
//! each run is in a network namespace of its own. Skips, saying why, without root,
//! `/dev/net/tun` or packetdrill's sources.

use daqnet_conform::kernel::{source, Packetdrill};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Runs a script gets; each is bounded by packetdrill's own timeouts well below this.
const LIMIT: Duration = Duration::from_secs(60);

/// Runs of each script, all of which must pass.
const RUNS: usize = 5;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            .is_some_and(|uid| uid == "0")
    })
}

/// The project's scripts: those the model passes, and those that show a gap in it (`gaps/`),
/// each shown to be what Linux does.
fn scripts() -> Vec<PathBuf> {
    let dir = repo().join("crates/conform/scripts");
    let mut all = daqnet_conform::scripts_in(&dir).expect("crates/conform/scripts");
    all.extend(daqnet_conform::scripts_in(&dir.join("gaps")).expect("crates/conform/scripts/gaps"));
    all
}

#[test]
fn every_project_script_passes_on_this_kernel_five_times_out_of_five() {
    let why_not = if !is_root() {
        Some("not root (packetdrill opens a tun device and a network namespace)".to_string())
    } else if !Path::new("/dev/net/tun").exists() {
        Some("no /dev/net/tun".into())
    } else {
        source(&repo())
            .is_none()
            .then(|| "no packetdrill sources (set PACKETDRILL_DIR or put them in ../shared)".into())
    };
    if let Some(why) = why_not {
        eprintln!("skipped: {why}");
        return;
    }
    let deps =
        Command::new(repo().join("scripts/packetdrill-deps.sh")).status().expect("scripts/packetdrill-deps.sh runs");
    assert!(deps.success(), "scripts/packetdrill-deps.sh failed");
    let src = source(&repo()).expect("checked above");
    let pd = Packetdrill::build(&src, &repo().join("target/packetdrill")).unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    let all = scripts();
    assert!(!all.is_empty(), "no scripts in crates/conform/scripts");
    for script in &all {
        let name = script.file_name().unwrap_or_default().to_string_lossy().into_owned();
        for run in 1..=RUNS {
            let mut out = pd.run(script, LIMIT);
            // Late beyond packetdrill's tolerance is the machine not keeping pace (a busy CI
            // run had an ACK 5.3 ms late against 4 ms allowed), not the kernel's TCP: such a run
            // is run again, twice at most; any other failure stands.
            for _ in 0..2 {
                if out.passed || !out.output.contains("timing error") {
                    break;
                }
                eprintln!("{name}, run {run}: late beyond packetdrill's tolerance; once more");
                out = pd.run(script, LIMIT);
            }
            if !out.passed {
                failures.push(format!("{name}, run {run} of {RUNS}:\n{}", out.output.trim_end()));
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scripts failed on this kernel:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
    eprintln!("{} scripts passed {RUNS} times each", all.len());
}
