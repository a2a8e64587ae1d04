//! `daqnet sweep`, `plot` and `study` as a user runs them.

mod common;
use common::{daqnet, out_dir, text};
use std::path::{Path, PathBuf};
use std::process::Output;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Six incast points (3 buffers x 2 unit counts), 10 events each: a fraction of a second.
fn sweep(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "sweep",
        "scenarios/incast-micro.toml",
        "--vary",
        "network.switch.buffer.port_bytes=100kB,1MB,4MB",
        "--vary",
        "system.readout_units=8,32",
        "--events",
        "10",
        "--out",
        s(out),
    ];
    args.extend_from_slice(extra);
    daqnet(&args)
}

#[test]
fn resume_skips_finished_points() {
    let out = out_dir("resume");
    let o = sweep(&out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("6 points run, 0 already done; 6 rows"), "{}", text(&o));
    let report = |i: usize| std::fs::read_to_string(out.join(format!("points/p{i:04}/report.json"))).unwrap();
    let before: Vec<String> = (0..6).map(report).collect();
    // An interrupted sweep: one point never finished.
    std::fs::remove_dir_all(out.join("points/p0004")).unwrap();
    let o = sweep(&out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("1 points run, 5 already done; 6 rows"), "{}", text(&o));
    // Said on stderr even without a terminal for the progress bar.
    assert!(String::from_utf8_lossy(&o.stderr).contains("resuming: 5 of 6 points already done"), "{}", text(&o));
    for i in [0, 1, 2, 3, 5] {
        // wall_s differs between runs, so an identical file means the point did not run again.
        assert_eq!(report(i), before[i], "point {i} was not rerun");
    }
    // The rerun point got the same (deterministic) result.
    let strip = |t: &str| {
        t.lines().filter(|l| !l.contains("wall_s") && !l.contains("sim_events_per_s")).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(strip(&report(4)), strip(&before[4]));
    // A different sweep into the same folder is refused rather than mixed in.
    let o = daqnet(&["sweep", "scenarios/incast-micro.toml", "--vary", "system.readout_units=4", "--out", s(&out)]);
    assert!(!o.status.success());
    assert!(text(&o).contains("holds a different sweep"), "{}", text(&o));
}

/// The batch form: shards write into one folder, `sweep resume` runs what is missing and
/// writes the whole table — the unsharded one.
#[test]
fn shards_into_one_folder_resumed_equal_the_unsharded_table() {
    let (whole, one) = (out_dir("whole-one"), out_dir("one"));
    assert!(sweep(&whole, &[]).status.success());
    let o = sweep(&one, &["--shard", "1/2"]);
    assert!(text(&o).contains("3 points run"), "{}", text(&o));
    let o = daqnet(&["sweep", "resume", s(&one), "--shard", "1/2"]);
    assert!(text(&o).contains("0 points run, 3 already done; 3 rows"), "{}", text(&o));
    let o = daqnet(&["sweep", "resume", s(&one)]);
    assert!(text(&o).contains("3 points run, 3 already done; 6 rows"), "{}", text(&o));
    for t in ["table.csv", "table.parquet"] {
        assert_eq!(std::fs::read(one.join(t)).unwrap(), std::fs::read(whole.join(t)).unwrap(), "{t}");
    }
    let o = daqnet(&["sweep", "resume", s(&out_dir("no-sweep"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("not a sweep folder (it has no sweep.json)"), "{}", text(&o));
}

#[test]
fn shards_merged_equal_the_unsharded_table() {
    let (whole, a, b, merged) = (out_dir("whole"), out_dir("shard0"), out_dir("shard1"), out_dir("merged"));
    assert!(sweep(&whole, &["--jobs", "2"]).status.success());
    let o = sweep(&a, &["--shard", "0/2"]);
    assert!(text(&o).contains("3 points run"), "{}", text(&o));
    let o = sweep(&b, &["--shard", "1/2", "--jobs", "1"]);
    assert!(text(&o).contains("3 points run"), "{}", text(&o));
    let o = daqnet(&["sweep", "merge", s(&a), s(&b), "--out", s(&merged)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("6 of 6 points"), "{}", text(&o));
    let table = |d: &Path| std::fs::read_to_string(d.join("table.csv")).unwrap();
    assert_eq!(table(&merged), table(&whole));
    // The same table in Parquet (its content is checked in daqnet-study's columnar tests), and
    // the same whether merged or not.
    let parquet = |d: &Path| std::fs::read(d.join("table.parquet")).expect("table.parquet beside table.csv");
    assert!(parquet(&whole).starts_with(b"PAR1") && parquet(&whole).ends_with(b"PAR1"));
    assert_eq!(parquet(&merged), parquet(&whole));
    assert_eq!(table(&whole).lines().count(), 7, "header + 6 points");
    // The table holds real results: the 100 kB buffer times out with 32 units, 4 MB never does.
    let rows: Vec<Vec<String>> = table(&whole).lines().map(|l| l.split(',').map(String::from).collect()).collect();
    let col = |name: &str| rows[0].iter().position(|c| c == name).unwrap();
    let (buf, n, mean) = (col("network.switch.buffer.port_bytes"), col("system.readout_units"), col("latency_mean_ms"));
    let mean_of = |b: &str, u: &str| -> f64 {
        rows[1..].iter().find(|r| r[buf] == b && r[n] == u).unwrap()[mean].parse().unwrap()
    };
    assert!(mean_of("100kB", "32") > 200.0, "{}", mean_of("100kB", "32"));
    assert!((mean_of("4MB", "32") - 17.9).abs() < 1.0, "{}", mean_of("4MB", "32"));
    // Merging shards of different sweeps is refused.
    let other = out_dir("other");
    daqnet(&[
        "sweep",
        "scenarios/incast-micro.toml",
        "--vary",
        "system.readout_units=4",
        "--events",
        "5",
        "--out",
        s(&other),
    ]);
    let o = daqnet(&["sweep", "merge", s(&a), s(&other), "--out", s(&out_dir("bad-merge"))]);
    assert!(!o.status.success() && text(&o).contains("hold different sweeps"), "{}", text(&o));
}

#[test]
fn bad_vary_paths_and_values_are_clear_errors() {
    let out = out_dir("bad");
    for (vary, want) in [
        ("system.credits=1,2", "unknown field `credits`"),
        ("system.readout_units=8,many", "--vary system.readout_units: value `many` is not allowed"),
        ("system.readout_units=0..4", "value `0` is not allowed"),
        ("network.switch.buffer.port_bytes=1MB..100kB:1kB", "below start"),
        ("system.readout_units", "expected path=LIST"),
        ("system.readout_units=1..9:x", "is not a range"),
    ] {
        let o = daqnet(&["sweep", "scenarios/incast-micro.toml", "--vary", vary, "--out", s(&out)]);
        assert_eq!(o.status.code(), Some(2), "{vary}: {}", text(&o));
        assert!(text(&o).contains(want), "--vary {vary}: wanted `{want}` in:\n{}", text(&o));
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
    }
    let o = daqnet(&["sweep", "scenarios/incast-micro.toml", "--vary", "system.readout_units=4", "--shard", "2/2"]);
    assert!(text(&o).contains("0 <= I < N"), "{}", text(&o));
    assert!(!out.join("points").exists(), "nothing ran");
}

/// Share of pixels that are not white: a drawn figure has axes, labels, boxes and lines.
fn ink(png_path: &Path) -> f64 {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let inked = pixels.chunks(px).filter(|p| p.iter().take(3).any(|&c| c < 200)).count();
    inked as f64 / (pixels.len() / px) as f64
}

#[test]
fn quick_studies_produce_figures() {
    let o = daqnet(&["study", "--list"]);
    assert!(o.status.success(), "{}", text(&o));
    let names: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "atlas-roi",
            "daq-nets",
            "daqpipe",
            "daqpipe-iperf",
            "daqpipe-lossless",
            "fabric",
            "fig10",
            "fig11",
            "fig12",
            "fig13",
            "fig5",
            "lossless-fig4",
            "lossless-fig5",
            "remedies",
            "subfarm",
            "subfarm-host",
            "switch1-lossless"
        ]
    );
    for name in &names {
        let out = out_dir(&format!("study-{name}"));
        let o = daqnet(&["study", name, "--quick", "--out", s(&out)]);
        assert!(o.status.success(), "{name}: {}", text(&o));
        let figures: Vec<PathBuf> = std::fs::read_dir(out.as_path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "png"))
            .collect();
        assert!(!figures.is_empty(), "{name} drew no figure");
        for f in &figures {
            let share = ink(f);
            assert!(share > 0.01 && share < 0.6, "{}: {:.3} of the pixels inked", f.display(), share);
        }
    }
}

#[test]
fn plot_names_what_is_wrong() {
    let out = out_dir("plot");
    assert!(sweep(&out, &[]).status.success());
    let o = daqnet(&["plot", s(&out), "--x", "credits", "-o", s(&out.join("a.png"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("no column `credits`; columns are: point, series"), "{}", text(&o));
    let o =
        daqnet(&["plot", s(&out), "--x", "readout_units", "--where", "readout_units=7", "-o", s(&out.join("a.png"))]);
    assert!(text(&o).contains("keeps no row") && text(&o).contains("takes: 32, 8"), "{}", text(&o));
    std::fs::write(out.join("other.csv"), "a,b\n1,2\n").unwrap();
    let o = daqnet(&["plot", s(&out.join("other.csv")), "--x", "a", "-o", s(&out.join("a.png"))]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("box plots need a sweep's table.csv"), "{}", text(&o));
    let o = daqnet(&["plot", s(&out), "--x", "readout_units", "-o", s(&out.join("a.jpg"))]);
    assert!(text(&o).contains("must end in .png, .svg or .pdf"), "{}", text(&o));
    let o = daqnet(&["plot", s(&out), "--x", "readout_units", "-o", s(&out.join("a.pdf"))]);
    assert!(o.status.success(), "{}", text(&o));
    let pdf = std::fs::read(out.join("a.pdf")).unwrap();
    assert!(pdf.starts_with(b"%PDF-") && pdf.len() > 5000, "a PDF of {} bytes", pdf.len());
    // SVG and a grouped line plot with a unit-suffixed, categorical-looking x column.
    let o = daqnet(&[
        "plot",
        s(&out),
        "--x",
        "port_bytes",
        "--y",
        "drops",
        "--group",
        "readout_units",
        "--kind",
        "line",
        "--log-x",
        "-o",
        s(&out.join("drops.svg")),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let svg = std::fs::read_to_string(out.join("drops.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("buffer per port") && svg.contains("polyline"), "an SVG with a line");
    // Histograms without per-event records come from each report's HDR histogram.
    let o = daqnet(&[
        "plot",
        s(&out),
        "--kind",
        "hist",
        "--x",
        "readout_units",
        "--group",
        "port_bytes",
        "--log-y",
        "-o",
        s(&out.join("h.png")),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(ink(&out.join("h.png")) > 0.01);
}

#[test]
fn a_traced_sweep_keeps_each_points_trace_in_its_folder() {
    let traced = |dir: &Path, vary: &str, trace: &str| {
        let args = ["sweep", "scenarios/incast-micro.toml", "--vary", vary, "--events", "10", "--out", s(dir)];
        daqnet(&[&args[..], &["--trace", trace]].concat())
    };
    let dir = out_dir("sweep-trace");
    let o = traced(&dir, "network.switch.buffer.port_bytes=100kB,4MB", "queue=sw->node0,cwnd=ru0->node0");
    assert!(o.status.success(), "{}", text(&o));
    for p in ["p0000", "p0001"] {
        for f in ["trace-ports.parquet", "trace-tcp.parquet", "report.json"] {
            let path = dir.join("points").join(p).join(f);
            assert!(std::fs::metadata(&path).is_ok_and(|m| m.len() > 0), "{} missing", path.display());
        }
    }
    assert!(!dir.join(".trace-scratch").exists(), "the scratch folder is removed");
    // A name that a varied field removes is refused before anything runs.
    let o = traced(&out_dir("sweep-trace-bad"), "system.readout_units=40,4", "cwnd=ru39->node0");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--trace, point 1: `ru39->node0` matches no TCP sender"), "{}", text(&o));
}
