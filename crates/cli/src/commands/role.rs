//! `daqnet role`: one role of a real run, alone, for deployment on many hosts. The arguments
//! ([`RoleArgs`]) belong to `daqnet-evb`, whose launcher builds them for `daqnet run`.

use anyhow::Context;
use daqnet_core::report::FaultRecord;
use daqnet_core::{EventId, Scenario};
use daqnet_evb::block_on;
use daqnet_evb::launcher::check_duration;
use daqnet_evb::role::{RoleArgs, RoleId};
use daqnet_evb::roles::supervisor::state::Progress;
use daqnet_evb::roles::{collector, readout, supervisor};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

/// Runs the verb.
pub fn run(a: RoleArgs) -> anyhow::Result<ExitCode> {
    let sc = daqnet_evb::load_run_scenario(&a.scenario, &a.set)?;
    let supervisor_addr = a.supervisor.clone().unwrap_or_else(|| sc.deploy.supervisor.clone());
    let layout = sc.layout();
    match a.role_id() {
        RoleId::Readout(r) => {
            anyhow::ensure!(
                layout.has_readout(r),
                "--index {r}: the scenario has readout units 0..{}",
                layout.readout_units()
            );
            let corrupt_events = a.corrupt_event.iter().map(|&e| EventId(e)).collect();
            let trace = a.trace.map(|t| (t, a.out));
            let opts = readout::ReadoutOptions {
                index: r,
                supervisor: supervisor_addr,
                listen: a.listen,
                corrupt_events,
                trace,
            };
            role_exit(block_on(1, readout::run(&sc, opts))?)
        }
        RoleId::Collector(n) => {
            anyhow::ensure!(layout.has_node(n), "--index {n}: the scenario has nodes 0..{}", layout.nodes());
            let trace = a.trace.map(|t| (t, a.out));
            let opts = collector::CollectorOptions { index: n, supervisor: supervisor_addr, trace };
            // One thread: fragments are verified on the connection tasks, between the loop's turns.
            role_exit(block_on(1, collector::run(&sc, opts))?)
        }
        RoleId::Supervisor => run_supervisor(a, &sc),
        RoleId::Sfc => run_sfc(a, &sc),
        RoleId::Worker(w) => {
            let workers = sc.farm.as_ref().map_or(0, |f| f.workers);
            anyhow::ensure!(w.0 < workers, "--index {w}: the scenario's [farm] has workers 0..{workers}");
            role_exit(daqnet_evb::farm::worker::run(&sc, w, &supervisor_addr))
        }
    }
}

/// The sub-farm controller: like the supervisor, the run's rendezvous and the report's author.
fn run_sfc(a: RoleArgs, sc: &Scenario) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(sc.farm.is_some(), "{}: the scenario has no [farm] section", a.scenario.display());
    let opts = daqnet_evb::farm::sfc::SfcOptions {
        origin: a.origin.clone().unwrap_or_else(|| a.scenario.display().to_string()),
        listen: a.listen.clone(),
        launched: a.launched,
        stop: daqnet_evb::launcher::interrupted(),
        per_event: a.per_event,
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let (mut report, records) = daqnet_evb::farm::sfc::run(sc, opts)?;
    if a.per_event {
        // A failed write (none left behind) is the SFC's fault, named in the report, as the
        // supervisor's; the report may still fit where the rows did not.
        if let Err(e) = super::write_file(&a.out, "events.csv", &daqnet_core::report::EventRecord::to_csv(&records)) {
            eprintln!("error: {e:#}");
            let reason = e.chain().skip(1).map(|c| c.to_string()).collect::<Vec<_>>().join(": ");
            let (role, at_s) = ("sfc".to_string(), report.wall_s);
            let fault = FaultRecord { at_s, role: role.clone(), noticed_by: role, reason, lost_events: vec![] };
            report.faults.push(fault);
        }
    }
    // The report last: its presence says the run's files are complete.
    let path = super::write_file(&a.out, "report.json", &report.to_json())?;
    if !a.quiet {
        super::print_lines(&format!("{}  {:<26} {}\n", report.summary_table(), "report", path.display()));
    }
    let nb = &report.events_not_built;
    let ok = report.faults.is_empty() && !report.interrupted && nb.lost + nb.abandoned + nb.timed_out == 0;
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn run_supervisor(a: RoleArgs, sc: &Scenario) -> anyhow::Result<ExitCode> {
    if let Some(d) = a.duration_s {
        check_duration("--duration-s", d)?;
    }
    let show = !a.quiet && !a.launched && std::io::stderr().is_terminal();
    let bar = progress_bar(show, a.duration_s.is_none().then_some(sc.run.warmup_events + sc.run.events));
    let opts = supervisor::SupervisorOptions {
        origin: a.origin.clone().unwrap_or_else(|| a.scenario.display().to_string()),
        listen: a.listen.clone(),
        launched: a.launched,
        metrics: a.metrics.clone(),
        duration: a.duration_s.map(Duration::from_secs_f64),
        per_event: a.per_event.then(|| a.out.join("events.csv")),
        progress: Some(Box::new({
            let bar = bar.clone();
            move |p: &Progress| show_progress(&bar, p)
        })),
    };
    std::fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let outcome = block_on(1, supervisor::run(sc, opts))??;
    bar.finish_and_clear();
    // The report last: its presence says the run's files are complete.
    let path = super::write_file(&a.out, "report.json", &outcome.report.to_json())?;
    if !a.quiet {
        super::print_lines(&format!("{}  {:<26} {}\n", outcome.report.summary_table(), "report", path.display()));
    } else if !a.launched {
        // Quiet means no summary, not no errors.
        for f in &outcome.report.faults {
            eprintln!("supervisor: {}: {}", f.role, f.reason);
        }
    }
    Ok(if outcome.ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn progress_bar(show: bool, total: Option<u64>) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = match total {
        Some(t) => ProgressBar::new(t).with_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} events  {elapsed}  {msg}").expect("valid template"),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {pos} events  {elapsed}  {msg}").expect("valid template"),
        ),
    };
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn show_progress(bar: &ProgressBar, p: &Progress) {
    bar.set_position(p.finished);
    let faults = if p.faults == 0 { String::new() } else { format!("  {} faults", p.faults) };
    bar.set_message(format!(
        "{:.0} Hz  {:.2} Gb/s  {} in flight  {} credits in use{faults}",
        p.rate_hz,
        p.goodput_bps / 1e9,
        p.in_flight,
        p.credits_in_use
    ));
}

fn role_exit(r: anyhow::Result<()>) -> anyhow::Result<ExitCode> {
    match r {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("error: {e:#}");
            Ok(ExitCode::from(1))
        }
    }
}
