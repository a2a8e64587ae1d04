//! `daqnet testbed up|down|list|run`: real Linux TCP through an emulated switch, in network
//! namespaces on this machine.

use clap::{Args, Subcommand};
use daqnet_testbed::lifecycle::{self, Up};
use daqnet_testbed::plan::{TestbedPlan, TestbedSwitch};
use daqnet_testbed::run::{TestbedRunOptions, SAMPLE_INTERVAL};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Emulate a scenario's network with Linux namespaces, veth links and tbf queues, and run the
/// real event builder through it: real kernel TCP (200 ms minimum RTO, SACK, tail-loss probes),
/// real queues, real drops.
///
/// One namespace per host (supervisor `sup`, readout units `r0…`, collector nodes `c0…`) and a
/// switch namespace (`sw`) with a Linux bridge. Both ends of every link are shaped to the line
/// rate from [network] (frame overheads counted); each switch output port queues at most the
/// scenario's buffer (network.switch.buffer.port_bytes) and drops beyond it. TSO/GSO/GRO are
/// off, the MTU, minimum RTO (network.tcp.min_rto_ns) and initial window come from the
/// scenario, and every socket uses the congestion control of network.tcp.congestion_control.
/// Addresses are 10.88.0.0/16 inside the testbed's own namespaces; nothing leaves them.
/// Needs root and iproute2 (ip, tc).
#[derive(Args)]
#[command(after_help = "Examples:\n  \
daqnet testbed run scenarios/testbed/incast-32.toml\n  \
daqnet testbed run scenarios/testbed/incast-32.toml --set network.switch.buffer.port_bytes=4MB\n  \
daqnet testbed up scenarios/testbed/incast-32.toml\n  \
daqnet testbed up scenarios/testbed/incast-32.toml --dry-run   # the commands, touching nothing\n  \
ip netns exec daqnet-incast-32-c0 sh   # a shell on the collector node's host\n  \
daqnet testbed down scenarios/testbed/incast-32.toml\n\
Compare with the simulator over a sweep: daqnet validate FILE --vary PATH=LIST (docs/testbed.md).")]
pub struct TestbedArgs {
    #[command(subcommand)]
    command: TestbedCommand,
}

#[derive(Subcommand)]
enum TestbedCommand {
    /// Build the testbed of a scenario and leave it up (idempotent: up twice builds once).
    Up(UpArgs),
    /// Remove a testbed: its namespaces, links, queues and any process left inside (idempotent).
    Down(DownArgs),
    /// List the testbeds on this machine.
    List,
    /// Build a testbed, run the scenario's event builder in it, remove it, write report.json.
    Run(RunArgs),
}

#[derive(Args)]
struct UpArgs {
    /// Scenario file (TOML).
    file: PathBuf,
    /// Override a field: dotted.path=value (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Testbed name (default: the scenario file's name); namespaces are daqnet-NAME-HOST.
    #[arg(long)]
    name: Option<String>,
    /// Print every step that would build the testbed, one per line, and touch nothing (no root
    /// needed): the `ip` and `tc` commands, sysctls, offload settings and Open vSwitch files.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args)]
struct DownArgs {
    /// Scenario file whose testbed to remove (its name is the file's name).
    #[arg(required_unless_present_any = ["name", "all"])]
    file: Option<PathBuf>,
    /// Testbed name.
    #[arg(long, conflicts_with = "file")]
    name: Option<String>,
    /// Remove every daqnet testbed on this machine.
    #[arg(long, conflicts_with_all = ["file", "name"])]
    all: bool,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    scenario: super::ScenarioFlags,
    /// Output folder for report.json, events.csv, roles.json and the resolved scenario.
    #[arg(long, default_value = "out/testbed")]
    out: PathBuf,
    /// Also write events.csv with one row per built event.
    #[arg(long)]
    per_event: bool,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Take a fabric element down during the run (repeatable; parallel leaf-spine only), at a
    /// time from the start of the roles: `p0-spine1@2s`, `plane1@1.5s`, `p0-leaf1:spine0@3s`.
    /// Its links go down; the controller learns of it from the bridges' port status, re-plans
    /// and replaces the rules; the report's `fabric.faults` has the times.
    #[arg(long, value_name = "ELEMENT@TIME", value_parser = clap::value_parser!(daqnet_sim::FaultPlan))]
    fail: Vec<daqnet_fabric::controller::FaultPlan>,
    /// Record time series as `daqnet sim --trace` does, with the simulator's names:
    /// `queue=PORTS,cwnd=SENDERS,every=DURATION`. Ports (`sw->node0`): the qdisc backlog and
    /// drops read over rtnetlink, to trace-ports.parquet. Senders (`ru3->node0`, `node0->ru3`):
    /// cwnd, ssthresh, SRTT, segments in flight and congestion state from each role's
    /// getsockopt(TCP_INFO), to trace-tcp.parquet. Wall time from the start of the roles;
    /// below 1ms the sampling itself takes a share of the CPU the run needs. Draw beside a
    /// simulation's with `daqnet plot SIM_DIR TESTBED_DIR --kind series`.
    #[arg(long, value_name = "SPEC", value_parser = clap::value_parser!(daqnet_sim::trace::TraceSpec))]
    trace: Option<daqnet_sim::trace::TraceSpec>,
}

/// Checks that `--trace` selects what this testbed records.
fn check_trace(plan: &TestbedPlan, trace: Option<&daqnet_sim::trace::TraceSpec>) -> anyhow::Result<()> {
    trace.map_or(Ok(()), |spec| plan.check_trace(spec).map_err(|e| anyhow::anyhow!("--trace: {e}")))
}

/// Checks the command line, the scenario and the testbed's plan without touching the system.
pub fn check(a: &TestbedArgs) -> anyhow::Result<()> {
    match &a.command {
        TestbedCommand::Up(u) => {
            TestbedPlan::checked(&super::load_run_scenario(&u.file, &u.set)?, "check", "up").map(drop)
        }
        TestbedCommand::Run(r) => {
            let sc = r.scenario.load_run()?;
            super::sim::check_faults(&sc, &r.fail)?;
            check_trace(&TestbedPlan::checked(&sc, "check", "run")?, r.trace.as_ref())
        }
        TestbedCommand::Down(_) | TestbedCommand::List => Ok(()),
    }
}

/// The default testbed name of a scenario file: its name, lower case, `a-z0-9-` only.
fn default_name(file: &Path) -> String {
    let stem = file.file_stem().map(|s| s.to_string_lossy().to_lowercase()).unwrap_or_default();
    let name: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).take(24).collect();
    let name = name.trim_matches('-').to_string();
    if name.is_empty() {
        "testbed".into()
    } else {
        name
    }
}

/// Removes leftovers of crashed or killed runs, saying which.
fn clear_leftovers() -> anyhow::Result<()> {
    for (id, why) in lifecycle::remove_leftovers()? {
        eprintln!("removed the leftover testbed {id}: {why}");
    }
    Ok(())
}

/// Runs the verb.
pub fn run(a: TestbedArgs) -> anyhow::Result<ExitCode> {
    match a.command {
        TestbedCommand::Up(u) => {
            let sc = super::load_run_scenario(&u.file, &u.set)?;
            let id = u.name.unwrap_or_else(|| default_name(&u.file));
            let p = TestbedPlan::checked(&sc, &id, &u.file.display().to_string())?;
            if u.dry_run {
                for step in p.steps() {
                    println!("{step}");
                }
                return Ok(ExitCode::SUCCESS);
            }
            lifecycle::check_prerequisites()?;
            clear_leftovers()?;
            match lifecycle::up(&p, None, &u.file.display().to_string())? {
                Up::Built(s) => println!("testbed {id}: up in {s:.1} s, {} namespaces", p.namespaces().len()),
                Up::AlreadyUp => println!("testbed {id}: already up"),
            }
            for h in &p.hosts {
                println!("  {:<5} {:<16} {}", h.name, h.ip, h.ns);
            }
            let switch = match &p.switch {
                TestbedSwitch::Bridge => "(bridge br0)".to_string(),
                // `up` only builds the namespaces; `testbed run` starts the switch process.
                TestbedSwitch::Daqring(_) => "(daqring: no switch process until `testbed run`)".into(),
                TestbedSwitch::Fabric(f) => format!(
                    "(control bridge br0; {} Open vSwitch bridges: ovs-ofctl dump-flows unix:{}/BRIDGE.mgmt)",
                    f.bridges.len(),
                    f.dir
                ),
            };
            println!("  {:<5} {:<16} {}", "sw", switch, p.switch_ns);
            println!(
                "enter a host with: ip netns exec {} bash; remove with: daqnet testbed down --name {id}",
                p.hosts[0].ns
            );
            Ok(ExitCode::SUCCESS)
        }
        TestbedCommand::Down(d) => {
            lifecycle::check_prerequisites()?;
            clear_leftovers()?;
            let ids: Vec<String> = if d.all {
                lifecycle::list().into_iter().map(|(id, _)| id).collect()
            } else {
                vec![d.name.unwrap_or_else(|| default_name(d.file.as_deref().expect("clap requires FILE or --name")))]
            };
            for id in ids {
                let n = lifecycle::down(&id)?;
                println!(
                    "testbed {id}: {}",
                    if n == 0 { "not up".to_string() } else { format!("removed {n} namespaces") }
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        TestbedCommand::List => {
            let all = lifecycle::list();
            if all.is_empty() {
                println!("no testbeds");
            }
            for (id, state) in all {
                let what = state.as_ref().map_or(String::new(), |s| format!("{}: ", s.scenario));
                let status = match (lifecycle::leftover(&state), state.and_then(|s| s.owner_pid)) {
                    (Some(why), _) => format!("leftover: {why}; the next `daqnet testbed up` or `down` removes it"),
                    (None, Some(pid)) => format!("running, owned by pid {pid}"),
                    (None, None) => "up until `daqnet testbed down`".into(),
                };
                println!("{id}: {what}{status}");
            }
            Ok(ExitCode::SUCCESS)
        }
        TestbedCommand::Run(r) => {
            let sc = r.scenario.load_run()?;
            super::sim::check_faults(&sc, &r.fail)?;
            check_trace(&TestbedPlan::checked(&sc, "check", &r.scenario.origin())?, r.trace.as_ref())?;
            lifecycle::check_prerequisites()?;
            // No earlier run's trace may pass for this one's.
            let traces = [daqnet_study::columnar::TRACE_PORTS, daqnet_study::columnar::TRACE_TCP];
            super::clear_outputs(&r.out, &traces)?;
            // From here Ctrl-C stops the run and removes the testbed instead of killing us.
            let stop = daqnet_evb::launcher::interrupted();
            clear_leftovers()?;
            let opts = TestbedRunOptions {
                exe: std::env::current_exe()?,
                origin: r.scenario.origin(),
                out: r.out.clone(),
                per_event: r.per_event,
                quiet: r.quiet,
                stop: Some(stop),
                faults: r.fail.clone(),
                trace: r.trace.clone(),
            };
            let done = match daqnet_testbed::run::run(&sc, &opts) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    return Ok(ExitCode::from(1));
                }
            };
            super::run::parquet_outputs(&r.out, &done.report, r.per_event)?;
            if !r.quiet {
                print!("{}", done.report.summary_table());
                for l in daqnet_study::verdict::verdict(&done.report, &sc, &r.scenario.origin()) {
                    println!("{l}");
                }
                println!("  {:<26} {:.1} s ({} namespaces)", "testbed build", done.build_s, done.namespaces);
                if let Some(check) = done.report.fabric.as_ref().and_then(|f| f.spine_check.as_ref()) {
                    let verdict = if check.off_plan.is_empty() {
                        "confirm the plan".to_string()
                    } else {
                        format!("disagree with the plan: {}", check.off_plan.join("; "))
                    };
                    println!(
                        "  {:<26} {} spines, {} packets to nodes: {verdict}",
                        "flow counters", check.spines, check.packets
                    );
                }
                println!(
                    "  {:<26} {} (peak backlog sampled every {} ms)",
                    "report",
                    r.out.join("report.json").display(),
                    SAMPLE_INTERVAL.as_millis()
                );
            }
            if done.report.interrupted {
                eprintln!("interrupted: the testbed has been removed; the report covers the run until then");
                return Ok(ExitCode::from(130));
            }
            super::say_failure(r.quiet, done.exit_code, &done.report, &r.out.join("report.json"));
            Ok(ExitCode::from(done.exit_code.clamp(0, 255) as u8))
        }
    }
}
