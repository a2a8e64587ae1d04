//! Every command the documentation shows works as written: the shell blocks of README.md and
//! docs/*.md, and the examples of every verb's `--help`, run in a scratch folder that sees the
//! repository's scenarios and studies, in the order a reader meets them (a plot after the sweep
//! it draws from).
//!
//! Commands that take minutes are scaled down — `--events 20` with 20 warm-up events,
//! `--repeat 1`, `--duration-s 2`, studies `--quick` — which changes how long they run, not
//! whether their files, fields and flags are right. Commands that need other hosts, a testbed
//! (root, namespaces: `tests/testbed.rs` runs those), a fixed port or minutes of benchmarks run
//! with `DAQNET_PARSE_ONLY=1`: the binary checks the command line, the scenario with its `--set`
//! values, every `--vary` point and the testbed's plan, then stops. Where the README shows what
//! a command prints, every line it shows must be in the output.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A command as the documentation writes it, and where.
#[derive(Debug, Clone)]
struct DocCommand {
    origin: String,
    args: Vec<String>,
    /// `> FILE` at the end of the line: stdout goes there.
    redirect: Option<String>,
    /// Lines the documentation says the command prints.
    prints: Vec<String>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Splits a command line into words: whitespace-separated, with '…' and "…" quoting.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A documented line as daqnet arguments: host prompts (`10.0.0.1$ `) and comments removed,
/// `cargo run --release [-q] --` read as `daqnet`. None for what is not a daqnet command.
fn parse_line(origin: String, line: &str) -> Option<DocCommand> {
    let line = line.split(" #").next().unwrap_or(line).trim();
    let line = match line.split_once("$ ") {
        Some((host, rest)) if !host.contains(' ') => rest,
        _ => line,
    };
    let mut w = words(line);
    let start = if w.first().map(String::as_str) == Some("daqnet") {
        1
    } else if w.first().map(String::as_str) == Some("mpirun") {
        // `mpirun [its flags] daqnet …`: the daqnet part is checked.
        w.iter().position(|x| x == "daqnet" || x.ends_with("/daqnet"))? + 1
    } else if w.starts_with(&["cargo".into(), "run".into()]) {
        w.iter().position(|x| x == "--")? + 1
    } else {
        return None;
    };
    w.drain(..start);
    let redirect = w.iter().position(|x| x == ">").map(|i| {
        let f = w.get(i + 1).cloned().unwrap_or_default();
        w.truncate(i);
        f
    });
    Some(DocCommand { origin, args: w, redirect, prints: Vec::new() })
}

/// Joins lines ending in `\` with the next, keeping the first line's number.
fn logical_lines<'a>(lines: impl Iterator<Item = (usize, &'a str)>) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (n, l) in lines {
        let (body, cont) = match l.trim_end().strip_suffix('\\') {
            Some(b) => (b.to_string(), true),
            None => (l.to_string(), false),
        };
        match out.last_mut() {
            Some((_, prev)) if open => prev.push_str(&format!(" {}", body.trim())),
            _ => out.push((n, body)),
        }
        open = cont;
    }
    out
}

/// The commands of a Markdown file's `sh` blocks; a `text` block after one (with only prose
/// between) is what its last command prints.
fn from_markdown(file: &str) -> Vec<DocCommand> {
    let text = std::fs::read_to_string(repo().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<DocCommand> = Vec::new();
    let mut i = 0;
    let mut last_block_was_sh = false;
    while i < lines.len() {
        let Some(lang) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let end = (i + 1..lines.len()).find(|&j| lines[j].starts_with("```")).expect("closed block");
        let body = (i + 1..end).map(|j| (j + 1, lines[j]));
        match lang {
            "sh" => {
                for (n, l) in logical_lines(body) {
                    out.extend(parse_line(format!("{file}:{n}"), &l));
                }
                last_block_was_sh = true;
            }
            "text" if last_block_was_sh => {
                let c = out.last_mut().expect("a command before its output");
                c.prints = body.map(|(_, l)| l.to_string()).collect();
                last_block_was_sh = false;
            }
            _ => last_block_was_sh = false,
        }
        i = end + 1;
    }
    out
}

/// The examples of `daqnet VERB --help`: indented lines after `Examples:` that are commands.
fn from_help(verb: &str) -> Vec<DocCommand> {
    let o = common::daqnet(&[verb, "--help"]);
    assert!(o.status.success(), "daqnet {verb} --help: {}", common::text(&o));
    let help = String::from_utf8(o.stdout).expect("utf-8 help");
    let Some(at) = help.lines().position(|l| l.starts_with("Example")) else {
        return Vec::new();
    };
    let tail = help.lines().enumerate().skip(at + 1);
    logical_lines(tail)
        .into_iter()
        .filter(|(_, l)| l.starts_with("  "))
        .filter_map(|(n, l)| parse_line(format!("daqnet {verb} --help, line {}", n + 1), &l))
        .collect()
}

/// How a command is tested.
#[derive(Debug, PartialEq)]
enum Mode {
    /// Run for real (scaled down).
    Run,
    /// Checked by `DAQNET_PARSE_ONLY`, and why not run.
    ParseOnly(&'static str),
    /// A template with placeholders (FILE, `...`, `$VAR`): a pattern, not a command.
    Template,
}

fn mode(c: &DocCommand) -> Mode {
    let has = |f: &str| c.args.iter().any(|a| a == f || a.starts_with(&format!("{f}=")));
    let template =
        |a: &String| a == "FILE" || a.contains("...") || a.contains('…') || a.contains('$') || a.contains("LIST");
    if c.args.iter().any(template) {
        return Mode::Template;
    }
    match c.args.first().map(String::as_str) {
        Some("bench") => Mode::ParseOnly("minutes of benchmarks"),
        Some("role") => Mode::ParseOnly("one role of a run across hosts"),
        Some("testbed" | "validate" | "switch") => Mode::ParseOnly("needs root and namespaces: tests/testbed.rs"),
        Some("plot") if c.args.iter().any(|a| a.contains("testbed")) => {
            Mode::ParseOnly("draws a testbed run's output, which needs root (tests/testbed.rs)")
        }
        Some("run") if has("--metrics") => Mode::ParseOnly("serves a fixed port"),
        Some("sweep") if has("--slurm") => Mode::ParseOnly("needs a Slurm cluster (tests/slurm.rs)"),
        Some("sweep") if c.args.get(1).is_some_and(|a| a == "resume") => {
            Mode::ParseOnly("resumes a sweep folder of a cluster (tests/slurm.rs)")
        }
        Some("pipe") if has("--kill") => Mode::ParseOnly("exits 1 by design: a node dies (tests/pipe.rs)"),
        Some("pipe") if c.args.iter().any(|a| a == "mpi") => Mode::ParseOnly("runs under mpirun (tests/pipe.rs)"),
        _ => Mode::Run,
    }
}

/// The command scaled down to seconds.
fn scaled(args: &[String]) -> Vec<String> {
    let verb = args[0].as_str();
    let mut out = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--events" | "--repeat" | "--duration-s" => {
                it.next();
            }
            _ => out.push(a.clone()),
        }
    }
    if matches!(verb, "sim" | "sweep" | "run") {
        let duration = args.iter().any(|a| a == "--duration-s");
        if duration {
            out.extend(["--duration-s".into(), "2".into()]);
        } else {
            out.extend(["--events".into(), "20".into()]);
        }
        out.extend(["--set".into(), "run.warmup_events=20".into()]);
    }
    if verb == "study" && !args.iter().any(|a| a == "--quick" || a == "--list") {
        out.push("--quick".into());
    }
    out
}

/// Runs `args` in `cwd` with at most `limit` of wall time; (success, output).
fn run(cwd: &Path, args: &[String], parse_only: bool, limit: Duration) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_daqnet"));
    cmd.current_dir(cwd).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if parse_only {
        cmd.env("DAQNET_PARSE_ONLY", "1");
    }
    let mut child = cmd.spawn().expect("daqnet starts");
    let deadline = Instant::now() + limit;
    // Reading the pipes in threads keeps a chatty child from blocking on a full pipe.
    let (mut so, mut se) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
    let out = std::thread::spawn(move || std::io::read_to_string(&mut so).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(&mut se).unwrap_or_default());
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (out.join().expect("reader"), err.join().expect("reader"));
    match status {
        Some(s) => (s.success(), out, err),
        None => (false, out, format!("{err}\nkilled after {limit:?}")),
    }
}

/// The documentation, in the order a reader meets it.
fn documented() -> Vec<DocCommand> {
    let mut all = from_markdown("README.md");
    let docs = ["scenarios", "sim", "studies", "run", "testbed", "testbed-validation", "switch", "subfarm", "daqpipe"];
    for f in docs.map(|d| format!("docs/{d}.md")) {
        all.extend(from_markdown(&f));
    }
    for verb in [
        "scenario", "sim", "sweep", "plot", "study", "run", "pipe", "testbed", "validate", "switch", "role", "bench",
        "conform",
    ] {
        all.extend(from_help(verb));
    }
    all
}

#[test]
fn every_documented_command_works_as_written() {
    let dir = common::out_dir("docs");
    std::fs::create_dir_all(&*dir).unwrap();
    for d in ["scenarios", "studies", "crates"] {
        std::os::unix::fs::symlink(repo().join(d).canonicalize().unwrap(), dir.join(d)).unwrap();
    }
    let all = documented();
    let (mut failures, mut ran, mut checked, mut templates) = (Vec::new(), Vec::new(), 0, 0);
    for c in &all {
        let m = mode(c);
        let (args, parse_only) = match m {
            Mode::Template => {
                templates += 1;
                continue;
            }
            // The README's commands are the main job and its remedies: they run as written.
            Mode::Run if c.origin.starts_with("README") => (c.args.clone(), false),
            Mode::Run => (scaled(&c.args), false),
            Mode::ParseOnly(_) => (c.args.clone(), true),
        };
        let (ok, out, err) = run(&dir, &args, parse_only, Duration::from_secs(180));
        let shown = format!("{}: daqnet {}\n{out}{err}", c.origin, args.join(" "));
        if !ok {
            failures.push(format!("failed — {shown}"));
            continue;
        }
        if let Some(f) = &c.redirect {
            std::fs::write(dir.join(f), &out).unwrap();
        }
        for line in &c.prints {
            if !out.lines().any(|l| l.trim_end() == line.trim_end()) {
                failures.push(format!("does not print `{line}` — {shown}"));
            }
        }
        if parse_only {
            checked += 1;
        } else {
            ran.push(c.args[0].clone());
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} documented commands:\n\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
    // The extraction itself must not quietly find nothing.
    for verb in ["sim", "sweep", "plot", "study", "run", "scenario"] {
        assert!(ran.iter().any(|v| v == verb), "no documented `daqnet {verb}` ran: {ran:?}");
    }
    assert!(checked >= 10 && templates >= 1, "{checked} commands checked, {templates} templates");
    assert!(all.iter().filter(|c| !c.prints.is_empty()).count() >= 3, "the README's shown outputs were found");
}

#[test]
fn help_examples_fit_a_100_column_terminal() {
    // clap wraps help at the terminal's width (100 without a terminal): an example longer than
    // that breaks in the middle of a flag, and the pasted line fails.
    for verb in [
        "scenario", "sim", "sweep", "plot", "study", "run", "pipe", "testbed", "validate", "switch", "role", "bench",
        "conform",
    ] {
        let help = String::from_utf8(common::daqnet(&[verb, "--help"]).stdout).unwrap();
        for l in help.lines().skip_while(|l| !l.starts_with("Example")).skip(1) {
            let command = parse_line(String::new(), l).is_some() || l.starts_with("  ip netns exec ");
            let wrapped = l.starts_with("  ") && !l.starts_with("   ") && !command;
            assert!(!wrapped, "daqnet {verb} --help: an example wrapped onto `{l}`");
            assert!(l.chars().count() < 100, "daqnet {verb} --help: `{l}` is wider than 99 columns");
        }
    }
}

#[test]
fn doc_lines_parse_as_a_reader_types_them() {
    let c =
        parse_line("x".into(), "10.0.0.2$ daqnet role readout    --scenario s.toml --index 0   # second host").unwrap();
    assert_eq!(c.args, ["role", "readout", "--scenario", "s.toml", "--index", "0"]);
    let c = parse_line("x".into(), "cargo run --release -q -- scenario --print-default > my.toml").unwrap();
    assert_eq!((c.args, c.redirect), (vec!["scenario".to_string(), "--print-default".into()], Some("my.toml".into())));
    let c = parse_line("x".into(), r#"daqnet sweep f.toml --vary 'a={ scheme = "deep" }'"#).unwrap();
    assert_eq!(c.args, ["sweep", "f.toml", "--vary", r#"a={ scheme = "deep" }"#]);
    assert!(parse_line("x".into(), "ip netns exec daqnet-incast-32-c0 bash").is_none());
    let joined = logical_lines([(1, "daqnet sweep f \\"), (2, "    --vary a=1,2"), (3, "daqnet sim f")].into_iter());
    assert_eq!(joined, vec![(1, "daqnet sweep f  --vary a=1,2".to_string()), (3, "daqnet sim f".to_string())]);
    let scaled = scaled(&words("sweep f --vary a=1 --repeat 3 --events 2000"));
    assert_eq!(scaled, words("sweep f --vary a=1 --events 20 --set run.warmup_events=20"));
}
