//! ECN marking at the testbed's switch ports (`[network.ecn]`, a step at K bytes): a tc BPF
//! program (`bpf/mark.bpf.c`) on each port's egress hook marks an ECN-capable frame CE when the
//! port's tbf already holds more than K. It reads the qdisc's own backlog counter, so it marks
//! against the real queue. Compiled per testbed (K is a constant of the program) into the
//! testbed's state folder, attached by the plan's steps, removed with the testbed.

use crate::steps::{switch_queue_limit, STATE_DIR};
use std::path::PathBuf;

const SOURCE: &str = include_str!("../bpf/mark.bpf.c");

/// Where testbed `id` keeps its marking program.
pub fn dir(id: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{id}.mark"))
}

/// The compiled program of testbed `id`.
pub fn object(id: &str) -> PathBuf {
    dir(id).join("mark.bpf.o")
}

/// K of the scenario (frames counted header to FCS, with the frame in transmission, as the
/// simulator counts them) in tbf's measure: `skb->len`, only the frames waiting — the
/// conversion of a port's buffer ([`switch_queue_limit`], at least one frame).
pub fn threshold(k_bytes: u64, mtu_bytes: u32) -> u64 {
    switch_queue_limit(k_bytes, mtu_bytes)
}

/// Compiles testbed `id`'s marking program for a tbf threshold of `threshold` bytes.
pub fn build(id: &str, threshold: u64) -> anyhow::Result<PathBuf> {
    crate::bpf_cc::compile(&dir(id), "mark.bpf.c", SOURCE, &[format!("-DTHRESHOLD_BYTES={threshold}")])
}
