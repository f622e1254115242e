//! End-to-end tests of the `rhizome` command: the built binary is run as a user runs it.
//!
//! Covered: the README's `rhizome reach` on the built-in model (against an explicit-state
//! search and the closed form of its state count, for every strategy and worker count),
//! the `--json` report against the printed summary, `--write-model` round trips, deadlock
//! reports, the published oracles of the shared model files, bad input (a one-line error
//! and a non-zero exit, never a panic or a hang), `bench tasks`/`fib`/`comm` JSON records,
//! and the help texts.
//!
//! The shared models are found at `$RHIZOME_MODELS`, else at `../shared/models` beside
//! the repository (found by `build.rs`); tests that need them are reported as ignored,
//! with the reason, when they are absent. Nothing here
//! measures time: every launch only has a generous hang limit.

#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
#[path = "../../rhizome-mc/tests/support/models.rs"]
mod models;
#[path = "../../rhizome-mc/tests/support/philosophers.rs"]
mod philosophers;
mod support;

use support::*;

use launch::Outcome;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("the JSON file {} was not written: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}\n{text}", p.display()))
}

// ----- the built-in model's oracle -----

/// (states, BFS levels, deadlock states) of `philosophers:n` by explicit enumeration
/// (the oracle of `rhizome-mc`'s own tests).
fn explicit(n: usize) -> (u128, usize, usize) {
    let (states, levels, dead) = philosophers::explicit(n);
    (states as u128, levels, dead)
}

/// The state count of `philosophers:n` in closed form, for sizes beyond explicit search:
/// a reachable state is a cyclic word over {thinking, left fork, eating} in which an
/// eating philosopher's right neighbour thinks (the forks follow from the word), so the
/// count is the trace of the n-th power of that adjacency matrix.
fn closed_form(n: usize) -> u128 {
    const M: [[u128; 3]; 3] = [[1, 1, 1], [1, 1, 1], [1, 0, 0]];
    let mut p = [[1, 0, 0], [0, 1, 0], [0, 0, 1]];
    for _ in 0..n {
        let mut q = [[0u128; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                q[i][j] = (0..3).map(|k| p[i][k] * M[k][j]).sum();
            }
        }
        p = q;
    }
    (0..3).map(|i| p[i][i]).sum()
}

#[test]
fn closed_form_matches_explicit_search() {
    // The oracle of the tests below, checked where explicit search is possible.
    for n in 2..=8 {
        let (states, levels, dead) = explicit(n);
        assert_eq!(closed_form(n), states, "n={n}");
        assert_eq!(levels, n + 1, "n={n}");
        assert_eq!(dead, 1, "n={n}");
    }
}

// ----- reach on the built-in model -----

/// The summary lines of the README's example output (after "The first command builds").
fn readme_example() -> HashMap<String, String> {
    let readme = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let text = std::fs::read_to_string(readme).expect("README.md");
    let after = text
        .split_once("The first command builds")
        .expect("README: the paragraph after `reach`")
        .1;
    let block = after
        .split("```")
        .nth(1)
        .expect("README: the example output block");
    block
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().to_string()))
        })
        .collect()
}

#[test]
fn readme_command_reports_the_built_in_model() {
    // `cargo run --release -- reach`: no arguments at all.
    let o = rhizome(&["reach"]).success();
    assert_eq!(o.field("model"), "philosophers:64");
    assert_eq!(o.field("states"), closed_form(64).to_string());
    // The default strategy is saturation (as in Sylvan's bddmc): no levels.
    assert!(o.field("levels").starts_with('-'), "{}", o.context());
    assert!(o.field("nodes").parse::<usize>().is_ok(), "{}", o.context());
    assert!(o.field("strategy").starts_with("sat ("), "{}", o.context());
    assert!(o.field("time").ends_with(')'), "{}", o.context());
    // The README shows a run of this very command; its figures must be the real ones.
    let readme = readme_example();
    for key in ["model", "states", "levels", "nodes"] {
        assert_eq!(
            readme.get(key).map(String::as_str),
            Some(o.field(key)),
            "README's example output, line `{key}`"
        );
    }
}

#[test]
fn every_strategy_and_worker_count_finds_the_closed_form_count() {
    let want = closed_form(64).to_string();
    let mut nodes = None;
    for strategy in ["bfs", "chaining", "sat", "par"] {
        for workers in ["1", "2"] {
            let o = rhizome(&["reach", "--strategy", strategy, "--workers", workers]).success();
            assert_eq!(o.field("states"), want, "{}", o.context());
            let plural = if workers == "1" { "worker" } else { "workers" };
            assert_eq!(
                o.field("strategy"),
                format!("{strategy} ({workers} {plural})")
            );
            match strategy {
                "bfs" | "par" => assert_eq!(o.field("levels"), "65", "{}", o.context()),
                "sat" => assert!(o.field("levels").starts_with('-'), "{}", o.context()),
                _ => assert!(o.field("levels").parse::<usize>().is_ok()),
            }
            // Same function, same variable order: the same BDD, whatever the strategy.
            let n = o.field("nodes").to_string();
            assert_eq!(
                nodes.get_or_insert_with(|| n.clone()),
                &n,
                "{}",
                o.context()
            );
        }
    }
}

#[test]
fn small_built_in_models_match_explicit_search() {
    for n in [2, 3, 5] {
        let (states, levels, dead) = explicit(n);
        let spec = format!("philosophers:{n}");
        for strategy in ["bfs", "par", "sat"] {
            for workers in ["1", "2"] {
                let o = rhizome(&[
                    "reach",
                    "--builtin",
                    &spec,
                    "--strategy",
                    strategy,
                    "--workers",
                    workers,
                    "--deadlocks",
                ])
                .success();
                assert_eq!(o.field("model"), spec);
                assert_eq!(o.field("states"), states.to_string(), "{}", o.context());
                if strategy != "sat" {
                    assert_eq!(o.field("levels"), levels.to_string(), "{}", o.context());
                }
                // The one deadlock: everybody holds the left fork (s = 1, f = 1).
                let ones = vec!["1"; 2 * n].join(", ");
                assert_eq!(
                    o.field("deadlocks"),
                    format!("{dead} (one: [{ones}])"),
                    "{}",
                    o.context()
                );
            }
        }
    }
}

#[test]
fn workers_come_from_the_environment_and_pes_spread_the_table() {
    let o = rhizome_env(&["reach", "--strategy", "sat"], &[("RHIZOME_WORKERS", "1")]).success();
    assert_eq!(o.field("strategy"), "sat (1 worker)");
    let one = rhizome(&["reach", "--strategy", "sat", "--pes", "1"]).success();
    assert_eq!(one.field("states"), closed_form(64).to_string());
    // On 2 PEs with `--split table` the node table is spread over both (the default
    // slices the states): the same answers, one report.
    let two = rhizome(&[
        "reach", "-s", "sat", "--pes", "2", "--split", "table", "--memory", "32M",
    ])
    .success();
    for field in ["states", "nodes"] {
        assert_eq!(two.field(field), one.field(field), "{}", two.context());
    }
    assert!(
        two.field("strategy").contains("over 2 PEs"),
        "{}",
        two.context()
    );
    assert_eq!(
        two.stdout.matches("states ").count(),
        1,
        "{}",
        two.context()
    );
    clean_error(&rhizome(&["reach", "--pes", "0"]), &["--pes"]);
    clean_error(&rhizome(&["reach", "--workers", "0"]), &["--workers"]);
}

// ----- --json -----

/// Checks the JSON report against the printed summary of the same run.
fn json_agrees_with_summary(o: &Outcome, j: &Value) {
    let obj = j
        .as_object()
        .unwrap_or_else(|| panic!("not one JSON object: {j}"));
    for key in [
        "model",
        "strategy",
        "workers",
        "states",
        "levels",
        "nodes",
        "seconds",
        "peak_rss_bytes",
    ] {
        assert!(obj.contains_key(key), "no `{key}` in {j}");
    }
    assert_eq!(j["model"].as_str(), Some(o.field("model")));
    // A model file that stores its reachable set has the check; others have `null`.
    assert_eq!(
        j["check"].as_str(),
        summary_field(&o.stdout, "check"),
        "{j}"
    );
    let strategy = o.field("strategy");
    let (name, workers) = strategy.split_once(" (").expect("strategy (N workers)");
    assert_eq!(j["strategy"].as_str(), Some(name));
    assert_eq!(
        j["workers"].as_u64().map(|w| w.to_string()).as_deref(),
        workers.split(' ').next()
    );
    // Exact: a decimal string, not a float that rounds 3·10^24.
    assert_eq!(j["states"].as_str(), Some(o.field("states")), "{j}");
    match j["levels"].as_u64() {
        Some(l) => assert_eq!(l.to_string(), o.field("levels")),
        None => {
            assert!(j["levels"].is_null(), "{j}");
            assert!(o.field("levels").starts_with('-'));
        }
    }
    assert_eq!(
        j["nodes"].as_u64().map(|n| n.to_string()).as_deref(),
        Some(o.field("nodes"))
    );
    // The summary rounds to milliseconds.
    let secs = j["seconds"].as_f64().expect("seconds is a number");
    let printed: f64 = o
        .field("time")
        .split(' ')
        .next()
        .and_then(|t| t.parse().ok())
        .expect("time N s");
    assert!(
        secs >= 0.0 && (secs - printed).abs() <= 0.0006,
        "{secs} vs {printed}"
    );
    // Linux reports the peak RSS; the summary prints it in binary units, one decimal.
    let peak = j["peak_rss_bytes"]
        .as_u64()
        .expect("peak_rss_bytes on Linux") as f64;
    let (v, unit) = o
        .field("peak RSS")
        .split_once(' ')
        .expect("peak RSS N unit");
    let scale = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => panic!("unit {unit}"),
    };
    let v: f64 = v.parse().expect("peak RSS number");
    assert!(
        peak > 0.0 && (peak / scale - v).abs() <= 0.051,
        "{peak} vs {v} {unit}"
    );
}

#[test]
fn json_report_agrees_with_the_summary() {
    let dir = TempDir::new("json");
    let f = dir.path("report.json");
    let o = rhizome(&[
        "reach",
        "--strategy",
        "bfs",
        "--workers",
        "2",
        "--deadlocks",
        "--count-nodes",
        "--json",
        s(&f),
    ])
    .success();
    let j = read_json(&f);
    json_agrees_with_summary(&o, &j);
    assert_eq!(
        j["states"].as_str(),
        Some(closed_form(64).to_string().as_str())
    );
    assert_eq!(j["workers"], 2);
    assert_eq!(j["deadlocks"].as_str(), Some("1"));
    assert_eq!(j["deadlock_example"], serde_json::json!(vec![1; 128]));
    // --count-nodes: one node count per image level on stdout, the last (empty) image's
    // being the final set's; the JSON lists the levels that found new states.
    let per_level: Vec<u64> = level_lines(&o.stdout)
        .iter()
        .map(|(_, fields)| count_in(fields, "nodes"))
        .collect();
    let levels = j["levels"].as_u64().expect("bfs has levels") as usize;
    assert_eq!(per_level.len(), levels, "{}", o.context());
    assert_eq!(j["level_nodes"], serde_json::json!(per_level[..levels - 1]));
    assert_eq!(per_level.last().copied(), j["nodes"].as_u64());
    // The series has level 0 (the initial state) and every level after it.
    assert_eq!(j["complete"], true);
    let series = j["per_level"].as_array().expect("per_level");
    assert_eq!(series.len(), levels + 1);
    for (i, l) in series.iter().enumerate() {
        assert_eq!(l["level"], i, "{l}");
        if i > 0 {
            assert_eq!(l["visited_nodes"].as_u64(), Some(per_level[i - 1]), "{l}");
        }
    }
    assert_eq!(series[levels]["states"], j["states"]);

    // Saturation has no levels: null, and no deadlock keys without --deadlocks.
    let f = dir.path("sat.json");
    let o = rhizome(&[
        "reach",
        "--strategy",
        "sat",
        "--workers",
        "1",
        "--json",
        s(&f),
    ])
    .success();
    let j = read_json(&f);
    json_agrees_with_summary(&o, &j);
    assert!(
        j.get("deadlocks").is_none() && j.get("level_nodes").is_none(),
        "{j}"
    );
    assert_eq!(j["per_level"], serde_json::json!([]));
    assert_eq!(j["complete"], true);
}

// ----- per-level output, progress, traces, plots -----

/// The `level N: ...` lines of an output, as (N, the text after the colon).
fn level_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .filter_map(|l| {
            let (n, rest) = l.strip_prefix("level ")?.split_once(':')?;
            Some((n.parse().ok()?, rest.trim().to_string()))
        })
        .collect()
}

/// The number before `what` in a level line's fields: `count_in("5 states, 49 nodes",
/// "nodes")` is 49.
fn count_in(fields: &str, what: &str) -> u64 {
    fields
        .split(", ")
        .find_map(|f| f.strip_suffix(what)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `N {what}` in {fields:?}"))
}

/// States after each level of `bddmc --count-states -s bfs` on ltsmin-2017/anderson.4.bdd
/// (Sylvan 7b69b56, `bddmc --count-states --count-nodes --count-table -s bfs -w 1
/// anderson.4.bdd`: its lines `Level N done, S states explored, ...`). It then prints
/// `Final states: 5935 BDD nodes`, counting the leaf as a node (`mtbdd_nodecount`).
const BDDMC_ANDERSON4_STATES: [u64; 81] = [
    5, 21, 73, 197, 414, 694, 974, 1218, 1438, 1706, 2046, 2410, 2786, 3210, 3706, 4298, 4914,
    5602, 6434, 7506, 8766, 10110, 11502, 12882, 14178, 15306, 16290, 17298, 18342, 19416, 20340,
    21108, 21888, 22764, 23568, 24216, 24684, 25200, 25764, 26346, 26802, 27114, 27366, 27558,
    27732, 27888, 28044, 28236, 28416, 28560, 28672, 28772, 28896, 29020, 29114, 29182, 29238,
    29318, 29398, 29454, 29482, 29494, 29506, 29518, 29530, 29542, 29554, 29566, 29578, 29587,
    29595, 29603, 29611, 29619, 29624, 29628, 29632, 29636, 29640, 29641, 29641,
];
const BDDMC_ANDERSON4_FINAL_NODES_WITH_LEAF: u64 = 5935;

#[test]
fn per_level_flags_print_what_bddmc_prints() {
    let Some(dir) = models_dir() else { return };
    let file = model(&dir, "ltsmin-2017/anderson.4.bdd");
    for strategy in ["bfs", "par"] {
        let o = rhizome(&[
            "reach",
            &file,
            "-s",
            strategy,
            "--count-states",
            "--count-nodes",
            "--count-table",
        ])
        .success();
        let lines = level_lines(&o.stdout);
        let numbers: Vec<usize> = lines.iter().map(|l| l.0).collect();
        assert_eq!(numbers, (1..=81).collect::<Vec<_>>(), "{}", o.context());
        let states: Vec<u64> = lines.iter().map(|l| count_in(&l.1, "states")).collect();
        assert_eq!(states, BDDMC_ANDERSON4_STATES, "{strategy}");
        let last_nodes = count_in(&lines[80].1, "nodes");
        assert_eq!(last_nodes + 1, BDDMC_ANDERSON4_FINAL_NODES_WITH_LEAF);
        assert_eq!(o.field("nodes"), last_nodes.to_string());
        for (_, fields) in &lines {
            // `table 0.1% full (2146 of 4194304 nodes)`
            let table = fields
                .split(", ")
                .find(|f| f.starts_with("table "))
                .unwrap();
            let (used, size) = table
                .split_once('(')
                .and_then(|(_, r)| r.strip_suffix(" nodes)"))
                .and_then(|r| r.split_once(" of "))
                .unwrap_or_else(|| panic!("{table}"));
            let (used, size): (u64, u64) = (used.parse().unwrap(), size.parse().unwrap());
            assert!(used > 0 && used <= size, "{table}");
        }
        // Level lines are results: on stdout, before the summary; stderr stays empty.
        assert!(o.stderr.is_empty(), "{}", o.context());
    }
    // Each flag alone prints its field alone.
    let o = rhizome(&["reach", &file, "-s", "bfs", "--count-states"]).success();
    assert_eq!(level_lines(&o.stdout)[0].1, "5 states");
}

/// Runs the command with stderr sent to a file, as `rhizome ... 2>FILE` in a shell does,
/// and returns the run and that file's bytes.
fn rhizome_stderr_to_file(args: &[&str]) -> (Outcome, Vec<u8>) {
    let tmp = TempDir::new("stderr");
    let file = tmp.path("stderr.txt");
    let mut cmd = Command::new("sh");
    launch::clear_rhizome_env(&mut cmd);
    cmd.arg("-c")
        .arg("exec \"$0\" \"$@\" 2>\"$STDERR_FILE\"")
        .arg(env!("CARGO_BIN_EXE_rhizome"))
        .args(args)
        .env("STDERR_FILE", &file);
    let o = launch::run(
        cmd,
        &format!("rhizome {} 2>FILE", args.join(" ")),
        HANG_LIMIT,
    );
    let bytes = std::fs::read(&file).expect("the stderr file");
    (o, bytes)
}

#[test]
fn progress_to_a_file_is_one_plain_line_per_level() {
    let n = 7;
    let (explicit_states, _) = philosophers::explicit_levels(n);
    let spec = format!("philosophers:{n}");
    for strategy in ["bfs", "chaining", "par"] {
        let (o, bytes) = rhizome_stderr_to_file(&[
            "reach",
            "--builtin",
            &spec,
            "-s",
            strategy,
            "--progress",
            "always",
        ]);
        let o = o.success();
        assert!(
            bytes
                .iter()
                .all(|&b| b == b'\n' || (b' '..0x7f).contains(&b)),
            "control characters in the progress file: {:?}",
            String::from_utf8_lossy(&bytes)
        );
        let text = String::from_utf8(bytes).unwrap();
        let lines = level_lines(&text);
        let levels: usize = o.field("levels").parse().unwrap();
        assert_eq!(lines.len(), levels, "one line per level:\n{text}");
        assert_eq!(text.lines().count(), levels, "nothing else:\n{text}");
        for (i, (level, fields)) in lines.iter().enumerate() {
            assert_eq!(*level, i + 1);
            for part in ["visited ", "table ", "collections", " s", "RSS "] {
                assert!(fields.contains(part), "no {part:?} in {fields:?}");
            }
            let states: usize = fields
                .strip_prefix("states ")
                .and_then(|r| r.split(',').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no exact states in {fields:?}"));
            if strategy == "chaining" {
                assert!(states >= explicit_states[i + 1], "{fields}");
            } else {
                assert_eq!(states, explicit_states[i + 1], "{strategy}: {fields}");
            }
        }
        assert_eq!(
            lines.last().unwrap().1.split(',').next().unwrap(),
            format!("states {}", o.field("states"))
        );
    }
    // Saturation has no levels: nothing per level (a line every 5 s on long runs), and
    // still no control characters; never by default off a terminal.
    let (o, bytes) = rhizome_stderr_to_file(&[
        "reach",
        "--builtin",
        &spec,
        "-s",
        "sat",
        "--progress",
        "always",
    ]);
    o.success();
    assert!(
        !bytes.contains(&0x1b),
        "{:?}",
        String::from_utf8_lossy(&bytes)
    );
    let (o, bytes) = rhizome_stderr_to_file(&["reach", "--builtin", &spec, "-s", "bfs"]);
    o.success();
    assert!(bytes.is_empty(), "{:?}", String::from_utf8_lossy(&bytes));
}

#[test]
fn a_table_that_fills_mid_run_ends_with_one_line_and_a_partial_report() {
    let tmp = TempDir::new("full");
    let f = tmp.path("partial.json");
    let o = rhizome(&[
        "reach",
        "--builtin",
        "philosophers:64",
        "-s",
        "bfs",
        "--workers",
        "1",
        "--memory",
        "1M",
        "--json",
        s(&f),
    ]);
    let line = clean_error(
        &o,
        &[
            "out of BDD nodes at level ",
            "--memory 1M",
            "raise --memory",
        ],
    );
    assert!(
        o.stdout.is_empty(),
        "no summary of a failed run\n{}",
        o.context()
    );
    let j = read_json(&f);
    assert_eq!(j["complete"], false, "{j}");
    let series = j["per_level"].as_array().expect("per_level");
    let levels = j["levels"].as_u64().expect("levels done") as usize;
    assert!(levels >= 1, "{j}");
    assert_eq!(series.len(), levels + 1);
    assert_eq!(series[levels]["states"], j["states"]);
    let states: u128 = j["states"].as_str().unwrap().parse().unwrap();
    assert!(states < closed_form(64), "{j}");
    // The error names the level that failed: the one after the last done.
    assert!(
        line.contains(&format!("at level {}:", levels + 1)),
        "{line}"
    );
}

/// Replays a printed trace of philosophers:N on the explicit model: starts from the
/// initial state, each step is one philosopher's move, ends in the deadlock.
#[test]
fn deadlock_traces_are_printed_and_recorded() {
    let tmp = TempDir::new("trace");
    for strategy in ["bfs", "sat"] {
        let f = tmp.path(&format!("trace-{strategy}.json"));
        let o = rhizome(&[
            "reach",
            "--builtin",
            "philosophers:4",
            "-s",
            strategy,
            "--deadlocks",
            "--trace",
            "--json",
            s(&f),
        ])
        .success();
        assert!(o.field("trace").starts_with("4 steps"), "{}", o.context());
        let j = read_json(&f);
        let trace = j["trace"].as_array().expect("trace in the JSON");
        assert_eq!(trace.len(), 5);
        assert!(trace[0]["group"].is_null());
        assert_eq!(trace[0]["state"], serde_json::json!(vec![0; 8]));
        assert_eq!(trace[4]["state"], j["deadlock_example"]);
        // Printed: one line per state, `  i  initial|group g  [..]`, as in the JSON.
        let printed: Vec<&str> = o
            .stdout
            .lines()
            .skip_while(|l| !l.starts_with("trace"))
            .skip(1)
            .take(5)
            .collect();
        for (i, (line, step)) in printed.iter().zip(trace).enumerate() {
            let how = match step["group"].as_u64() {
                None => "initial".to_string(),
                Some(g) => format!("group {g}"),
            };
            let state: Vec<String> = step["state"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.to_string())
                .collect();
            let want = format!("{i} {how} [{}]", state.join(", "));
            assert_eq!(line.split_whitespace().collect::<Vec<_>>().join(" "), want);
        }
    }
    // --trace needs --deadlocks: clap's usage error (exit 2) names it.
    let o = rhizome(&["reach", "--trace"]);
    no_panic(&o);
    assert_eq!(o.code, Some(2), "{}", o.context());
    assert!(
        o.stderr.contains("--deadlocks") && o.stdout.is_empty(),
        "{}",
        o.context()
    );
}

/// Whether `svg` is well-formed as far as its tags go: every element closed in order.
fn balanced_tags(svg: &str) -> bool {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        let Some(end) = rest[i..].find('>') else {
            return false;
        };
        let tag = &rest[i + 1..i + end];
        rest = &rest[i + end + 1..];
        if tag.starts_with('?') || tag.starts_with('!') || tag.ends_with('/') {
            continue;
        }
        match tag.strip_prefix('/') {
            Some(name) => {
                if open.pop() != Some(name.trim()) {
                    return false;
                }
            }
            None => open.push(tag.split_whitespace().next().unwrap_or("")),
        }
    }
    open.is_empty()
}

#[test]
fn plot_draws_a_point_per_level() {
    let tmp = TempDir::new("plot");
    let f = tmp.path("run.json");
    rhizome(&[
        "reach",
        "--builtin",
        "philosophers:12",
        "-s",
        "bfs",
        "--count-nodes",
        "--json",
        s(&f),
    ])
    .success();
    let svg_path = tmp.path("run.svg");
    let o = rhizome(&["plot", s(&f), "-o", s(&svg_path)]).success();
    assert!(
        o.stdout.is_empty() && o.stderr.is_empty(),
        "{}",
        o.context()
    );
    let svg = std::fs::read_to_string(&svg_path).expect("the SVG");
    assert!(svg.starts_with("<svg") && balanced_tags(&svg), "{svg}");
    // Points: states and visited nodes at every level 0..=13, the frontier's at every
    // level but the last (empty: no place on a log scale).
    let levels = 13 + 1;
    assert_eq!(svg.matches("<circle").count(), 3 * levels - 1, "{svg}");
    for label in ["states", "nodes of the visited set", "level", "log scale"] {
        assert!(svg.contains(label), "no {label:?}");
    }
    // A report without levels, or the report as the output: one line each.
    let sat = tmp.path("sat.json");
    rhizome(&[
        "reach",
        "-s",
        "sat",
        "--builtin",
        "philosophers:4",
        "--json",
        s(&sat),
    ])
    .success();
    clean_error(
        &rhizome(&["plot", s(&sat), "-o", s(&svg_path)]),
        &["saturation"],
    );
    clean_error(&rhizome(&["plot", s(&f), "-o", s(&f)]), &["overwrite"]);
    clean_error(
        &rhizome(&["plot", s(&tmp.path("none.json")), "-o", s(&svg_path)]),
        &["cannot read"],
    );
}

// ----- --write-model -----

#[test]
fn write_model_round_trips_through_format_b() {
    let dir = TempDir::new("export");
    let f = dir.path("philosophers64.bdd");
    let built = rhizome(&["reach", "--strategy", "sat", "--write-model", s(&f)]).success();
    let bytes = std::fs::read(&f).expect("the model was written");
    // Format B: int vector_size (2 integers per philosopher), then state_bits (2, 1, ...).
    assert_eq!(bytes[0..4], 128i32.to_le_bytes());
    assert_eq!(bytes[4..8], 2i32.to_le_bytes());
    assert_eq!(bytes[8..12], 1i32.to_le_bytes());
    for args in [
        vec!["--strategy", "bfs"],
        vec!["--format", "b", "--strategy", "sat"],
    ] {
        let mut a = vec!["reach", s(&f), "--deadlocks"];
        a.extend(args);
        let o = rhizome(&a).success();
        assert_eq!(o.field("model"), s(&f));
        for key in ["states", "nodes"] {
            assert_eq!(o.field(key), built.field(key), "{}", o.context());
        }
        assert!(o.field("deadlocks").starts_with("1 (one: [1, 1, "));
    }
    // A model read from a file exports to the same bytes.
    let again = dir.path("again.bdd");
    rhizome(&[
        "reach",
        s(&f),
        "--strategy",
        "sat",
        "--write-model",
        s(&again),
    ])
    .success();
    assert!(
        std::fs::read(&again).unwrap() == bytes,
        "the export changed on re-export"
    );
}

// ----- the shared model files -----

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn published_oracles_of_model_files() {
    let Some(dir) = models_dir() else { return };
    let o = rhizome(&["reach", &model(&dir, "ltsmin-2017/anderson.4.bdd")]).success();
    assert_eq!(o.field("states"), "29641");

    let tmp = TempDir::new("oracle");
    let f = tmp.path("anderson.1.8.json");
    let file = model(&dir, "thesis-2014/anderson.1.8-rgs.bdd");
    let o = rhizome(&["reach", &file, "--strategy", "bfs", "--json", s(&f)]).success();
    assert_eq!(o.field("model"), file);
    assert_eq!(o.field("states"), "352664");
    assert_eq!(o.field("levels"), "1293");
    assert_eq!(o.field("nodes"), "22221");
    let j = read_json(&f);
    json_agrees_with_summary(&o, &j);
    assert_eq!(j["states"], "352664");
    assert_eq!(j["levels"], 1293);
    assert_eq!(j["nodes"], 22221);
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn format_a_file_exports_to_an_equivalent_format_b_file() {
    let Some(dir) = models_dir() else { return };
    let tmp = TempDir::new("a-to-b");
    let out = tmp.path("schedule_world.2.bdd");
    let file = model(&dir, "thesis-2014/schedule_world.2.8-rgs.bdd");
    let a = rhizome(&[
        "reach",
        &file,
        "--strategy",
        "sat",
        "--write-model",
        s(&out),
    ])
    .success();
    assert_eq!(a.field("states"), "1570340");
    assert_eq!(a.field("nodes"), "18779");
    let b = rhizome(&["reach", s(&out), "--strategy", "sat"]).success();
    assert_eq!(b.field("states"), "1570340");
    assert_eq!(b.field("nodes"), "18779");
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn deadlocks_on_models_with_and_without_them() {
    let Some(dir) = models_dir() else { return };
    // anderson.4 has none: the line says 0 and the JSON has no example.
    let tmp = TempDir::new("deadlocks");
    let f = tmp.path("none.json");
    let file = model(&dir, "ltsmin-2017/anderson.4.bdd");
    let o = rhizome(&["reach", &file, "--deadlocks", "--json", s(&f)]).success();
    assert_eq!(o.field("deadlocks"), "0");
    let j = read_json(&f);
    assert_eq!(j["deadlocks"], "0");
    assert!(j["deadlock_example"].is_null(), "{j}");

    // bakery.4 has some (no published figure): every strategy finds the same number, and
    // the example is a full state vector (15 integers), also in the JSON.
    let file = model(&dir, "ltsmin-2017/bakery.4.bdd");
    let mut seen = None;
    for strategy in ["sat", "chaining"] {
        let f = tmp.path(&format!("bakery-{strategy}.json"));
        let o = rhizome(&[
            "reach",
            &file,
            "--deadlocks",
            "-s",
            strategy,
            "--json",
            s(&f),
        ])
        .success();
        assert_eq!(o.field("states"), "157003");
        let line = o.field("deadlocks");
        let (count, example) = line.split_once(" (one: ").expect("count (one: [...])");
        assert!(count.parse::<u64>().unwrap() > 0, "{line}");
        assert_eq!(seen.get_or_insert(count.to_string()), count);
        let j = read_json(&f);
        assert_eq!(j["deadlocks"].as_str(), Some(count));
        let ex = j["deadlock_example"].as_array().expect("an example");
        assert_eq!(ex.len(), 15, "{j}");
        let printed: Vec<String> = ex.iter().map(|v| v.to_string()).collect();
        assert_eq!(example, format!("[{}])", printed.join(", ")));
    }
}

// ----- bad input -----

/// A deterministic stream of pseudo-random bytes (xorshift).
fn garbage(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

/// The byte offset of a model-file error `<file>: byte <offset>: ...`.
fn error_offset(line: &str, file: &str) -> u64 {
    let rest = line
        .split_once(&format!("{file}: byte "))
        .unwrap_or_else(|| panic!("no `{file}: byte N:` in {line:?}"))
        .1;
    rest.split(':')
        .next()
        .unwrap()
        .parse()
        .expect("a byte offset")
}

#[test]
fn unreadable_model_files_name_the_file() {
    let tmp = TempDir::new("unreadable");
    let missing = tmp.path("no-such-model.bdd");
    let e = clean_error(&rhizome(&["reach", s(&missing)]), &[s(&missing)]);
    assert!(e.contains("No such file"), "{e}");
    let e = clean_error(&rhizome(&["reach", s(tmp.dir())]), &[s(tmp.dir())]);
    assert!(e.contains("directory"), "{e}");
    let empty = tmp.write("empty.bdd", b"");
    let e = clean_error(&rhizome(&["reach", s(&empty)]), &[]);
    assert_eq!(error_offset(&e, s(&empty)), 0);
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn format_c_runs_are_checked_against_the_stored_set() {
    let Some(dir) = models_dir() else { return };
    let file = model(&dir, "spin17-beem/phils.1.bdd");
    let tmp = TempDir::new("format-c");
    for strategy in ["bfs", "par", "chaining", "sat"] {
        let json = tmp.path(&format!("{strategy}.json"));
        let o = rhizome(&["reach", &file, "-s", strategy, "-d", "--json", s(&json)]).success();
        assert_eq!(o.field("states"), "80");
        assert_eq!(o.field("check"), "matches the stored reachable set");
        json_agrees_with_summary(&o, &read_json(&json));
    }
    let forced = rhizome(&["reach", &file, "--format", "c"]).success();
    assert_eq!(forced.field("check"), "matches the stored reachable set");

    // The stored set complemented (bit 63 of its root, 24 bytes before the end): every
    // run now disagrees with the file, which is an error after the summary and report.
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() - 24 + 7;
    bytes[at] ^= 0x80;
    let wrong = tmp.write("wrong-set.bdd", &bytes);
    let json = tmp.path("wrong.json");
    let o = rhizome(&["reach", s(&wrong), "--json", s(&json)]);
    // 2 bits for each of 8 integers: 65,536 states, 80 of them reachable.
    let e = clean_error(
        &o,
        &[
            s(&wrong),
            "differs from the stored reachable set",
            "65456 stored states not reached, 80 reached states not stored",
        ],
    );
    assert!(!e.contains('\n'), "{e}");
    assert!(o.field("check").starts_with("differs"));
    json_agrees_with_summary(&o, &read_json(&json));
}

#[test]
fn corrupt_model_files_name_the_file_and_the_offset() {
    let tmp = TempDir::new("corrupt");
    // A real file to damage: the built-in model's export, and the shared files if present.
    let export = tmp.path("export.bdd");
    rhizome(&[
        "reach",
        "--builtin",
        "philosophers:8",
        "--strategy",
        "sat",
        "--write-model",
        s(&export),
    ])
    .success();
    // (bytes, whether every byte is structure: format B ignores what follows the last
    // relation, so only there can cutting the last byte go unnoticed).
    let mut originals = vec![(std::fs::read(&export).unwrap(), true)];
    if let Some(dir) = models::models_dir() {
        for f in [
            "ltsmin-2017/anderson.4.bdd",
            "thesis-2014/anderson.1.8-rgs.bdd",
        ] {
            originals.push((std::fs::read(dir.join(f)).unwrap(), f.starts_with("thesis")));
        }
    }
    for (i, (bytes, all_structure)) in originals.iter().enumerate() {
        let mut cuts = vec![5, bytes.len() / 3, bytes.len() * 2 / 3];
        if *all_structure {
            cuts.push(bytes.len() - 1);
        }
        for cut in cuts {
            let p = tmp.write(&format!("truncated-{i}-{cut}.bdd"), &bytes[..cut]);
            let e = clean_error(&rhizome(&["reach", s(&p)]), &[]);
            assert!(error_offset(&e, s(&p)) <= cut as u64, "{e}");
        }
    }
    for seed in [1, 2, 3] {
        let p = tmp.write(&format!("garbage-{seed}.bdd"), &garbage(4096, seed));
        let e = clean_error(&rhizome(&["reach", s(&p)]), &[]);
        assert!(error_offset(&e, s(&p)) < 4096, "{e}");
    }
    // Forcing the wrong format is a content error too, not a misreading.
    let e = clean_error(&rhizome(&["reach", s(&export), "--format", "a"]), &[]);
    error_offset(&e, s(&export));
    usage_error(
        &rhizome(&["reach", s(&export), "--format", "d"]),
        &["--format", "`d`"],
    );
    // A format-B file read as format C: a content error at the field that does not fit.
    let e = clean_error(&rhizome(&["reach", s(&export), "--format", "c"]), &[]);
    error_offset(&e, s(&export));
}

#[test]
fn bad_reach_options() {
    for (spec, why) in [
        ("philosophers:1", "2..="),
        ("philosophers:x", "not a number"),
        ("dragons:3", "philosophers:N"),
    ] {
        let o = rhizome(&["reach", "--builtin", spec]);
        clean_error(&o, &[spec.split(':').next().unwrap(), why]);
        assert!(o.stdout.is_empty(), "{}", o.context());
    }
    usage_error(
        &rhizome(&["reach", "--memory", "garbage"]),
        &["garbage", "not a number"],
    );
    usage_error(
        &rhizome(&["reach", "--memory", "5X"]),
        &["unknown unit `X`"],
    );
    clean_error(
        &rhizome(&["reach", "--memory", "1K"]),
        &["--memory", "too small"],
    );
    // Room for a table, not for this model's BFS: the limit ends the run with a reason.
    let o = rhizome(&["reach", "--strategy", "bfs", "--memory", "2M"]);
    clean_error(&o, &["out of BDD nodes", "memory"]);
    usage_error(
        &rhizome(&["reach", "--strategy", "nope"]),
        &["nope", "bfs, chaining, sat or par"],
    );
    usage_error(&rhizome(&["reach", "--bogus-flag"]), &["--bogus-flag"]);
    // --builtin and a file exclude each other.
    usage_error(
        &rhizome(&["reach", "model.bdd", "--builtin", "philosophers:3"]),
        &["--builtin"],
    );
}

#[test]
fn unwritable_outputs_name_the_file() {
    let tmp = TempDir::new("unwritable");
    let nowhere = tmp.path("no-such-dir").join("out.json");
    let o = rhizome(&["reach", "--strategy", "sat", "--json", s(&nowhere)]);
    clean_error(&o, &[s(&nowhere)]);
    let o = rhizome(&["reach", "--strategy", "sat", "--write-model", s(&nowhere)]);
    clean_error(&o, &[s(&nowhere)]);
    let o = rhizome(&[
        "bench",
        "tasks",
        "fib",
        "10",
        "--repeat",
        "1",
        "--json",
        s(&nowhere),
    ]);
    clean_error(&o, &[s(&nowhere)]);
}

#[test]
fn bad_bench_arguments() {
    usage_error(&rhizome(&["bench", "tasks", "nope"]), &["nope"]);
    let o = rhizome(&["bench", "tasks", "lu", "1000", "--cutoff", "300"]);
    clean_error(&o, &["1000", "300", "multiple"]);
    // An empty matrix once panicked on its NaN residual.
    let o = rhizome(&["bench", "tasks", "lu", "0", "--cutoff", "50"]);
    clean_error(&o, &["lu", "positive multiple"]);
    // Zero workers once ran on one and recorded zero.
    clean_error(
        &rhizome(&["bench", "fib", "10", "--workers", "0"]),
        &["--workers"],
    );
    clean_error(
        &rhizome(&["bench", "tasks", "fib", "10", "--pes", "0"]),
        &["PEs", "at least 1"],
    );
    let o = rhizome(&["bench", "tasks", "uts", "--tree", "NOPE"]);
    clean_error(&o, &["NOPE", "T1"]);
    let o = rhizome(&["bench", "tasks", "nqueens", "17"]);
    clean_error(&o, &["17"]);
    usage_error(&rhizome(&["bench", "tasks", "fib", "ten"]), &["ten"]);
    usage_error(&rhizome(&["bench", "nope"]), &["nope"]);
}

// ----- bench -----

/// The records of a `bench` JSON file; every one has the common fields.
fn records(p: &Path) -> Vec<Value> {
    let j = read_json(p);
    let recs = j
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {j}"))
        .clone();
    assert!(!recs.is_empty(), "no records");
    for r in &recs {
        assert!(r["name"].is_string() && r["unit"].is_string(), "{r}");
        let v = r["value"].as_f64().unwrap_or_else(|| panic!("value: {r}"));
        assert!(v.is_finite() && v >= 0.0, "{r}");
    }
    recs
}

#[test]
fn bench_tasks_kernels_record_their_checked_results() {
    let tmp = TempDir::new("tasks");
    // (arguments, the known result if any, how the run checks its result). Small sizes,
    // and cutoffs low enough that jobs are spawned.
    const KNOWN: &str = "checked against the known value";
    const SEQ: &str = "checked against the sequential code";
    let runs: [(&[&str], Option<&str>, &str); 6] = [
        (&["fib", "20", "--cutoff", "10"], Some("6765"), SEQ),
        (&["nqueens", "8"], Some("92"), KNOWN),
        (&["uts", "--tree", "T1"], Some("4130071"), KNOWN),
        (&["pingpong", "200"], Some("200"), KNOWN),
        (&["qsort", "20000"], None, SEQ),
        (&["lu", "200", "--cutoff", "50"], None, SEQ),
    ];
    for (i, (args, known, check)) in runs.iter().enumerate() {
        let f = tmp.path(&format!("tasks-{i}.json"));
        let mut a = vec!["bench", "tasks"];
        a.extend_from_slice(args);
        a.extend(["--pes", "2", "--repeat", "1", "--json", s(&f)]);
        let o = rhizome(&a).success();
        assert!(o.stdout.contains(check), "{}", o.context());
        let recs = records(&f);
        let result = recs[0]["result"].as_str().expect("a result").to_string();
        if let Some(k) = known {
            assert_eq!(result, *k, "{args:?}");
        }
        assert!(result.parse::<u64>().is_ok(), "{result}");
        for r in &recs {
            assert_eq!(r["result"].as_str(), Some(result.as_str()), "{r}");
            assert_eq!(r["transport"], "local", "{r}");
            assert_eq!(r["pes"], 2, "{r}");
            assert_eq!(r["workers"], 1, "{r}");
        }
        let jobs = recs
            .iter()
            .find(|r| r["name"].as_str().is_some_and(|n| n.ends_with(" jobs")))
            .expect("a jobs record");
        assert!(jobs["value"].as_f64().unwrap() >= 1.0, "{jobs}");
    }
}

#[test]
fn bench_fc_records_each_mode_beside_none() {
    let tmp = TempDir::new("fc");
    let f = tmp.path("fc.json");
    let a = [
        "bench", "fc", "--pes", "2", "--ops", "2048", "--tasks", "64",
    ];
    rhizome(&[&a[..], &["--repeat", "1", "--json", s(&f)]].concat()).success();
    let recs = records(&f);
    // Each a rate and an ops/message record: stack and queue, 2 mixes x 3 modes; set and
    // map, 2 mixes x 2 key ranges x 3 modes.
    assert_eq!(recs.len(), 2 * (2 * 2 * 3 + 2 * 2 * 2 * 3), "{recs:?}");
    for r in &recs {
        let name = r["name"].as_str().unwrap();
        assert_eq!(r["pes"], 2, "{r}");
        assert_eq!(
            r["baseline_name"].is_string(),
            !name.contains(" none"),
            "{r}"
        );
        let v = r["value"].as_f64().unwrap();
        if name.starts_with("fc stack mixed distributed ops/msg") {
            // Matched pushes and pops travel in no message: more than one per message.
            assert!(v > 1.0, "{r}");
        } else if name.contains(" none ops/msg") {
            // One message on a set or map; lock, operation, unlock on a stack or queue,
            // and a pop whose value is stored on another PE one fetch more.
            if name.starts_with("fc set") || name.starts_with("fc map") {
                assert_eq!(v, 1.0, "{r}");
            } else {
                assert!((0.25..=1.0 / 3.0).contains(&v), "{r}");
            }
        } else if name.contains(" centralized ops/msg") {
            // One message per operation to the combiner, plus its commits.
            assert!(v <= 1.0 && v > 0.0, "{r}");
        }
    }
    let bad_args: [&[&str]; 4] = [
        &["--tasks", "0"],
        &["--ops", "3"],
        &["--pes", "0"],
        &["--key-bits", "40"],
    ];
    for bad in bad_args {
        clean_error(&rhizome(&[&["bench", "fc"][..], bad].concat()), &[bad[0]]);
    }
    usage_error(&rhizome(&["bench", "fc", "--modes", "nope"]), &["nope"]);
}

#[test]
fn bench_fib_and_comm_write_records() {
    let tmp = TempDir::new("bench");
    let f = tmp.path("fib.json");
    rhizome(&["bench", "fib", "20", "--workers", "2", "--json", s(&f)]).success();
    let recs = records(&f);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["result"], "6765");
    assert_eq!(recs[0]["workers"], 2);
    assert_eq!(recs[0]["name"], "fib(20) fork");
    // The plain-join kernel computes the same.
    rhizome(&[
        "bench",
        "fib",
        "20",
        "--workers",
        "2",
        "--kernel",
        "join",
        "--json",
        s(&f),
    ])
    .success();
    let recs = records(&f);
    assert_eq!(recs[0]["result"], "6765");
    assert_eq!(recs[0]["name"], "fib(20) join");

    let f = tmp.path("comm.json");
    let args = [
        "bench", "comm", "--pes", "2", "--repeat", "1", "--iters", "1000",
    ];
    let mut a = args.to_vec();
    a.extend(["--messages", "20000", "--json", s(&f)]);
    let o = rhizome(&a).success();
    let recs = records(&f);
    let names: Vec<&str> = recs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for want in ["get 8 B latency", "AM call round trip", "barrier latency"] {
        assert!(names.contains(&want), "no {want:?} in {names:?}");
    }
    for r in &recs {
        assert_eq!(r["transport"], "local", "{r}");
        assert_eq!(r["pes"], 2, "{r}");
        // The table shows every record.
        let name = r["name"].as_str().unwrap();
        assert!(
            o.stdout.contains(name),
            "{name} not printed\n{}",
            o.context()
        );
    }
}

// ----- help and the bare command -----

#[test]
fn help_version_and_the_bare_command() {
    let o = rhizome(&["--help"]).success();
    for sub in ["reach", "bench", "info"] {
        assert!(o.stdout.contains(sub), "{}", o.context());
    }
    let o = rhizome(&["reach", "--help"]).success();
    for flag in [
        "--strategy",
        "--json",
        "--memory",
        "--write-model",
        "--deadlocks",
        "--builtin",
    ] {
        assert!(o.stdout.contains(flag), "no {flag}\n{}", o.context());
    }
    let o = rhizome(&["bench", "tasks", "--help"]).success();
    assert!(o.stdout.contains("--cutoff"), "{}", o.context());
    let o = rhizome(&["--version"]).success();
    assert_eq!(
        o.stdout.trim(),
        format!("rhizome {}", env!("CARGO_PKG_VERSION"))
    );

    // No subcommand: clap's usage error (exit 2) with the list of commands, on stderr.
    let o = rhizome(&[]);
    no_panic(&o);
    assert_eq!(o.code, Some(2), "{}", o.context());
    assert!(o.stdout.is_empty(), "{}", o.context());
    assert!(
        o.stderr.contains("Usage: rhizome <COMMAND>"),
        "{}",
        o.context()
    );
    assert!(o.stderr.contains("reach"), "{}", o.context());
    usage_error(&rhizome(&["frobnicate"]), &["frobnicate"]);

    let o = rhizome(&["info", "--workers", "3"]).success();
    assert_eq!(
        o.stdout.lines().next(),
        Some(&*format!("rhizome {}", env!("CARGO_PKG_VERSION")))
    );
    assert!(o.stdout.contains("workers per pe: 3"), "{}", o.context());
    let mpi = if cfg!(feature = "mpi") {
        "built in"
    } else {
        "not built"
    };
    assert!(
        o.stdout.contains(&format!("mpi transport: {mpi}")),
        "{}",
        o.context()
    );
}

#[test]
fn bench_bale_records_each_implementation_checked() {
    let tmp = TempDir::new("bale");
    for (pes, kernel) in [("1", "histogram"), ("4", "index-gather")] {
        let f = tmp.path(&format!("bale-{kernel}.json"));
        let args = ["bench", "bale", kernel, "-n", "5000", "-T", "50", "-b", "4"];
        let more = ["--pes", pes, "--repeat", "1", "--json", s(&f)];
        rhizome(&[&args[..], &more].concat()).success();
        let recs = records(&f);
        let names: Vec<&str> = recs.iter().filter_map(|r| r["name"].as_str()).collect();
        assert_eq!(
            names,
            ["agp", "conveyor", "context", "selector"].map(|i| format!("bale {kernel} ({i})"))
        );
        for r in &recs {
            assert_eq!(
                (&r["result"], &r["unit"]),
                (&"checked".into(), &"updates/s".into())
            );
            assert_eq!(r["pes"].as_u64(), pes.parse().ok());
        }
    }
    let f = tmp.path("conveyor.json");
    rhizome(&[
        "bench",
        "bale",
        "histogram",
        "--impl",
        "conveyor",
        "-n",
        "100",
        "--json",
        s(&f),
    ])
    .success();
    assert_eq!(records(&f).len(), 1);
    clean_error(
        &rhizome(&["bench", "bale", "histogram", "-T", "0"]),
        &["-T"],
    );
    clean_error(
        &rhizome(&["bench", "bale", "index-gather", "-b", "0"]),
        &["-b"],
    );
    usage_error(
        &rhizome(&["bench", "bale", "histogram", "--impl", "nope"]),
        &["nope"],
    );
    usage_error(&rhizome(&["bench", "bale", "sorting"]), &["sorting"]);
}
