//! Same scenario and seed → the same report, apart from its wall-clock fields.

use daqnet_core::scenario::load;
use daqnet_sim::{simulate, SimOptions};
use std::path::Path;

/// A report as JSON without its wall-clock fields, which differ from run to run.
fn timeless(report: &daqnet_core::report::RunReport) -> serde_json::Value {
    let mut v = serde_json::to_value(report).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("wall_s");
    o.remove("sim_events_per_s");
    v
}

fn report_json(seed: u64) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/atlas-2015/switch1.toml");
    // Credits well past the incast onset, so drops, recoveries and timeouts all happen.
    let sets = ["system.credits_per_node=1200", "run.events=300", "run.warmup_events=100"].map(String::from).to_vec();
    let mut s = load(&path, &sets).unwrap();
    s.run.seed = seed;
    s.system.supervisor.policy = daqnet_core::scenario::Policy::Random;
    let out = simulate(&s, "switch1", SimOptions::default());
    assert!(out.report.tcp.timeouts > 0 && out.report.switch.drops > 0, "the run exercises loss recovery");
    timeless(&out.report)
}

#[test]
fn same_scenario_and_seed_give_identical_reports() {
    let a = report_json(7);
    let b = report_json(7);
    assert_eq!(a, b);
    let c = report_json(8);
    assert_ne!(a["latency_ms"], c["latency_ms"], "a different seed gives a different run");
}

/// The same holds on a parallel leaf-spine of shallow bridges (drops, timeouts) with a spine
/// failing mid-run: the plan, the controller's re-plan and the faults' records are
/// deterministic too.
#[test]
fn a_fabric_with_a_failure_gives_identical_reports() {
    use daqnet_fabric::Element;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fabric/prototype.toml");
    let bridge = r#"{kind="bridge",buffer={scheme="dedicated",port_bytes="500kB"}}"#;
    let sets: Vec<String> = ["leaf", "spine", "rack"]
        .iter()
        .map(|t| format!("network.fabric.{t}={bridge}"))
        .chain(["run.events=400".to_string(), "network.fabric.assignment=ecmp".to_string()])
        .collect();
    let s = load(&path, &sets).unwrap();
    let run = || {
        let faults =
            vec![daqnet_sim::FaultPlan { element: "p1-spine0".parse::<Element>().unwrap(), at_ns: 20_000_000 }];
        let out = simulate(&s, "fabric", SimOptions { faults, ..Default::default() });
        assert!(out.report.switch.drops > 0 && out.report.fabric.as_ref().unwrap().faults[0].flows_moved > 0);
        timeless(&out.report)
    };
    assert_eq!(run(), run());
}

/// And with edge hosts slower than their links, NICs dropping and daqrings rate-limited on one
/// tier and unlimited on the others: the hops spliced into the fabric keep the order.
#[test]
fn edge_hosts_and_rate_limited_daqrings_give_identical_reports() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fabric/prototype-pcie.toml");
    let sets = ["run.events=300", "network.fabric.leaf.daqring.poll_cycle_ns=50us"].map(String::from);
    let s = load(&path, &sets).unwrap();
    let run = || {
        let out = simulate(&s, "edge", SimOptions::default());
        assert!(out.report.edge.as_ref().unwrap().drops > 0, "the NICs drop at this cycle");
        timeless(&out.report)
    };
    assert_eq!(run(), run());
}

/// A connection's state is made when it is first used, as the handshake would have left it:
/// a run that makes every connection at the start (a trace of every sender samples them all
/// at 0) is the same run as one that makes only those it uses, when it uses them.
#[test]
fn connections_made_on_first_use_give_the_run_of_connections_made_up_front() {
    use daqnet_core::trace::{PortSample, TcpSample, TraceSink, TraceSpec};
    struct Discard;
    impl TraceSink for Discard {
        fn names(&mut self, _: &[String], _: &[String]) {}
        fn batch(&mut self, _: &[PortSample], _: &[TcpSample]) {}
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/bench/scale.toml");
    // 20 nodes, 6 events in all: most node's connections never carry an event.
    let sets = ["system.readout_units=20", "system.nodes=20", "run.events=5", "run.warmup_events=1"].map(String::from);
    let s = load(&path, &sets).unwrap();
    let report = |out: daqnet_sim::SimOutput| {
        let work = out.report.sim_work.clone().unwrap();
        let mut v = serde_json::to_value(&out.report).unwrap();
        let o = v.as_object_mut().unwrap();
        for k in ["wall_s", "sim_events_per_s", "sim_work"] {
            o.remove(k);
        }
        (v, work.connections, work.connections_open, work.scheduler_events)
    };
    let lazy = report(simulate(&s, "scale", SimOptions::default()));
    let spec: TraceSpec = "cwnd=*->*,every=1s".parse().unwrap();
    let eager = report(simulate(&s, "scale", SimOptions { trace: Some((spec, &mut Discard)), ..Default::default() }));
    assert_eq!((lazy.1, lazy.2), (400, 6 * 20), "only the six nodes given an event use their connections");
    assert_eq!((eager.1, eager.2), (400, 400), "the trace made every connection at the start");
    assert_eq!((&lazy.0, lazy.3), (&eager.0, eager.3), "the same run, to the scheduler event");
}

/// And under flow control: pause frames on a two-tier network (ATLAS Switch 1 past its incast
/// onset), where every port sends from a gate and pauses cross the links as events; also
/// under PFC with a shared rack buffer.
#[test]
fn flow_control_gives_identical_reports() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/atlas-2015/switch1.toml");
    for mode in ["pause", "pfc"] {
        let sets = [
            "system.credits_per_node=1200",
            "run.events=200",
            "run.warmup_events=50",
            &format!("network.flow_control.mode={mode}"),
            r#"network.rack_switch.buffer={scheme="shared",pool_bytes="4MB",ports_per_pool=8,port_cap_bytes="600kB"}"#,
        ]
        .map(String::from);
        let s = load(&path, &sets).unwrap();
        let run = || {
            let out = simulate(&s, "flow", SimOptions::default());
            assert!(out.report.flow_control.as_ref().unwrap().pause_frames > 0, "{mode}: links pause");
            timeless(&out.report)
        };
        assert_eq!(run(), run(), "{mode}");
    }
}

/// Same scenario and seed with queue pairs in place of TCP (`[network.rc]`), over PFC and over
/// credit-based links, under DAQPIPE and the event builder: identical reports.
#[test]
fn the_message_transport_gives_identical_reports() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let runs = [
        ("daqpipe/edr.toml", vec!["pipe.nodes=8", "run.events=100", "network.mtu_bytes=4200"]),
        ("atlas-2015/switch1.toml", vec!["system.credits_per_node=1200", "run.events=200", "run.warmup_events=50"]),
    ];
    for (file, sets) in runs {
        for mode in ["pfc", "credit"] {
            let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            sets.push(format!("network.flow_control={{mode=\"{mode}\"}}"));
            sets.push("network.rc={}".into());
            let s = load(&dir.join(file), &sets).unwrap();
            let run = || {
                let out = simulate(&s, "rc", SimOptions::default());
                assert!(out.report.rc.as_ref().unwrap().data_packets > 0, "{file} {mode}: queue pairs send");
                timeless(&out.report)
            };
            assert_eq!(run(), run(), "{file} {mode}");
        }
    }
}
