//! Every public packetdrill script of the directories the TCP model is held to reads without
//! an error. The scripts are not in this repository (GPL-2.0): they are read from
//! `PACKETDRILL_DIR` or `../shared/packetdrill` beside the repository; without either the test
//! says so and passes.

use daqnet_conform::{scripts_in, Action, Script};
use std::path::PathBuf;

/// The directories of `gtests/net/tcp` whose scripts apply to the model.
const APPLICABLE: [&str; 7] =
    ["fast_recovery", "fast_retransmit", "limited_transmit", "sack", "slow_start", "cubic", "cwnd_moderation"];

#[test]
fn the_applicable_public_scripts_read_whole() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(dir) = daqnet_conform::kernel::source(&repo) else {
        eprintln!("skipped: no packetdrill scripts (set PACKETDRILL_DIR or put packetdrill in ../shared)");
        return;
    };
    let mut read = 0;
    let mut segments = 0;
    for sub in APPLICABLE {
        let files = scripts_in(&dir.join("gtests/net/tcp").join(sub)).unwrap_or_else(|e| panic!("{sub}: {e}"));
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let script = Script::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            assert!(!script.events.is_empty(), "{}: no events", f.display());
            segments += script.events.iter().filter(|e| matches!(e.action, Action::Segment(_))).count();
            read += 1;
        }
    }
    assert!(read >= 30, "only {read} scripts found under {}", dir.display());
    assert!(segments > 10 * read, "{segments} segments in {read} scripts: lines were skipped");
}

#[test]
fn the_projects_own_scripts_read_whole() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let mut read = 0;
    for f in scripts_in(&dir).expect("crates/conform/scripts") {
        let text = std::fs::read_to_string(&f).expect("a readable script");
        let script = Script::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(text.contains("Pins "), "{}: the header names the kernel function it pins", f.display());
        assert!(script.events.iter().any(|e| matches!(e.action, Action::Segment(_))), "{}", f.display());
        read += 1;
    }
    assert!(read >= 2, "{read} scripts");
}

/// Every project script, proven on the kernel by `tests/kernel.rs`, passes in the TCP model at
/// this kernel's tick (HZ 250): the segments the model's sender sends, MSS by MSS, at the
/// script's times with packetdrill's tolerance, and its `tcp_info`.
#[test]
fn the_projects_scripts_pass_in_the_model() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let files = scripts_in(&dir).expect("crates/conform/scripts");
    let mut failed = Vec::new();
    for f in &files {
        let script = Script::parse(&std::fs::read_to_string(f).expect("readable")).expect("parses");
        let out = daqnet_conform::model::run(&script, &dir, 250);
        if out != daqnet_conform::model::Outcome::Pass {
            failed.push(format!("{}: {out:?}", f.file_name().unwrap_or_default().to_string_lossy()));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} scripts do not pass in the model:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
}
