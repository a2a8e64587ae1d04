//! daqnet-testbed: real Linux TCP through an emulated switch, on one machine.
//!
//! Every host of a scenario (supervisor, readout units, collector nodes) gets a network
//! namespace with one veth link to a switch namespace holding a Linux bridge. Both ends of
//! every link are shaped to the scenario's line rate with tbf (wire overheads counted), and the
//! switch's output ports queue what the scenario's buffer holds in the simulator, so the
//! collector port drops exactly where a shallow switch would. Offloads are off, so queues hold
//! wire-size frames; each host's route carries the scenario's minimum RTO and initial window.
//! The real event builder (`daqnet-evb`) runs inside, one process per role, and the run report
//! gains the kernel's counters: qdisc drops and sampled peak backlog per port, TCP retransmits
//! and timeouts per host.
//!
//! [`plan`] derives the testbed from a scenario's network plan without touching the system, as
//! [`steps`]; [`lifecycle`] brings it up and down; [`run`] runs a scenario in it.

pub mod bpf_cc;
pub mod controller;
pub mod kernel_hz;
pub mod lifecycle;
pub mod marking;
pub mod netns;
pub mod ovs;
pub mod plan;
pub mod qdisc;
pub mod run;
pub mod steps;
