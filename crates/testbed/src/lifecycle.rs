//! Bringing a testbed up and down, idempotently, and clearing what crashed runs left behind.
//!
//! Every testbed writes `/run/daqnet/testbed/<id>.json` before it creates anything: what it is
//! and which process owns it (`daqnet testbed run` owns its testbed and removes it when done;
//! `daqnet testbed up` makes one that stays until `down`). A namespace named `daqnet-<id>-…`
//! whose owner is dead, or that has no state file, is a leftover; the next `up` removes it.

use crate::netns;
use crate::plan::{id_of_namespace, TestbedPlan};
use crate::steps::Step;
use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use crate::steps::STATE_DIR;

/// What `/run/daqnet/testbed/<id>.json` records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Testbed name.
    pub id: String,
    /// The process that removes the testbed when it ends; none for `daqnet testbed up`.
    pub owner_pid: Option<u32>,
    /// The scenario it was built from.
    pub scenario: String,
    /// Every step that built it, as text: an `up` with other steps rebuilds.
    pub steps: Vec<String>,
}

fn state_path(id: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{id}.json"))
}

fn read_state(id: &str) -> Option<State> {
    serde_json::from_str(&std::fs::read_to_string(state_path(id)).ok()?).ok()
}

/// Whether process `pid` is a live daqnet process (a testbed's owner).
pub fn alive(pid: u32) -> bool {
    // A pid is reused only after its process is gone; a live daqnet process with it is the owner.
    // A killed owner whose parent has not reaped it yet is a zombie (state `Z` after the
    // command's closing parenthesis in /proc/PID/stat): dead, though its name is still there.
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')));
    !zombie && std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.contains("daqnet"))
}

/// Fails unless this process can build testbeds: root, and `ip`/`tc` (iproute2) installed.
pub fn check_prerequisites() -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("the testbed needs root: it creates network namespaces, veth links and qdiscs (run with sudo)");
    }
    for tool in ["ip", "tc"] {
        let found = Command::new(tool).arg("-V").output().is_ok_and(|o| o.status.success());
        if !found {
            bail!("`{tool}` not found: the testbed needs iproute2 (apt-get install iproute2)");
        }
    }
    Ok(())
}

pub(crate) fn perform(s: &Step) -> anyhow::Result<()> {
    match s {
        Step::Run(args) => {
            let out = Command::new(&args[0])
                .args(&args[1..])
                .output()
                .with_context(|| format!("cannot start `{}`", args[0]))?;
            if !out.status.success() {
                bail!("`{}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
            }
            Ok(())
        }
        Step::OffloadsOff { ns, dev } => netns::within(ns, || netns::offloads_off(dev)),
        Step::Sysctl { ns, key, value } => netns::within(ns, || netns::sysctl(key, value)),
        Step::Write { path, text } => std::fs::write(path, text).with_context(|| format!("cannot write {path}")),
    }
}

/// What [`up`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Up {
    /// Built it, in this many seconds.
    Built(f64),
    /// It was already up, built from the same steps.
    AlreadyUp,
}

/// Brings the testbed of `plan` up, owned by `owner` (removed when that process ends) or by
/// nobody (stays until [`down`]). Removes leftovers of crashed runs first. An `up` of a testbed
/// that is already up the same way does nothing; one that is up differently is rebuilt.
/// If a step fails, whatever was built is removed again.
pub fn up(plan: &TestbedPlan, owner: Option<u32>, scenario: &str) -> anyhow::Result<Up> {
    check_prerequisites()?;
    remove_leftovers()?;
    if let Some(cc) = crate::bpf_cc::named(&plan.congestion) {
        cc.ensure().context("network.tcp.congestion_control (a congestion control daqnet builds as BPF)")?;
    }
    if matches!(plan.switch, crate::plan::TestbedSwitch::Fabric(_)) {
        let found = Command::new("ovs-vswitchd").arg("--version").output().is_ok_and(|o| o.status.success());
        if !found {
            bail!("a parallel leaf-spine testbed needs Open vSwitch (scripts/testbed-deps.sh installs it)");
        }
    }
    let steps = plan.steps();
    let state = State {
        id: plan.id.clone(),
        owner_pid: owner,
        scenario: scenario.to_string(),
        steps: steps.iter().map(Step::to_string).collect(),
    };
    let present = netns::list();
    if let Some(old) = read_state(&plan.id) {
        if old.steps == state.steps && plan.namespaces().iter().all(|n| present.contains(n)) {
            return Ok(Up::AlreadyUp);
        }
    }
    down(&plan.id)?;
    std::fs::create_dir_all(STATE_DIR).with_context(|| format!("cannot create {STATE_DIR}"))?;
    let path = state_path(&plan.id);
    std::fs::write(&path, serde_json::to_string_pretty(&state)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let t0 = Instant::now();
    if let Some(k) = plan.mark_above_bytes {
        if let Err(e) = crate::marking::build(&plan.id, k) {
            let _ = down(&plan.id);
            return Err(e.context("network.ecn (ECN marking, a tc BPF program daqnet builds)"));
        }
    }
    for s in &steps {
        if let Err(e) = perform(s) {
            let _ = down(&plan.id);
            return Err(e.context(format!("testbed {}: cannot bring it up", plan.id)));
        }
    }
    Ok(Up::Built(t0.elapsed().as_secs_f64()))
}

/// Removes testbed `id`: stops any process still inside its namespaces (a fabric's Open vSwitch
/// daemons among them), deletes them (which deletes their links, bridges and qdiscs), its state
/// file and its Open vSwitch files. Returns how many namespaces it removed;
/// removing a testbed that is not there does nothing.
pub fn down(id: &str) -> anyhow::Result<usize> {
    let mine: Vec<String> = netns::list().into_iter().filter(|n| id_of_namespace(n) == Some(id)).collect();
    for ns in &mine {
        if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                // SAFETY: kill(2) on a pid that `ip netns pids` just listed.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
    // The switch last: removing a host removes its link, so the bridge never forwards to a
    // half-removed port.
    let (switch, hosts): (Vec<&String>, Vec<&String>) = mine.iter().partition(|n| n.ends_with("-sw"));
    for ns in hosts.into_iter().chain(switch) {
        let out = Command::new("ip").args(["netns", "del", ns]).output().context("cannot start `ip`")?;
        if !out.status.success() && netns::path(ns).exists() {
            bail!("`ip netns del {ns}` failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
    }
    let _ = std::fs::remove_file(state_path(id));
    // Open vSwitch's database, sockets and logs; its daemons ran in the switch namespace and
    // were stopped with everything else there.
    let _ = std::fs::remove_dir_all(crate::steps::ovs_dir(id));
    let _ = std::fs::remove_dir_all(crate::marking::dir(id));
    Ok(mine.len())
}

/// Every testbed on this machine: (id, its state if it has one).
pub fn list() -> Vec<(String, Option<State>)> {
    let mut ids: Vec<String> = netns::list().iter().filter_map(|n| id_of_namespace(n).map(String::from)).collect();
    if let Ok(dir) = std::fs::read_dir(STATE_DIR) {
        ids.extend(dir.filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".json").map(String::from)));
    }
    ids.sort();
    ids.dedup();
    ids.into_iter()
        .map(|id| {
            let state = read_state(&id);
            (id, state)
        })
        .collect()
}

/// Why a testbed is a leftover, if it is one: its owner process is dead, or it has no state
/// file (a run that crashed, or was killed, before cleaning up).
pub fn leftover(state: &Option<State>) -> Option<String> {
    match state {
        None => Some("it has no state file".into()),
        Some(s) => s.owner_pid.filter(|&pid| !alive(pid)).map(|pid| format!("its owner, pid {pid}, is dead")),
    }
}

/// Removes every leftover testbed ([`leftover`]). Returns (id, why) of each.
pub fn remove_leftovers() -> anyhow::Result<Vec<(String, String)>> {
    let mut removed = Vec::new();
    for (id, state) in list() {
        if let Some(why) = leftover(&state) {
            down(&id)?;
            removed.push((id, why));
        }
    }
    Ok(removed)
}

/// A testbed that is removed when this value is dropped (also on an error or a panic).
pub struct Owned {
    /// The testbed.
    pub plan: TestbedPlan,
    /// Seconds it took to build.
    pub build_s: f64,
}

impl Owned {
    /// Builds the testbed of `plan`, owned by this process.
    pub fn up(plan: TestbedPlan, scenario: &str) -> anyhow::Result<Owned> {
        let build_s = match up(&plan, Some(std::process::id()), scenario)? {
            Up::Built(s) => s,
            Up::AlreadyUp => 0.0,
        };
        Ok(Owned { plan, build_s })
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Err(e) = down(&self.plan.id) {
            eprintln!("warning: testbed {}: {e:#}", self.plan.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `testbed list` called a run killed with SIGKILL "running" while its parent had not yet
    /// reaped it. A killed, unreaped process is not alive, whatever its name.
    #[test]
    fn a_killed_owner_that_is_not_yet_reaped_is_dead() {
        // A process named like daqnet: `sleep` started through a link whose name says daqnet.
        let dir = std::env::temp_dir().join(format!("daqnet-alive-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("daqnet-owner");
        let _ = std::fs::remove_file(&exe);
        std::os::unix::fs::symlink("/bin/sleep", &exe).unwrap();
        let mut child = Command::new(&exe).arg("30").spawn().unwrap();
        let pid = child.id();
        let zombie = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap().contains(") Z");
        assert!(alive(pid), "a running daqnet process is alive");
        child.kill().unwrap();
        let t0 = Instant::now();
        while !zombie(pid) {
            assert!(t0.elapsed() < std::time::Duration::from_secs(5), "the child never became a zombie");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!alive(pid), "killed and not yet reaped: dead");
        child.wait().unwrap();
        assert!(!alive(pid), "reaped: gone");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
