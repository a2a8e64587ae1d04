//! `daqnet plan`: plan a parallel leaf-spine fabric — formulas, flow placement, link loads,
//! OpenFlow rules.

use anyhow::Context;
use clap::{Args, ValueEnum};
use daqnet_core::scenario::Assignment;
use daqnet_fabric::rules::{self, Bridge};
use daqnet_fabric::shape::Shape;
use daqnet_fabric::{plan, Element, Failures, Outcome, Plan};
use daqnet_study::table::aligned;
use std::path::PathBuf;
use std::process::ExitCode;

/// Plan a parallel leaf-spine DAQ fabric ([LOSSLESS] §V): bandwidth by the paper's formulas
/// (1)–(4), where each readout unit → collector flow goes (the controller's per-collector
/// plane and spine, or ECMP hashing), the max-min fair rates that follow, and how crowded
/// every tier is. Nothing is run; the scenario needs `topology = "parallel_leaf_spine"`.
///
/// Rates are link bandwidth, as in the paper's formulas; goodput is lower by the payload share
/// of a frame (99 % at MTU 9000, 94 % at 1500).
#[derive(Args)]
#[command(after_help = "Examples:\n  \
daqnet plan scenarios/fabric/prototype.toml\n  \
daqnet plan scenarios/fabric/prototype.toml --fail p0-spine1 --assignment controller\n  \
daqnet plan scenarios/fabric/fig10.toml --set network.fabric.spines_per_plane=4 --json\n  \
daqnet plan scenarios/fabric/prototype.toml --rules out/rules")]
pub struct PlanArgs {
    #[command(flatten)]
    pub scenario: super::ScenarioFlags,
    /// Which placement to plan: the controller's, ECMP's, or both side by side.
    #[arg(long, value_enum, default_value = "both")]
    pub assignment: Which,
    /// Take an element down before planning (repeatable): a plane (`plane1`), a spine
    /// (`p0-spine1`: plane 0's spine 1) or a leaf's link to a spine (`p0-leaf2:spine1`).
    #[arg(long, value_name = "ELEMENT")]
    pub fail: Vec<Element>,
    /// Print the plan as JSON (every collector's route and every loaded link) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also list every link that carries flows, busiest first.
    #[arg(long)]
    pub links: bool,
    /// Write OpenFlow rules (`ovs-ofctl add-flows` files, one per bridge) for the scenario's
    /// `network.fabric.assignment` into this folder. Every packet is followed through them
    /// first; rules that would loop or drop are refused.
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
}

/// Which placements to plan.
#[derive(Clone, Copy, ValueEnum)]
pub enum Which {
    /// [LOSSLESS] §V-B: a collector's flows on one plane and spine, spread evenly.
    Controller,
    /// Each flow hashed onto a plane and a spine.
    Ecmp,
    /// Both, side by side.
    Both,
}

/// Checks the scenario and the failures without planning.
pub fn check(a: &PlanArgs) -> anyhow::Result<()> {
    let sc = a.scenario.load()?;
    let shape = Shape::of(&sc)?;
    Failures(a.fail.clone()).check(&shape)?;
    Ok(())
}

/// Runs the verb.
pub fn run(a: PlanArgs) -> anyhow::Result<ExitCode> {
    let sc = a.scenario.load()?;
    let own = sc.network.fabric.as_ref().map_or(Assignment::Controller, |f| f.assignment);
    let mut assignments = match a.assignment {
        Which::Controller => vec![Assignment::Controller],
        Which::Ecmp => vec![Assignment::Ecmp],
        Which::Both => Assignment::ALL.to_vec(),
    };
    if a.rules.is_some() && !assignments.contains(&own) {
        assignments.push(own);
    }
    let failures = Failures(a.fail.clone());
    let p = plan(&sc, &failures, &assignments)?;
    if let Some(dir) = &a.rules {
        let o = p.outcomes.iter().find(|o| o.assignment == own.name()).expect("planned above");
        let written = write_rules(&p.shape, o, dir)?;
        eprintln!("wrote {written} rule files ({} placement) to {}", own.name(), dir.display());
    }
    if a.json {
        super::print_lines(&(serde_json::to_string_pretty(&p)? + "\n"));
    } else {
        super::print_lines(&text(&p, a.links));
    }
    Ok(ExitCode::SUCCESS)
}

fn write_rules(shape: &Shape, o: &Outcome, dir: &std::path::Path) -> anyhow::Result<usize> {
    let tables = rules::rules(shape, &o.placement)?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (bridge, rules) in &tables {
        let text = rules::flows_file(shape, *bridge, rules);
        super::write_file(dir, &format!("{bridge}.flows"), &text)?;
    }
    let bridges: Vec<String> = tables.keys().map(Bridge::to_string).collect();
    super::write_file(dir, "bridges.txt", &(bridges.join("\n") + "\n"))?;
    Ok(tables.len())
}

fn gbps(bps: f64) -> String {
    format!("{:.3} Gb/s", bps / 1e9)
}

fn text(p: &Plan, links: bool) -> String {
    let s = &p.shape;
    let f = &p.formulas;
    let mut out = format!(
        "fabric: pods {}, planes {}, spines per plane {}; readout units {} ({} per pod, each on {} of the planes), \
         racks {} ({} per pod, each on {} of the planes) of {} nodes each\n",
        s.pods,
        s.planes,
        s.spines,
        s.readout_units(),
        s.readout_per_pod,
        s.readout_uplinks,
        s.racks(),
        s.racks_per_pod,
        s.rack_uplinks,
        s.nodes_per_rack
    );
    out += &format!(
        "links: readout {}, rack uplink {}, leaf-spine {}, node {}\n",
        gbps(s.readout_bps as f64),
        gbps(s.rack_uplink_bps as f64),
        gbps(s.spine_bps as f64),
        gbps(s.node_bps as f64)
    );
    if !p.failed.is_empty() {
        out += &format!("down: {}\n", p.failed.join(", "));
    }
    out += "\nformulas of [LOSSLESS] §V-B (a flow: one readout unit to one rack through one plane)\n";
    let interpod = f.interpod_bps.map_or("- (one pod)".to_string(), gbps);
    let rows = vec![
        vec!["b / n_H".into(), "a readout uplink's share".into(), gbps(f.readout_link_share_bps)],
        vec!["b / n_R".into(), "a leaf → rack link's share".into(), gbps(f.rack_link_share_bps)],
        vec!["(3)".into(), "interpod share of the leaf ↔ spine links".into(), interpod],
        vec!["(2)".into(), format!("B_RH per flow (bottleneck: {})", f.bottleneck.name()), gbps(f.flow_bps)],
        vec!["(1)".into(), "B_DAQ = n_p · n_H · n_R · B_RH".into(), gbps(f.daq_bps)],
        vec!["".into(), "nodes' links (not in the paper)".into(), gbps(f.node_links_bps)],
        vec!["".into(), "bound: min of the two".into(), gbps(f.bound_bps)],
    ];
    out += &aligned(&["".into(), "term".into(), "value".into()], &rows);
    if !f.symmetric || !p.failed.is_empty() {
        out += "(the formulas assume every host on every plane and nothing down: see the placements below)\n";
    }
    if p.outcomes.is_empty() {
        return out;
    }
    out += "\nplacements (event building: a collector's flows share one rate)\n";
    let rows: Vec<Vec<String>> = p
        .outcomes
        .iter()
        .map(|o| {
            vec![
                o.assignment.to_string(),
                gbps(o.building_bps),
                gbps(o.equal_rate_bps),
                format!("{:.3} .. {:.3}", o.collector_bps.0 / 1e9, o.collector_bps.1 / 1e9),
                gbps(o.independent_flows_bps),
                o.collectors.iter().filter(|c| c.route == "mixed").count().to_string(),
            ]
        })
        .collect();
    let header = ["assignment", "max-min", "equal rates", "collector Gb/s", "independent flows", "split collectors"];
    out += &aligned(&header.map(String::from), &rows);
    out += "\nper tier: flows per link (min / mean / max) and load (mean / max) under max-min rates\n";
    let mut rows = Vec::new();
    for o in &p.outcomes {
        for t in &o.tiers {
            rows.push(vec![
                o.assignment.to_string(),
                t.tier.name().to_string(),
                t.links.to_string(),
                format!("{} / {:.1} / {}", t.flows_min, t.flows_mean, t.flows_max),
                format!("{:.0} % / {:.0} %", 100.0 * t.load_mean, 100.0 * t.load_max),
            ]);
        }
    }
    out += &aligned(&["assignment", "tier", "links", "flows", "load"].map(String::from), &rows);
    if links {
        for o in &p.outcomes {
            out += &format!("\nlinks with flows, {} (busiest first)\n", o.assignment);
            let mut l: Vec<_> = o.links.iter().collect();
            l.sort_by(|a, b| (b.load_bps / b.capacity_bps as f64).total_cmp(&(a.load_bps / a.capacity_bps as f64)));
            let rows: Vec<Vec<String>> = l
                .iter()
                .map(|l| {
                    vec![
                        l.name.clone(),
                        l.flows.to_string(),
                        gbps(l.load_bps),
                        format!("{:.0} %", 100.0 * l.load_bps / l.capacity_bps as f64),
                    ]
                })
                .collect();
            out += &aligned(&["link", "flows", "load", "of capacity"].map(String::from), &rows);
        }
    }
    out
}
