//! daqnet-evb: the real event builder. The `core` dataflow state machines — readout unit,
//! collector with its credit pool, processing units, supervisor and its policies — run
//! unchanged over real sockets, one process per role, so a measured result can be set against
//! a simulated one from the same scenario.
//!
//! * [`wire`]: frames (versioned header, maximum size, a sans-IO decoder) and messages.
//! * [`payload`]: deterministic fragment payloads and their byte-for-byte verification.
//! * [`net`]: transports behind one trait (TCP first) and the per-connection tasks
//!   (heartbeats, loss detection).
//! * [`role`]: the one name of a role ([`role::RoleId`]) and the command line that starts one
//!   ([`role::RoleArgs`]), shared by the launcher and the CLI.
//! * [`roles`]: the readout, collector and supervisor processes: state machines without IO
//!   and the thin loops that drive them.
//! * [`farm`]: the LHCb sub-farm's SFC and workers, the note's three implementations.
//! * [`pipe`]: DAQPIPE's nodes (`daqnet pipe`) over a mesh of TCP connections or MPI.
//! * [`launcher`]: `daqnet run`, every role as a process on this machine.
//! * [`metrics`]: the Prometheus endpoint.

pub mod farm;
pub mod launcher;
pub mod metrics;
pub mod net;
pub mod payload;
pub mod pipe;
pub mod role;
pub mod roles;
pub mod wire;

/// Runs a role's future on a fresh tokio runtime with `threads` worker threads (1: a
/// single-threaded runtime).
pub fn block_on<T>(threads: usize, fut: impl std::future::Future<Output = T>) -> std::io::Result<T> {
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build()?
    };
    Ok(rt.block_on(fut))
}

/// Loads a scenario for a real run: the scenario with `--set` overrides, plus the checks only a
/// real run needs (`[deploy]` addresses and limits), as one readable error naming the file and
/// each field.
pub fn load_run_scenario(path: &std::path::Path, sets: &[String]) -> anyhow::Result<daqnet_core::Scenario> {
    let sc = daqnet_core::scenario::load(path, sets).map_err(|e| anyhow::anyhow!("{e}"))?;
    let problems = sc.run_problems();
    if !problems.is_empty() {
        let lines: Vec<String> =
            problems.iter().map(|(field, m)| format!("{}: field `{field}`: {m}", path.display())).collect();
        anyhow::bail!("{}", lines.join("\n"));
    }
    Ok(sc)
}
