//! Every public packetdrill script of the directories the TCP model is held to reads without
//! an error. The scripts are not in this repository (GPL-2.0): they are read from
//! `PACKETDRILL_DIR` or `../shared/packetdrill` beside the repository; without either the test
//! says so and passes.

use daqnet_conform::model::Outcome;
use daqnet_conform::{scripts_in, Action, Script};
use std::path::{Path, PathBuf};

/// The directories of `gtests/net/tcp` whose scripts apply to the model.
const APPLICABLE: [&str; 7] =
    ["fast_recovery", "fast_retransmit", "limited_transmit", "sack", "slow_start", "cubic", "cwnd_moderation"];

/// packetdrill's `gtests/net/tcp`, or `None` (saying the test is skipped) without its sources.
fn public_tcp_dir() -> Option<PathBuf> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = daqnet_conform::kernel::source(&repo).map(|src| src.join("gtests/net/tcp"));
    if dir.is_none() {
        eprintln!("skipped: no packetdrill scripts (set PACKETDRILL_DIR or put packetdrill in ../shared)");
    }
    dir
}

/// The scripts of the [`APPLICABLE`] directories under `tcp`.
fn applicable(tcp: &Path) -> Vec<PathBuf> {
    APPLICABLE.iter().flat_map(|sub| scripts_in(&tcp.join(sub)).unwrap_or_else(|e| panic!("{sub}: {e}"))).collect()
}

#[test]
fn the_applicable_public_scripts_read_whole() {
    let Some(tcp) = public_tcp_dir() else { return };
    let mut read = 0;
    let mut segments = 0;
    for f in applicable(&tcp) {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let script = Script::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!script.events.is_empty(), "{}: no events", f.display());
        segments += script.events.iter().filter(|e| matches!(e.action, Action::Segment(_))).count();
        read += 1;
    }
    assert!(read >= 30, "only {read} scripts found under {}", tcp.display());
    assert!(segments > 10 * read, "{segments} segments in {read} scripts: lines were skipped");
}

#[test]
fn the_projects_own_scripts_read_whole() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let mut read = 0;
    let gaps = scripts_in(&dir.join("gaps")).expect("crates/conform/scripts/gaps");
    for f in &gaps {
        let text = std::fs::read_to_string(f).expect("a readable script");
        assert!(text.contains("GAP: "), "{}: a gap script says what the model lacks", f.display());
    }
    for f in scripts_in(&dir).expect("crates/conform/scripts").into_iter().chain(gaps) {
        let text = std::fs::read_to_string(&f).expect("a readable script");
        let script = Script::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(text.contains("Pins "), "{}: the header names the kernel function it pins", f.display());
        assert!(script.events.iter().any(|e| matches!(e.action, Action::Segment(_))), "{}", f.display());
        read += 1;
    }
    assert!(read >= 25, "{read} scripts");
}

/// Every project script, proven on the kernel by `tests/kernel.rs`, passes in the TCP model at
/// this kernel's tick (HZ 250) and at upstream's (HZ 1000): the segments the model sends, MSS
/// by MSS, at the script's times with packetdrill's tolerance, and its `tcp_info`. Every script
/// in `gaps/` fails in the model — when one passes, the gap is closed and it moves up.
#[test]
fn the_projects_scripts_pass_in_the_model_and_the_gaps_do_not() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let files = scripts_in(&dir).expect("crates/conform/scripts");
    let mut failed = Vec::new();
    for f in &files {
        let script = Script::parse(&std::fs::read_to_string(f).expect("readable")).expect("parses");
        for hz in [250, 1000] {
            let out = daqnet_conform::model::run(&script, &dir, hz);
            if out != Outcome::Pass {
                failed.push(format!("{} at HZ {hz}: {out:?}", f.file_name().unwrap_or_default().to_string_lossy()));
            }
        }
    }
    for f in scripts_in(&dir.join("gaps")).expect("crates/conform/scripts/gaps") {
        let script = Script::parse(&std::fs::read_to_string(&f).expect("readable")).expect("parses");
        let out = daqnet_conform::model::run(&script, &dir.join("gaps"), 250);
        if !matches!(out, Outcome::Fail { .. }) {
            failed.push(format!("gaps/{}: expected a failure (the gap), got {out:?}", f.display()));
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

/// The expected outcome of every applicable public script in the model at HZ 1000, upstream's
/// tick: pass, unless `public-outcomes.txt` lists it as a failure or unsupported, with the
/// reason. A new failure and an unexpected pass both fail this test; at least 90 % of the
/// scripts the model supports pass.
#[test]
fn the_public_scripts_pass_in_the_model_except_the_listed_ones() {
    let Some(tcp) = public_tcp_dir() else { return };
    let listed = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("public-outcomes.txt"))
        .expect("crates/conform/public-outcomes.txt");
    let expected: std::collections::BTreeMap<&str, &str> = listed
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut w = l.split_whitespace();
            let (outcome, script) = (w.next().unwrap_or_default(), w.next().unwrap_or_default());
            assert!(matches!(outcome, "fail" | "unsupported"), "public-outcomes.txt: `{l}`");
            assert!(w.next().is_some(), "public-outcomes.txt: {script} has no reason");
            (script, outcome)
        })
        .collect();
    let (mut wrong, mut passed, mut supported) = (Vec::new(), 0, 0);
    for f in applicable(&tcp) {
        let name = f.strip_prefix(&tcp).expect("under tcp/").to_string_lossy().into_owned();
        let script = Script::parse(&std::fs::read_to_string(&f).expect("readable")).expect("parses");
        let out = daqnet_conform::model::run(&script, f.parent().expect("a folder"), 1000);
        let got = match &out {
            Outcome::Pass => "pass",
            Outcome::Fail { .. } => "fail",
            Outcome::Unsupported(_) => "unsupported",
        };
        passed += usize::from(got == "pass");
        supported += usize::from(got != "unsupported");
        let want = expected.get(name.as_str()).copied().unwrap_or("pass");
        if got != want {
            wrong.push(format!("{name}: expected {want}, got {out:?}"));
        }
    }
    assert!(wrong.is_empty(), "outcomes differ from public-outcomes.txt:\n{}", wrong.join("\n"));
    assert!(passed * 10 >= supported * 9, "{passed} of {supported} supported scripts pass: below 90 %");
    eprintln!("{passed} of {supported} supported public scripts pass");
}
