//! The `daqnet` command as a user runs it.

mod common;
use common::{daqnet, out_dir, text};

#[test]
fn print_default_is_a_valid_commented_scenario() {
    let o = daqnet(&["scenario", "--print-default"]);
    assert!(o.status.success());
    let t = String::from_utf8(o.stdout).unwrap();
    assert!(t.contains("# readout units"), "commented");
    daqnet_core::scenario::parse_str(&t, "printed", &[]).unwrap();
}

#[test]
fn sim_writes_report_and_per_event_csv() {
    let dir = out_dir("sim");
    let o = daqnet(&[
        "sim",
        "scenarios/incast-micro.toml",
        "--events",
        "20",
        "--per-event",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("latency (ms)"), "summary table printed");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    for key in [
        "substrate",
        "scenario",
        "seed",
        "events_built",
        "events_not_built",
        "duration_s",
        "event_rate_hz",
        "goodput_bps",
        "latency_ms",
        "tcp",
        "switch",
        "wall_s",
        "sim_events_per_s",
    ] {
        assert!(report.get(key).is_some(), "report.json has `{key}`");
    }
    assert_eq!(report["substrate"], "sim");
    assert_eq!(report["events_built"], 20);
    let csv = std::fs::read_to_string(dir.join("events.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 25, "header + 5 warm-up + 20 measured events");
}

#[test]
fn bad_input_is_a_clear_error_not_a_panic() {
    let o = daqnet(&["sim", "scenarios/incast-micro.toml", "--set", "system.credits_per_node=lots"]);
    assert_eq!(o.status.code(), Some(2));
    let t = text(&o);
    assert!(t.contains("scenarios/incast-micro.toml with --set system.credits_per_node=lots"), "{t}");
    assert!(t.contains("field `system.credits_per_node`"), "{t}");
    assert!(!t.contains("panicked"), "{t}");
    let o = daqnet(&["sim", "no/such/file.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("no/such/file.toml: cannot read"), "{}", text(&o));
}
