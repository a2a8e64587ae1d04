//! Scenarios more than one test file builds.

use daqnet_core::scenario::parse_str;
use daqnet_core::Scenario;

/// The `[system]` of an event builder whose collectors pull fixed fragments of `fragment` from
/// every readout unit, one per unit, with unlimited credits, no processing and no service
/// time, the supervisor assigning events first come, first served as fast as they are asked.
pub fn collectors(readout_units: u32, fragment: &str, nodes: u32, pus_per_node: u32) -> String {
    format!(
        r#"[system]
readout_units = {readout_units}
fragments_per_unit = 1
fragment_size = {{ law = "fixed", bytes = "{fragment}" }}
nodes = {nodes}
pus_per_node = {pus_per_node}
credits_per_node = "unlimited"
processing_time_ns = 0
readout_service_ns = 0
readout_service_jitter_ns = 0
[system.supervisor]
rate_hz = "unbounded"
policy = "fcfs"
control_delay_ns = 0"#
    )
}

/// One readout unit sending a 2 MB fragment to one collector per event through one switch on
/// 10 Gb/s links with 20 µs of cable each, at IP MTU `mtu`, credit-based links (the switch's
/// port towards the readout unit holding `buffer`, its credits); `transport` is the TOML of
/// the connections' transport (a `[network.tcp]` or `[network.rc]` table).
pub fn credit_link(buffer: u64, mtu: u32, transport: &str) -> Scenario {
    let system = collectors(1, "2MB", 1, 1);
    let text = format!(
        r#"
{system}
[network]
topology = "star"
mtu_bytes = {mtu}
readout_link_bps = "10G"
node_link_bps = "10G"
link_delay_ns = 20000
host_delay_ns = 10000
[network.switch]
buffer = {{ scheme = "dedicated", port_bytes = {buffer} }}
[network.flow_control]
mode = "credit"
{transport}
[run]
events = 5
warmup_events = 1
"#
    );
    parse_str(&text, "test", &[]).unwrap()
}
