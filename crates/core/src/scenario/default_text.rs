//! The commented default scenario printed by `daqnet scenario --print-default`.
//! A test checks that it parses to exactly [`Scenario::default`] with defaults filled in.
//!
//! [`Scenario::default`]: super::Scenario

/// The default scenario as commented TOML: the ATLAS test set-up of [ATLAS-DC] §4.1 with
/// top-of-rack "Switch 1" and 480 credits.
pub const DEFAULT_SCENARIO_TOML: &str = r#"# daqnet scenario — every field with its default value.
# Rates (`*_bps`) and sizes (`*_bytes`) are numbers or take suffixes: "10G", "10 Gb/s", "600kB",
# "1M", "4MiB". Durations (`*_ns`, `*_ms`, `*_s`) are numbers in that unit or take one: "200ms",
# "5 ms", "40us", "10min".
# Override any field on the command line: --set system.credits_per_node=240

[system]
readout_units = 160          # readout units (ROS); each event is striped over all of them
fragments_per_unit = 12      # fragments per readout unit per event (one request asks for all)
fragment_size = { law = "fixed", bytes = 1100 }
# variable sizes, [ATLAS-DC] §7.2 (size = base_bytes * LogNormal(mu, sigma)_event + Normal(0, sd)_fragment):
# fragment_size = { law = "lognormal_normal", base_bytes = 1100, event_mu = 0.0, event_sigma = 0.25, fragment_sd_bytes = 110.0, min_bytes = 1 }
nodes = 39                   # worker nodes; one collector (data-collection manager) per node
pus_per_node = 24            # processing units per node
credits_per_node = 480       # traffic-shaping credits per node (one per requested fragment), or "unlimited"
processing_time_ns = "100ms"     # a unit processes each event for this long after collecting it
collect_fraction = 1.0       # fraction of readout units a unit collects from per event, (0, 1]
                             # (with roi_step sections: the last step, less units already collected)
request_bytes = 64           # size of a data request message
readout_service_ns = "50us"  # readout unit: request received -> response handed to TCP, at least
readout_service_jitter_ns = "400us"  # plus a uniform extra delay in [0, this), drawn per request
# readout_on_nodes = true    # readout unit r on node r's host (needs readout_units = nodes; default false)

[system.supervisor]
rate_hz = 750.0              # events assigned per second, or "unbounded" (whenever a unit asks)
policy = "fcfs"              # fcfs | random | node_round_robin | node_load_balance | pu_round_robin
control_delay_ns = "50us"    # supervisor <-> processing unit message latency (off the data network)
startup = "shuffled"          # order of the units' first requests for work: shuffled | by_node (node by node)

# Iterative collection ([ATLAS-DC] §2): steps before the last, in order, each processed before the
# next; every step asks only readout units the event's earlier steps did not. Latency: the time
# a unit waited for data, summed over the event's steps.
# [[system.roi_step]]
# collect_fraction = 0.05    # fraction of readout units this step asks, (0, 1]
# processing_time_ns = "10ms"  # processing before the next step
# reject_fraction = 0.0      # share of the events reaching this step rejected after it, [0, 1)

[network]
topology = "two_tier"        # "star": one switch ([network.switch]); "two_tier": access switches + core;
                             # "parallel_leaf_spine": pods joined by planes ([network.fabric])
mtu_bytes = 1500             # IP MTU; MSS = mtu_bytes - 52 (IPv4, TCP, timestamps)
readout_link_bps = "1G"          # each readout unit's link
node_link_bps = "1G"             # each node's link (the collector port)
link_delay_ns = "500ns"      # propagation delay of every link
host_delay_ns = "40us"       # receive-path latency of a host's network stack, per packet
host_burst_ns = 0            # 0: hosts send at line rate (real NICs); > 0: a software shaper's bucket (testbed)
# edge = { bus_bps = "8G", nic_buffer_bytes = "64kB" }  # simulator: edge hosts whose bus is slower than
#                            # their link; frames wait in the NIC's buffer, dropped when it is full
#                            # (or pausing the switch, with [network.flow_control]); add
#                            # hosts = ["node0"] for only these hosts (default: every host)
# host_cpu = { per_frame_ns = "5us", per_byte_ps = 1000, interrupt_ns = "10us" }
#                            # simulator: hosts whose cores bound what they receive; also cores = 1,
#                            # steering = "hash" | "round_robin", coalesce_ns = 0, coalesce_frames = 1,
#                            # ring_frames = 256 (a frame finding its core's ring full is dropped), hosts = []

# star topology only:
# [network.switch]
# kind = "bridge"            # "bridge": output-queued with `buffer`; "daqring": daqnet's lossless switch
# buffer = { scheme = "dedicated", port_bytes = "4MB" }
# daqring = { queue_bytes = "64MiB", burst_frames = 0, poll_cycle_ns = 0 }
#                            # a queue per collector; frames each sends per polling cycle (0: no limit);
#                            # simulator: the cycle (with burst_frames a rate limit per collector)
# cpu = { per_frame_ns = 500, cores = 8 }  # simulator: the software switch's cores (host_cpu's fields, no hosts)

[network.readout_switch]     # two_tier: one switch per readout group
hosts = 16                   # readout units per group switch
uplink_bps = "10G"           # one uplink to each core router
buffer = { scheme = "dedicated", port_bytes = "4MB" }

[network.rack_switch]        # two_tier: top-of-rack switch of each rack of nodes
hosts = 40                   # nodes per rack
uplink_bps = "10G"           # one uplink to each core router
buffer = { scheme = "dedicated", port_bytes = "600kB" }
# shared memory ("Switch 2"): { scheme = "shared", pool_bytes = "10MB", ports_per_pool = 32, port_cap_bytes = "8MB" }

[network.core]               # two_tier: core routers; each connection is hashed onto one (ECMP)
routers = 2
buffer = { scheme = "deep", port_bytes = "1.5GB" }

# parallel_leaf_spine only ([LOSSLESS] §V, docs/fabric.md; planned by `daqnet plan`):
# [network.fabric]
# pods = 4                   # readout units and racks are split evenly over the pods
# planes = 2                 # independent leaf-spine planes; a leaf per pod in each
# spines_per_plane = 2
# readout_per_pod = 40       # pods × readout_per_pod = system.readout_units
# racks_per_pod = 1          # HLT racks: a top-of-rack switch and its nodes
# nodes_per_rack = 10        # pods × racks_per_pod × nodes_per_rack = system.nodes
# rack_uplink_bps = "10G"    # top-of-rack switch <-> leaf, one per plane it reaches
# spine_link_bps = "10G"     # leaf <-> spine
# assignment = "controller"  # "controller": a collector's flows on one plane and spine, spread
#                            # evenly ([LOSSLESS] §V-B); "ecmp": each flow hashed onto a path
# reaction_ns = "10ms"       # an element fails -> the controller's new rules are in place
# readout_uplinks = 2        # planes a readout unit reaches (default: all), likewise rack_uplinks
# leaf = { kind = "bridge", buffer = { scheme = "dedicated", port_bytes = "4MB" } }   # also spine, rack

# [network.ecn]              # ECN marking at every switch output port (default: none)
# marking = "step"           # "step": mark a frame that finds more than K queued (DCTCP); "red": a ramp
# threshold_bytes = "30kB"   # K (or threshold_packets); red takes min_bytes, max_bytes, max_probability

# [network.flow_control]     # link-level flow control on every link (default: none, full buffers drop)
# mode = "pause"             # "pause": IEEE 802.3x, the whole link; "pfc": 802.1Qbb, per priority
# headroom_bytes = "20kB"    # above XOFF, for what arrives before a pause acts (default: derived per
#                            # link, 2 × cable delay × rate + 3 full frames + the pause frame)
# xon_gap_bytes = "3kB"      # XON this far below XOFF (default: two full frames)
# pause_quanta = 65535       # each pause: quanta × 512 bit times (3.36 ms at 10 Gb/s), renewed at half
# data_priority = 3          # "pfc": the dataflow's priority

# [network.rc]               # reliable-connected queue pairs (InfiniBand RC, RoCEv2) instead of TCP:
#                            # messages cut at the path MTU, sent at line rate, go-back-N on a loss;
#                            # needs [network.flow_control] (default: none, TCP)
# path_mtu_bytes = 4096      # payload per packet: 256..4096 (InfiniBand), 8192, 10240 (Omni-Path)
#                            # (default: the largest InfiniBand MTU network.mtu_bytes holds)
# rate_limit_bps = "25G"     # a queue pair's rate limit (default: none, line rate)
# ack_timeout_ns = "67ms"    # local ACK timeout (default 4.096 us x 2^14)

[network.tcp]
congestion_control = "newreno"   # newreno | cubic | static | dctcp (DCTCP always uses ECN)
static_cwnd_segments = 2         # the window when congestion_control = "static"
initial_cwnd_segments = 10
sack = true                      # SACK-based recovery (false: NewReno, RFC 6582)
min_rto_ns = "200ms"             # Linux: 200 ms
max_rto_ns = "120s"
initial_rto_ns = "1s"
dupack_threshold = 3
delayed_ack = true
delayed_ack_ns = "40ms"          # capped at min_rto_ns / 2
quickack_segments = 16
pingpong = false                 # interactive delayed ACKs: an end that replies within 40 ms holds short-segment ACKs
limited_transmit = true
slow_start_after_idle = true
rack = true                      # RACK loss detection, also of lost retransmissions (needs sack)
tail_loss_probe = true           # probe a silent tail after 2 SRTT instead of waiting for the RTO
frto = true                      # F-RTO: new data after a timeout tells whether it was spurious
ecn = false                      # RFC 3168 ECN: a CE mark (from [network.ecn]) shrinks the window once per window
timer_hz = 1000                  # TCP timers tick like Linux CONFIG_HZ (Debian/Ubuntu: 250; 0 = exact)
tick_phase = "per_host"          # per_host | shared: each host ticks at its own phase, or all at the same instants

[run]
events = 2000                # measured events
warmup_events = 500          # events run before measuring
seed = 1
time_limit_s = "10min"       # simulated seconds; events unfinished by then are "abandoned"

[deploy]                     # real runs only (daqnet run / daqnet role); the simulator ignores it
transport = "tcp"
supervisor = "127.0.0.1:0"   # supervisor address; port 0 = a free loopback port (daqnet run)
readouts = []                # listen address per readout unit; empty = loopback, free ports
tcp_congestion = "cubic"     # TCP_CONGESTION on every data socket (namespaces default to bbr)
startup_timeout_ms = "10s"   # wait this long for every peer at start-up
heartbeat_ms = "200ms"       # every connection carries a frame at least this often
peer_timeout_ms = "1s"       # a peer silent this long is declared hung
max_frame_bytes = "64MiB"    # larger frames close the connection
readout_buffer_bytes = "16MiB"  # generated fragments a readout unit may hold (back-pressure)
verify_payload = true        # check every payload byte (headers are always checked)
run_id = 0                   # in every hello; a peer of another run is refused (daqnet run draws one)

# An LHCb sub-farm ([LHCB-SUBFARM], docs/subfarm.md) in place of the event builder of [system]:
# uncomment [farm] (network.topology must be "star"). Its defaults: the note's test set-up.
# [farm]
# workers = 20                 # worker nodes behind the sub-farm controller (SFC)
# implementation = "v2"        # v1: generator + event queue + token queue | v2: a sender per worker,
#                              # sending on its token | v3: a sender per worker streaming (push)
# dispatch = "tokens"          # tokens (v1, v2) | round_robin (v1) | push (v3)
# initial_tokens = 1           # tokens a worker sends when it connects
# event_bytes = "32kB"
# token_bytes = 28
# accept_fraction = 0.005      # share of events accepted (their output rides back with the token)
# accept_output_bytes = "64kB"
# reject_ns = 0                # processing time of a rejected event
# accept_ns = 0                # processing time of an accepted event
# source_rate_hz = "unbounded" # v1: events offered per second, or "unbounded" (keeps the queue full)
# # from_builder = { events = "eb/events.csv", node = 0 }
#                              # v1: instead of a generator, what an event builder built at one node
#                              # (its events.csv from --per-event), when it built it, at its size
# event_queue_events = 40      # v1: the SFC's event queue; an event finding it full is lost
# pipe_bytes = "128KiB"        # round_robin, push: event bytes on a connection before a send blocks
# sfc_link_bps = "1G"
# worker_link_bps = "100M"

# DAQPIPE's event building ([LHCB-DAQPIPE] §VI) in place of the event builder of [system]:
# uncomment [pipe] (on a star, or a leaf-spine: "two_tier" with racks of nodes). `daqnet sim`
# simulates it; `daqnet pipe` runs it for real over TCP or MPI.
# [pipe]
# nodes = 4                    # nodes, each a readout unit and a builder unit (full duplex)
# pattern = "event_building"   # event_building | one_to_one | many_to_one | gather | gather_cmd | gather_cmd_meta
# message_bytes = "1MB"        # synthetic patterns: a data message
# messages_in_flight = 8       # synthetic patterns: messages a sender keeps in flight
# fragment_bytes = "1MB"       # each readout unit's fragment of one event
# direction = "full_duplex"    # full_duplex | one_way: first half of the nodes readout units, the rest builder units
# processes_per_node = 1       # real runs: 1, or 2 (a readout-unit and a builder-unit process per node)
# scheduler = "round_robin"    # round_robin: at most parallel_transfers pulls out | simple: all at once
# parallel_transfers = 28      # pulls a builder unit keeps outstanding
# credits_per_builder = 2      # events a builder unit holds at once
# request_bytes = 64           # size of a pull request
# link_bps = "100G"            # every node's link
# readout_service_ns = 0       # a readout unit's software time per pull before its fragment leaves
# control_delay_ns = "10us"    # event manager <-> builder unit messages (off the data network)
"#;
