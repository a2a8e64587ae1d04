//! Scenario loading: defaults, overrides, and errors that name file, field and value.

use daqnet_core::scenario::{
    parse_str, BufferConfig, Credits, EcnMarking, Policy, Rate, Topology, DEFAULT_SCENARIO_TOML,
};
use daqnet_core::Scenario;

fn err(text: &str, sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_str(text, "my.toml", &sets).unwrap_err().to_string()
}

#[test]
fn printed_default_is_the_default() {
    let parsed = parse_str(DEFAULT_SCENARIO_TOML, "default", &[]).unwrap();
    assert_eq!(parsed, Scenario::default().with_defaults());
}

/// The commented-out `[section]` of the printed default, uncommented, on a star.
fn printed_section(section: &str) -> Scenario {
    let block: String = DEFAULT_SCENARIO_TOML
        .lines()
        .skip_while(|l| *l != format!("# [{section}]"))
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("# "))
        .filter(|l| !l.starts_with(' '))
        .map(|l| format!("{l}\n"))
        .collect();
    parse_str(&format!("[network]\ntopology = \"star\"\n{block}"), section, &[]).unwrap()
}

#[test]
fn the_printed_farm_and_pipe_sections_uncommented_are_their_defaults() {
    assert_eq!(printed_section("farm").farm, Some(daqnet_core::scenario::Farm::default()));
    assert_eq!(printed_section("pipe").pipe, Some(daqnet_core::scenario::Pipe::default()));
}

#[test]
fn farm_fields_are_checked_by_name() {
    let e = err("[network]\ntopology = \"star\"\n[farm]\nimplementation = \"v2\"\ndispatch = \"push\"\n", &[]);
    assert!(e.contains("farm.dispatch") && e.contains("\"tokens\""), "{e}");
    let e = err("[farm]\n", &[]);
    assert!(e.contains("network.topology"), "{e}");
    let e = err("[network]\ntopology = \"star\"\n[farm]\naccept_fraction = 2\nworkers = 0\n", &[]);
    assert!(e.contains("farm.accept_fraction") && e.contains("farm.workers"), "{e}");
}

#[test]
fn empty_file_is_the_default_two_tier_system() {
    let s = parse_str("", "empty", &[]).unwrap();
    assert_eq!(s.network.topology, Topology::TwoTier);
    assert_eq!(s.system.readout_units, 160);
    assert!(s.network.core.is_some());
}

#[test]
fn set_overrides_any_field_and_accepts_bare_words_and_units() {
    let sets: Vec<String> = [
        "system.credits_per_node=240",
        "system.supervisor.policy=node_round_robin",
        "system.supervisor.rate_hz=unbounded",
        "network.node_link_bps=10G",
        "network.rack_switch.buffer={ scheme = \"shared\", pool_bytes = \"10MB\", ports_per_pool = 32, port_cap_bytes = \"8MB\" }",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let s = parse_str("", "x", &sets).unwrap();
    assert_eq!(s.system.credits_per_node, Credits::Limited(240));
    assert_eq!(s.system.supervisor.policy, Policy::NodeRoundRobin);
    assert_eq!(s.system.supervisor.rate_hz, Rate::Unbounded);
    assert_eq!(s.network.node_link_bps, 10_000_000_000);
    assert_eq!(
        s.network.rack_switch.unwrap().buffer,
        BufferConfig::Shared { pool_bytes: 10_000_000, ports_per_pool: 32, port_cap_bytes: 8_000_000 }
    );
}

#[test]
fn unknown_field_names_file_and_field() {
    let e = err("[system]\ncredits = 3\n", &[]);
    assert!(e.starts_with("my.toml:2: field `system.credits`: unknown field `credits`"), "the line too: {e}");
    assert!(e.contains("credits_per_node"), "lists what is allowed: {e}");
}

#[test]
fn wrong_type_names_field_and_value() {
    let e = err("[system]\nnodes = \"many\"\n", &[]);
    assert!(e.contains("field `system.nodes`"), "{e}");
    assert!(e.contains("\"many\""), "{e}");
}

#[test]
fn bad_set_value_says_it_came_from_set() {
    let e = err("", &["system.supervisor.policy=fastest"]);
    assert!(e.contains("--set system.supervisor.policy=fastest"), "{e}");
    assert!(e.contains("field `system.supervisor.policy`"), "{e}");
    assert!(e.contains("fcfs"), "lists the policies: {e}");
}

#[test]
fn set_into_a_value_is_an_error() {
    let e = err("[system]\nnodes = 3\n", &["system.nodes.count=3"]);
    assert!(e.contains("`system.nodes` is a value, not a table"), "{e}");
    let e = err("", &["system.nodes.count=3"]);
    assert!(e.contains("field `system.nodes`: invalid type: map, expected u32"), "{e}");
    let e = err("", &["no_equals_sign"]);
    assert!(e.contains("dotted.path=value"), "{e}");
}

#[test]
fn zero_rates_and_inconsistent_counts_are_errors() {
    let e = err("[network]\nnode_link_bps = 0\n[system.supervisor]\nrate_hz = 0\n", &[]);
    assert!(e.contains("field `network.node_link_bps`: is 0"), "{e}");
    assert!(e.contains("field `system.supervisor.rate_hz`: is 0"), "{e}");
    let e = err("[system]\ncredits_per_node = 10\nfragments_per_unit = 12\n", &[]);
    assert!(
        e.contains("field `system.credits_per_node`: is 10; must be at least system.fragments_per_unit (12)"),
        "{e}"
    );
    let e = err("[network]\ntopology = \"star\"\n[network.core]\nrouters = 2\nbuffer = { scheme = \"deep\" }\n", &[]);
    assert!(e.contains("field `network.core`: is set but network.topology = \"star\""), "{e}");
    let e = err("[system]\ncollect_fraction = 1.5\n", &[]);
    assert!(e.contains("field `system.collect_fraction`: is 1.5; must be in (0, 1]"), "{e}");
}

#[test]
fn syntax_errors_name_the_file() {
    let e = err("[system\n", &[]);
    assert!(e.starts_with("my.toml: not valid TOML"), "{e}");
}

#[test]
fn unknown_buffer_scheme_lists_the_schemes() {
    let e = err("[network.rack_switch]\nhosts = 4\nuplink_bps = 1e10\nbuffer = { scheme = \"magic\" }\n", &[]);
    assert!(e.contains("network.rack_switch.buffer"), "{e}");
    assert!(e.contains("dedicated") && e.contains("shared") && e.contains("deep"), "{e}");
}

#[test]
fn real_run_limits_are_checked_only_for_real_runs() {
    // A 10 MB fragment: fine to simulate, too big for the default frame and buffer limits.
    let big = ["system.fragment_size.bytes=10MB", "system.readout_units=2", "system.nodes=1"];
    let sc = parse_str("", "t", &big.map(String::from)).expect("the simulator accepts it");
    let fields: Vec<String> = sc.run_problems().into_iter().map(|(f, _)| f).collect();
    assert_eq!(fields, ["deploy.max_frame_bytes", "deploy.readout_buffer_bytes"]);
    assert!(Scenario::default().with_defaults().run_problems().is_empty());
    // Deploy fields that are wrong for any substrate are plain validation errors.
    let e = err("", &["deploy.supervisor=nowhere"]);
    assert!(e.contains("deploy.supervisor") && e.contains("\"nowhere\""), "{e}");
    let e = err("", &["deploy.readouts=[\"127.0.0.1:1\"]"]);
    assert!(e.contains("one per readout unit (160)"), "{e}");
    let e = err("", &["deploy.peer_timeout_ms=100"]);
    assert!(e.contains("at least twice deploy.heartbeat_ms"), "{e}");
}

#[test]
fn durations_take_units_and_semantic_errors_keep_where_the_value_came_from() {
    let s = parse_str("[network.tcp]\nmin_rto_ns = \"5ms\"\n", "my.toml", &["network.tcp.delayed_ack_ns=2 ms".into()])
        .unwrap();
    assert_eq!((s.network.tcp.min_rto_ns, s.network.tcp.delayed_ack_ns), (5_000_000, 2_000_000));
    let e = err("[system]\nfragments_per_unit = 12\n", &["system.credits_per_node=5"]);
    assert!(e.contains("my.toml with --set system.credits_per_node=5: field `system.credits_per_node`: is 5"), "{e}");
    let e = err("[system]\nfragments_per_unit = 12\ncredits_per_node = 5\n", &[]);
    assert!(e.starts_with("my.toml:3: field `system.credits_per_node`"), "{e}");
    let e = err("[network.rack_switch]\nbuffer = { scheme = \"dedicated\", port_bytes = \"big\" }\n", &[]);
    assert!(e.starts_with("my.toml:2: field `network.rack_switch.buffer.port_bytes`: `big` is not a size"), "{e}");
    let e = err("", &["system.credits_per_node=-5"]);
    assert!(e.contains("credits are a whole number from system.fragments_per_unit"), "{e}");
}

/// The printed default's fabric, uncommented, on the default system's 160 readout units and
/// 39 nodes re-sized to fit it; and each inconsistent size named by its field.
#[test]
fn fabric_sizes_are_checked_by_name() {
    let block: String = DEFAULT_SCENARIO_TOML
        .lines()
        .skip_while(|l| *l != "# [network.fabric]")
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("# "))
        .filter(|l| !l.starts_with(' '))
        .map(|l| format!("{l}\n"))
        .collect();
    let text =
        format!("[system]\nreadout_units = 160\nnodes = 40\n[network]\ntopology = \"parallel_leaf_spine\"\n{block}");
    let s = parse_str(&text, "fabric", &[]).unwrap();
    let f = s.network.fabric.as_ref().unwrap();
    assert_eq!((f.pods, f.planes, f.spines_per_plane, f.readout_planes(), f.rack_planes()), (4, 2, 2, 2, 2));

    let bad = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        parse_str(&text, "my.toml", &sets).unwrap_err().to_string()
    };
    let e = bad(&["system.readout_units=150"]);
    assert!(e.contains("field `network.fabric.readout_per_pod`: is 40: 4 pods × 40 = 160 readout units, but system.readout_units is 150"), "{e}");
    let e = bad(&["system.nodes=39"]);
    assert!(e.contains("field `network.fabric.nodes_per_rack`") && e.contains("system.nodes is 39"), "{e}");
    let e = bad(&["network.fabric.spines_per_plane=0"]);
    assert!(e.contains("field `network.fabric.spines_per_plane`: is 0"), "{e}");
    let e = bad(&["network.fabric.rack_uplinks=3"]);
    assert!(e.contains("field `network.fabric.rack_uplinks`: is 3; must be in 1 ..= network.fabric.planes (2)"), "{e}");
    let e = bad(&["network.fabric.rack_uplinks=1", "network.fabric.readout_uplinks=1"]);
    assert!(e.contains("share no plane"), "{e}");
    let e = parse_str("[network]\ntopology = \"parallel_leaf_spine\"\n", "my.toml", &[]).unwrap_err().to_string();
    assert!(e.contains("field `network.fabric`: is missing"), "{e}");
    let e = bad(&["network.topology=star"]);
    assert!(e.contains("field `network.fabric`: is set but network.topology = \"star\" does not use it"), "{e}");
}

#[test]
fn a_sub_farm_fed_by_an_event_builder_needs_version_1_and_a_recording_that_holds_the_run() {
    let dir = std::env::temp_dir().join(format!("daqnet-from-builder-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("events.csv");
    let rows: String = (0..30).map(|k| format!("{k},0,{},0,0,{},0.1,32000,true\n", k % 3, 1000 * k)).collect();
    std::fs::write(&csv, format!("event,pu,node,assigned_ns,start_ns,done_ns,latency_ms,bytes,measured\n{rows}"))
        .unwrap();
    let text = |implementation: &str, node: u32| {
        format!(
            "[network]\ntopology = \"star\"\n[farm]\nimplementation = \"{implementation}\"\n\
             from_builder = {{ events = \"{}\", node = {node} }}\n[run]\nevents = 5\nwarmup_events = 5\n",
            csv.display()
        )
    };
    let s = parse_str(&text("v1", 2), "my.toml", &[]).unwrap();
    assert_eq!(s.farm.unwrap().from_builder.unwrap().events, csv, "an absolute path stays as it is");

    let e = err(&text("v2", 2), &[]);
    assert!(e.contains("my.toml:5: field `farm.from_builder`: feeds the SFC's event queue, which only"), "{e}");
    let e = err(&text("v1", 2), &["farm.source_rate_hz=100"]);
    assert!(e.contains("field `farm.source_rate_hz`: is 100 Hz, but farm.from_builder sets when"), "{e}");
    let e = err(&text("v1", 1), &["run.events=6"]);
    assert!(e.contains("holds 10 events built at node 1, but the run needs 11"), "{e}");
    let e = err(&text("v1", 3), &[]);
    assert!(e.contains("has no event built at node 3 (its nodes: 0 ..= 2)"), "{e}");
    let e = err(&text("v1", 0), &["farm.from_builder.events=no/such.csv"]);
    assert!(
        e.contains("field `farm.from_builder.events`: cannot read /") && e.contains("no/such.csv: No such file"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_polling_cycle_needs_a_burst_and_an_edge_bus_a_buffer_for_a_frame() {
    let star = "[network]\ntopology = \"star\"\n";
    let e = err(star, &["network.switch.kind=daqring", "network.switch.daqring.poll_cycle_ns=100us"]);
    assert!(e.contains("field `network.switch.daqring.poll_cycle_ns`: is 100000 ns, but burst_frames is 0"), "{e}");
    let e = err(star, &["network.edge.bus_bps=8G", "network.edge.nic_buffer_bytes=1kB"]);
    assert!(e.contains("field `network.edge.nic_buffer_bytes`: is 1000; must hold at least one full frame"), "{e}");
}

#[test]
fn a_host_cpu_is_checked_field_by_field() {
    let star = "[network]\ntopology = \"star\"\n";
    let e = err(star, &["network.host_cpu.cores=0", "network.host_cpu.ring_frames=0"]);
    assert!(e.contains("field `network.host_cpu.cores`: is 0; must be 1 ..= 1024"), "{e}");
    assert!(e.contains("field `network.host_cpu.ring_frames`: is 0; must be at least 1"), "{e}");
    let e = err(star, &["network.host_cpu.coalesce_frames=0"]);
    assert!(e.contains("field `network.host_cpu.coalesce_frames`: is 0; must be at least 1"), "{e}");
    let e = err(star, &["network.host_cpu.hosts=[\"node99\"]"]);
    assert!(e.contains("field `network.host_cpu.hosts`: names `node99`, which is not a host here"), "{e}");
    let e = err(star, &["network.host_cpu.steering=\"spread\""]);
    assert!(e.contains("network.host_cpu.steering") && e.contains("round_robin"), "{e}");
    let e = err(star, &["network.host_cpu.per_frame_ns=2us", "network.flow_control.mode=\"pause\""]);
    assert!(e.contains("field `network.host_cpu`: is set with [network.flow_control]"), "{e}");
    let e = err(star, &["network.switch.cpu={ per_frame_ns = \"1us\", hosts = [\"node0\"] }"]);
    assert!(e.contains("field `network.switch.cpu.hosts`: names `node0`; the switch's cores are its own"), "{e}");
    let sc = parse_str(star, "ok", &["network.host_cpu.per_frame_ns=2us".into()]).unwrap();
    let cpu = sc.network.host_cpu.expect("set");
    assert_eq!((cpu.per_frame_ns, cpu.cores, cpu.coalesce_frames, cpu.ring_frames), (2000, 1, 1, 256));
    assert_eq!(cpu.frame_ps(1518), 2_000_000, "no cost per byte by default");
}

#[test]
fn ecn_marking_is_checked_by_name_and_dctcp_always_uses_ecn() {
    let e = err("[network.ecn]\nmarking = \"step\"\n", &[]);
    assert!(e.contains("needs one of `threshold_bytes` and `threshold_packets`"), "{e}");
    let e = err("[network.ecn]\nmarking = \"step\"\nthreshold_bytes = 1\nthreshold_packets = 2\n", &[]);
    assert!(e.contains("needs one of"), "both: {e}");
    let e = err("[network.ecn]\nmarking = \"step\"\nthreshold_bytes = 1\nmax_probability = 0.1\n", &[]);
    assert!(e.contains("does not take `max_probability`; it takes threshold_bytes, threshold_packets"), "{e}");
    let e = err(
        "[network.ecn]\nmarking = \"red\"\nmin_bytes = \"30kB\"\nmax_bytes = \"20kB\"\nmax_probability = 1.5\n",
        &[],
    );
    assert!(e.contains("network.ecn.max_bytes") && e.contains("network.ecn.max_probability"), "{e}");
    let e = err("[network.ecn]\nmarking = \"wred\"\n", &[]);
    assert!(e.contains("step") && e.contains("red"), "the markings are listed: {e}");
    let s = parse_str("[network.ecn]\nmarking = \"step\"\nthreshold_bytes = \"30kB\"\n", "my.toml", &[]).unwrap();
    assert_eq!(s.network.ecn, Some(EcnMarking::Step { threshold_bytes: Some(30_000), threshold_packets: None }));
    let s = parse_str("", "my.toml", &["network.tcp.congestion_control=dctcp".to_string()]).unwrap();
    assert!(s.network.tcp.uses_ecn() && !s.network.tcp.ecn);
    assert!(!s.to_toml().contains("ecn = false"), "off, ECN leaves the resolved scenario as it was");
}

#[test]
fn flow_control_refuses_a_buffer_or_a_headroom_that_cannot_hold_what_arrives_after_a_pause() {
    // 10 Gb/s, 2 µs of cable, MTU 1500: 2 × 2500 + 3 × 1538 + 84 = 9698 bytes of headroom, and
    // a frame below XOFF: 11,236.
    let star = "[network]\ntopology = \"star\"\nreadout_link_bps = \"10G\"\nnode_link_bps = \"10G\"\n\
                link_delay_ns = 2000\n[network.flow_control]\nmode = \"pause\"\n";
    let e = err(star, &["network.switch.buffer.port_bytes=11235"]);
    assert!(
        e.contains(
            "field `network.switch.buffer.port_bytes`: is 11235; with [network.flow_control] a port's buffer \
                    holds its headroom (9698 bytes for a 10000000000 bit/s link) and at least a full frame below \
                    XOFF: at least 11236"
        ),
        "{e}"
    );
    assert!(parse_str(star, "ok", &["network.switch.buffer.port_bytes=11236".into()]).is_ok());
    let e = err(star, &["network.flow_control.headroom_bytes=9697"]);
    assert!(e.contains("field `network.flow_control.headroom_bytes`: is 9697; a 10000000000 bit/s link with 2000 ns of cable needs at least 9698"), "{e}");
    let e = err(star, &["network.flow_control.mode=\"xon\""]);
    assert!(e.contains("network.flow_control") && e.contains("pause") && e.contains("pfc"), "{e}");
    let e = err(star, &["network.flow_control.data_priority=8"]);
    assert!(e.contains("field `network.flow_control.data_priority`: is 8; an 802.1Q priority is 0 to 7"), "{e}");
    // The edge NIC of a slow collector is a receiver too.
    let e = err(star, &["network.edge.bus_bps=2G", "network.edge.nic_buffer_bytes=8kB"]);
    assert!(e.contains("field `network.edge.nic_buffer_bytes`: is 8000; with [network.flow_control]"), "{e}");
    let e = err(
        star,
        &["network.edge.bus_bps=2G", "network.edge.nic_buffer_bytes=64kB", "network.edge.hosts=[\"node99\"]"],
    );
    assert!(
        e.contains("field `network.edge.hosts`: names `node99`, which is not a host here; the hosts are ru0 … node"),
        "{e}"
    );
}

#[test]
fn queue_pairs_need_lossless_links_a_path_mtu_and_no_marking() {
    let star = "[network]\ntopology = \"star\"\nreadout_link_bps = \"10G\"\nnode_link_bps = \"10G\"\n[network.rc]\n";
    let e = err(star, &[]);
    assert!(e.contains("field `network.rc`: is set without [network.flow_control]"), "{e}");
    let lossless = "network.flow_control={mode=\"credit\"}";
    let s = parse_str(star, "ok", &[lossless.to_string()]).unwrap();
    assert_eq!(s.network.rc.as_ref().unwrap().path_mtu(s.network.mtu_bytes), Some(1024), "MTU 1500 holds 1024");
    assert!((s.network.payload_share() - 1024.0 / (1024.0 + 44.0 + 38.0)).abs() < 1e-12);
    let with = |more: &'static str| [lossless, more];
    let e = err(star, &with("network.rc.path_mtu_bytes=3000"));
    assert!(e.contains("field `network.rc.path_mtu_bytes`: is 3000; allowed: 256, 512, 1024, 2048, 4096"), "{e}");
    let e = err(star, &with("network.rc.path_mtu_bytes=4096"));
    assert!(
        e.contains("exceeds network.mtu_bytes (1500): at most 1456 there, or raise network.mtu_bytes to 4140"),
        "{e}"
    );
    let e = err(star, &with("network.mtu_bytes=299"));
    assert!(e.contains("field `network.mtu_bytes`: is 299; a queue pair's packets carry at least 256 bytes"), "{e}");
    let e = err(star, &with("network.ecn={marking=\"step\",threshold_bytes=\"30kB\"}"));
    assert!(e.contains("field `network.ecn`: is set with [network.rc]"), "{e}");
    let e = err(star, &with("network.rc.ack_timeout_ns=0"));
    assert!(e.contains("field `network.rc.ack_timeout_ns`: is 0"), "{e}");
    assert!(
        !parse_str("", "tcp", &[]).unwrap().to_toml().contains("[network.rc]"),
        "off, the resolved scenario is as it was"
    );
}

#[test]
fn readout_units_on_the_nodes_hosts_need_one_per_node_and_no_pods() {
    let e = err("[system]\nreadout_units = 4\nnodes = 3\nreadout_on_nodes = true\n", &[]);
    assert!(e.contains("field `system.readout_on_nodes`: is true with 4 readout units and 3 nodes"), "{e}");
    let s = parse_str("[system]\nreadout_units = 3\nnodes = 3\nreadout_on_nodes = true\n", "ok", &[]).unwrap();
    assert_eq!(s.host_names(), ["node0", "node1", "node2"], "a host per node, none for the readout units");
    assert!(!parse_str("", "default", &[]).unwrap().to_toml().contains("readout_on_nodes"));
}

#[test]
fn region_of_interest_steps_are_checked_step_by_step_and_written_only_when_set() {
    let steps = "[[system.roi_step]]\ncollect_fraction = 0.05\nprocessing_time_ns = \"10ms\"\nreject_fraction = 0.5\n\
                 [[system.roi_step]]\ncollect_fraction = 0\nprocessing_time_ns = 1\nreject_fraction = 1.0\n";
    let e = err(steps, &[]);
    assert!(e.contains("field `system.roi_step[1].collect_fraction`: is 0; must be in (0, 1]"), "{e}");
    assert!(e.contains("field `system.roi_step[1].reject_fraction`: is 1; must be in [0, 1)"), "{e}");
    assert!(!e.contains("roi_step[0]"), "the first step is good: {e}");
    let e = err("[[system.roi_step]]\ncollect_fraction = 0.1\n", &[]);
    assert!(e.contains("processing_time_ns"), "a step needs its processing time: {e}");
    let sc = parse_str(&steps.replace("= 0\n", "= 0.2\n").replace("1.0\n", "0.0\n"), "ok", &[]).unwrap();
    assert_eq!(sc.system.roi_steps.len(), 2);
    assert_eq!((sc.system.roi_steps[0].processing_time_ns, sc.system.roi_steps[0].reject_fraction), (10_000_000, 0.5));
    assert!(sc.to_toml().contains("[[system.roi_step]]"));
    assert!(!Scenario::default().to_toml().contains("roi_step"), "without steps the resolved scenario is as it was");
}
