//! Hosts and a software switch with finite CPU (`[network.host_cpu]`, `[network.switch.cpu]`):
//! each test states what the cores allow and derives the bound from the costs. The streams are
//! readout units sending one fragment per event to one node, on 1 Gb/s links through a switch
//! deep enough never to drop; only the node's cores (or the switch's) are modelled.

use crate::common;

use daqnet_core::report::EventRecord;
use daqnet_core::scenario::parse_str;
use daqnet_core::Scenario;
use daqnet_sim::{simulate, SimOptions, SimOutput};

/// A frame's bytes, header to FCS, for a full segment at IP MTU `mtu`: the MSS (MTU − 52)
/// plus 52 bytes of IP and TCP headers with timestamps and 18 of Ethernet.
fn full_frame(mtu: u64) -> u64 {
    mtu + 18
}

/// `readout_units` send one fragment of `fragment` bytes each per event to one node, at IP
/// MTU `mtu`; `cpu` is the node's `[network.host_cpu]` (TOML lines; empty: no CPU model).
fn streams(readout_units: u32, fragment: &str, mtu: u32, cpu: &str) -> Scenario {
    streams_with(readout_units, fragment, mtu, cpu, &[])
}

/// [`streams`] with `--set` overrides.
fn streams_with(readout_units: u32, fragment: &str, mtu: u32, cpu: &str, sets: &[&str]) -> Scenario {
    let system = common::collectors(readout_units, fragment, 1, 1);
    let cpu = if cpu.is_empty() { String::new() } else { format!("[network.host_cpu]\nhosts = [\"node0\"]\n{cpu}") };
    let text = format!(
        r#"
{system}
[network]
topology = "star"
mtu_bytes = {mtu}
readout_link_bps = "1G"
node_link_bps = "1G"
link_delay_ns = 1000
host_delay_ns = 20000
[network.switch]
buffer = {{ scheme = "dedicated", port_bytes = "64MB" }}
{cpu}
[run]
events = 3
warmup_events = 1
"#
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse_str(&text, "test", &sets).unwrap()
}

fn run(s: &Scenario) -> SimOutput {
    simulate(s, "test", SimOptions { record_events: true, ..Default::default() })
}

/// An event's data-collection latency, ns.
fn lat_ns(e: &EventRecord) -> u64 {
    e.done_ns - e.start_ns
}

/// Goodput of the measured events, bit/s.
fn goodput(out: &SimOutput) -> f64 {
    out.report.goodput_bps
}

/// Payload bit/s a core takes when each full frame costs it `frame_ps`.
fn bound_bps(mtu: u64, frame_ps: f64) -> f64 {
    (mtu - 52) as f64 * 8.0 / (frame_ps * 1e-12)
}

fn within(what: &str, got: f64, bound: f64, low: f64) {
    assert!(got <= bound * 1.001, "{what}: {got:.0} b/s is above the cores' bound {bound:.0}");
    assert!(got >= low * bound, "{what}: {got:.0} b/s is below {low} of the cores' bound {bound:.0}");
}

/// A core that spends 20 µs on every frame takes 50,000 frames a second: 1448 × 8 × 50,000 =
/// 579.2 Mb/s of payload, below the link's 941, and no more.
#[test]
fn a_cost_per_frame_bounds_a_stream_at_one_frame_per_cost() {
    let out = run(&streams(1, "8MB", 1500, "per_frame_ns = \"20us\"\nring_frames = 100000"));
    let cpu = out.report.host_cpu.as_ref().expect("the report counts the cores");
    assert_eq!((cpu.drops, out.report.tcp.retransmits), (0, 0), "the ring holds the window");
    within("20 us per frame", goodput(&out), bound_bps(1500, 20e6), 0.97);
    let core = &cpu.cores[0];
    assert_eq!(core.name, "node0 core0");
    assert!(core.busy_s > 0.0 && core.frames > 3 * 8_000_000 / 1448, "{core:?}");
}

/// Jumbo frames ([LHCB-SUBFARM] §1.4): with 10 µs per frame and 8 ns per byte, a 1518-byte
/// frame costs 22.1 µs (524 Mb/s of payload) and a 9018-byte one 82.1 µs (871 Mb/s): six times
/// fewer frames for the same bytes, so the fixed cost is paid six times less.
#[test]
fn jumbo_frames_raise_what_a_core_takes_by_their_share_of_fixed_cost() {
    let cpu = "per_frame_ns = \"10us\"\nper_byte_ps = 8000\nring_frames = 100000";
    let cost = |mtu: u64| 10e6 + 8000.0 * full_frame(mtu) as f64;
    let standard = goodput(&run(&streams(1, "8MB", 1500, cpu)));
    let jumbo = goodput(&run(&streams(1, "8MB", 9000, cpu)));
    within("MTU 1500", standard, bound_bps(1500, cost(1500)), 0.97);
    within("MTU 9000", jumbo, bound_bps(9000, cost(9000)), 0.95);
    let gain = jumbo / standard;
    let expected = bound_bps(9000, cost(9000)) / bound_bps(1500, cost(1500));
    assert!((gain / expected - 1.0).abs() < 0.03, "jumbo gained {gain:.3}, the costs give {expected:.3}");
}

/// Interrupt coalescing ([LHCB-SUBFARM] §1.5): an interrupt costing 40 µs on top of 10 µs per
/// frame bounds a stream at 50 µs per frame (231.7 Mb/s); announcing 8 frames per interrupt
/// spreads it to 5 µs per frame (772.3 Mb/s).
#[test]
fn coalescing_spreads_an_interrupts_cost_over_the_frames_it_announces() {
    let base = "per_frame_ns = \"10us\"\ninterrupt_ns = \"40us\"\nring_frames = 100000";
    let each = goodput(&run(&streams(1, "8MB", 1500, base)));
    within("an interrupt per frame", each, bound_bps(1500, 50e6), 0.97);
    let coalesced = run(&streams(1, "8MB", 1500, &format!("{base}\ncoalesce_frames = 8\ncoalesce_ns = \"1ms\"")));
    within("8 frames per interrupt", goodput(&coalesced), bound_bps(1500, 15e6), 0.95);
    let cpu = coalesced.report.host_cpu.as_ref().unwrap();
    let frames = cpu.cores[0].frames as f64;
    assert!(frames / cpu.interrupts as f64 > 7.0, "{} frames in {} interrupts", frames, cpu.interrupts);
}

/// A lone frame waits for the NIC's coalescing delay: with free cores, an event of one small
/// fragment is collected exactly `coalesce_ns` later than without the CPU model (its request
/// goes to a readout unit, which has no CPU model; its one response frame waits).
#[test]
fn a_lone_frame_waits_exactly_the_coalescing_delay() {
    let free = run(&streams(1, "100B", 1500, ""));
    let waits = run(&streams(1, "100B", 1500, "coalesce_frames = 64\ncoalesce_ns = \"500us\""));
    for (a, b) in free.events.iter().zip(&waits.events) {
        let extra_ns = lat_ns(b) as i64 - lat_ns(a) as i64;
        assert_eq!(extra_ns, 500_000, "event {a:?} against {b:?}");
    }
}

/// A CPU model that costs nothing and never waits changes nothing: the frames reach the host
/// at the same instants, and every event is collected at the same time.
#[test]
fn a_free_cpu_changes_no_latency() {
    let without = run(&streams(4, "1MB", 1500, ""));
    let with = run(&streams(4, "1MB", 1500, "cores = 2"));
    let lat = |o: &SimOutput| o.events.iter().map(lat_ns).collect::<Vec<_>>();
    assert_eq!(lat(&without), lat(&with));
    assert_eq!(without.report.tcp, with.report.tcp);
}

/// Cores add up when the connections are spread over them (round robin, as threads): six
/// streams into 1, 2 and 3 cores that each take 50 µs per frame (231.7 Mb/s) reach 1, 2 and
/// 3 times that.
#[test]
fn cores_add_up_when_the_connections_are_spread_over_them() {
    for cores in 1..=3u32 {
        let cpu = format!("per_frame_ns = \"50us\"\ncores = {cores}\nsteering = \"round_robin\"\nring_frames = 100000");
        let out = run(&streams(6, "1MB", 1500, &cpu));
        within(&format!("{cores} cores"), goodput(&out), cores as f64 * bound_bps(1500, 50e6), 0.93);
        let frames: Vec<u64> = out.report.host_cpu.as_ref().unwrap().cores.iter().map(|c| c.frames).collect();
        assert!(frames.iter().all(|&f| f > 0), "every core works: {frames:?}");
    }
}

/// A ring that fills drops what it cannot hold, and TCP repairs it: a core slower than the
/// link with a 16-frame ring holds at most 16 frames, drops, and every event is still built.
#[test]
fn a_full_ring_drops_and_tcp_repairs_the_loss() {
    let out = run(&streams(1, "8MB", 1500, "per_frame_ns = \"20us\"\nring_frames = 16"));
    let cpu = out.report.host_cpu.as_ref().unwrap();
    assert!(cpu.drops > 0 && out.report.tcp.retransmits > 0, "{cpu:?}");
    assert!(cpu.cores[0].peak_frames <= 16, "{cpu:?}");
    let n = &out.report.events_not_built;
    assert_eq!((n.timed_out, n.lost, n.abandoned), (0, 0, 0), "every event is built");
    assert!(goodput(&out) < bound_bps(1500, 20e6));
}

/// A software switch forwards in its cores ([LOSSLESS] Fig. 4): at 20 µs per frame a core
/// forwards 50,000 frames a second, data and acknowledgements alike, and two cores twice that —
/// below what four streams into a 1 Gb/s link bring (81,000 data frames a second and their
/// ACKs), so the cores are busy throughout and the frames they forward over the run's simulated
/// time come within a few per cent of the bound.
#[test]
fn a_software_switch_forwards_no_faster_than_its_cores() {
    for cores in [1u32, 2] {
        let c = format!("network.switch.cpu={{ per_frame_ns = \"20us\", cores = {cores}, steering = \"round_robin\", ring_frames = 100000 }}");
        let out = run(&streams_with(4, "1MB", 1500, "", &[&c]));
        let cpu = out.report.host_cpu.as_ref().expect("the report counts the switch's cores");
        assert!(cpu.cores.iter().all(|k| k.name.starts_with("sw core")), "{cpu:?}");
        let frames: u64 = cpu.cores.iter().map(|k| k.frames).sum();
        let rate = frames as f64 / out.report.sim_work.as_ref().unwrap().simulated_s;
        let bound = cores as f64 / 20e-6;
        assert!(rate <= bound * 1.001 && rate >= 0.95 * bound, "{cores} cores: {rate:.0} frames/s, bound {bound:.0}");
        assert_eq!(cpu.drops, 0);
    }
}
