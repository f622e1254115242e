//! `rhizome reach --pes N` on the local transport (`--split table`: the node table spread over N PEs in
//! this process; `--split states`: the states sliced over them). A table that is too small on one PE under `--memory` (a per-PE limit)
//! holds the model on 2 and 4 PEs, with the same answers; the JSON report names the PEs
//! and each PE's peak memory. Nothing here measures time.

#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
#[path = "../../rhizome-mc/tests/support/models.rs"]
mod models;
mod support;

use serde_json::Value;
use support::*;

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn a_model_out_of_table_on_one_pe_completes_on_2_and_4_under_the_same_memory() {
    let file = model(&models::required_models_dir(), "ltsmin-2017/anderson.4.bdd");
    let args = |pes: &'static str| {
        let base = [
            "reach", "-s", "bfs", "-w", "1", "--memory", "1M", "--split", "table", "--pes", pes,
        ];
        let mut v: Vec<String> = base.iter().map(|a| a.to_string()).collect();
        v.push(file.clone());
        v
    };
    let run = |pes| {
        let a = args(pes);
        rhizome(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    clean_error(&run("1"), &["out of BDD nodes", "--memory 1M"]);
    let reference = rhizome(&["reach", "-s", "bfs", &file]).success();
    for pes in ["2", "4"] {
        let mut a = args(pes);
        a.extend(["--json".into(), "-".into()]);
        let o = rhizome(&a.iter().map(String::as_str).collect::<Vec<_>>()).success();
        let j: Value = serde_json::from_str(&o.stdout).expect("one JSON report");
        assert_eq!(j["states"], "29641", "{}", o.context());
        for key in ["levels", "nodes"] {
            let want: u64 = reference.field(key).parse().unwrap();
            assert_eq!(j[key], want, "{key} on {pes} PEs");
        }
        let n: usize = pes.parse().unwrap();
        assert_eq!(j["pes"], n);
        assert_eq!(j["transport"], "local");
        let peaks = j["peak_rss_bytes_per_pe"].as_array().expect("per-PE peaks");
        assert_eq!(peaks.len(), n, "{j}");
        assert!(
            peaks.iter().all(|p| p.as_u64().is_some_and(|b| b > 0)),
            "{j}"
        );
    }
}

/// `reach --pes N --split table`: the PEs of one process reach every partition in place,
/// so by default their managers share one operation cache (every hit a shared one, none
/// in a PE's own cache); `RHIZOME_OP_CACHE=per-pe` gives each PE its own (no shared
/// hit), and an unknown value is one clear error. The answers are the same each way.
#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn pes_in_one_process_share_one_operation_cache_unless_told_per_pe() {
    let file = model(&models::required_models_dir(), "ltsmin-2017/anderson.4.bdd");
    let args = [
        "reach", "-s", "sat", "-w", "1", "--split", "table", "--pes", "2", "--json", "-", &file,
    ];
    let hits = |env: &[(&str, &str)]| {
        let o = rhizome_env(&args, env).success();
        let j: Value = serde_json::from_str(&o.stdout).expect("one JSON report");
        assert_eq!(j["states"], "29641", "{}", o.context());
        assert_eq!(j["nodes"], 5934, "{}", o.context());
        let per_pe = j["op_cache_per_pe"]
            .as_array()
            .expect("per-PE cache figures");
        assert_eq!(per_pe.len(), 2, "{j}");
        let sum = |key: &str| -> u64 { per_pe.iter().map(|c| c[key].as_u64().unwrap()).sum() };
        (sum("lookups"), sum("local_hits"), sum("shared_hits"))
    };
    let (lookups, local, shared) = hits(&[]);
    assert!(
        lookups > 0 && shared > 0,
        "{lookups} lookups, {shared} shared hits"
    );
    assert_eq!(local, 0, "a cache in front of the shared one");
    let (lookups, local, shared) = hits(&[("RHIZOME_OP_CACHE", "per-pe")]);
    assert!(
        lookups > 0 && local > 0,
        "{lookups} lookups, {local} own hits"
    );
    assert_eq!(shared, 0, "per PE, yet shared hits");
    let o = rhizome_env(&args, &[("RHIZOME_OP_CACHE", "everywhere")]);
    clean_error(
        &o,
        &[
            "RHIZOME_OP_CACHE is `everywhere`",
            "use `shared` or `per-pe`",
        ],
    );
}

/// `reach --pes N --split states`: the states sliced over the PEs give one PE's answers,
/// the report names the mode and each PE's slice, and the slices add up to the states.
#[test]
fn sliced_states_give_one_pes_answers_on_2_and_4_pes() {
    let base = [
        "reach",
        "--builtin",
        "philosophers:24",
        "-d",
        "-w",
        "1",
        "--memory",
        "64M",
        "--json",
        "-",
    ];
    let report = |extra: &[&str], env: &[(&str, &str)]| -> Value {
        let o = success(rhizome_env(&[&base[..], extra].concat(), env));
        serde_json::from_str(&o.stdout).expect("one JSON report")
    };
    let one = report(&["-s", "bfs"], &[]);
    assert_eq!(one["split"], Value::Null);
    // Split at once (0 nodes) and with the default threshold (philosophers:24 ends first:
    // every PE explores the whole set).
    for (pes, split_nodes) in [("2", "0"), ("4", "0"), ("2", "8192")] {
        let j = report(
            &["-s", "bfs", "--pes", pes, "--split", "states"],
            &[("RHIZOME_SPLIT_NODES", split_nodes)],
        );
        for key in ["states", "levels", "nodes", "deadlocks"] {
            assert_eq!(j[key], one[key], "{key} on {pes} PEs");
        }
        assert_eq!(j["split"], "states", "{j}");
        let slices = &j["slices"];
        let per_pe = slices["states_per_pe"].as_array().expect("per-PE states");
        let n: usize = pes.parse().unwrap();
        assert_eq!(per_pe.len(), n, "{j}");
        let counts: Vec<u128> = per_pe
            .iter()
            .map(|c| c.as_str().unwrap().parse().unwrap())
            .collect();
        let total: u128 = one["states"].as_str().unwrap().parse().unwrap();
        if split_nodes == "0" {
            assert_eq!(counts.iter().sum::<u128>(), total, "{j}");
            assert_eq!(
                slices["split_vars"].as_array().unwrap().len(),
                n.trailing_zeros() as usize
            );
        } else {
            assert!(counts.iter().all(|&c| c == total), "{j}");
            assert_eq!(slices["split_level"], Value::Null);
        }
    }
    // `auto` slices every strategy on 2 PEs: saturation and chaining too, with one PE's
    // answers.
    let auto = report(&["-s", "bfs", "--pes", "2"], &[]);
    assert_eq!(auto["split"], "states");
    for strategy in ["sat", "chaining"] {
        let one = report(&["-s", strategy], &[]);
        for pes in ["2", "4"] {
            let j = report(
                &["--pes", pes, "-s", strategy],
                &[("RHIZOME_SPLIT_NODES", "64")],
            );
            assert_eq!(j["split"], "states", "{j}");
            for key in ["states", "levels", "nodes", "deadlocks"] {
                assert_eq!(j[key], one[key], "{key}: {strategy} on {pes} PEs");
            }
        }
    }
}

#[test]
fn what_slices_cannot_run_is_one_clear_error() {
    let run = |args: &[&str]| {
        rhizome(
            &[
                &[
                    "reach",
                    "--builtin",
                    "philosophers:4",
                    "-w",
                    "1",
                    "--memory",
                    "16M",
                ],
                args,
            ]
            .concat(),
        )
    };
    clean_error(
        &run(&["--pes", "3", "--split", "states"]),
        &["--split states", "power of two", "3"],
    );
    clean_error(
        &run(&["--pes", "6", "--split", "states", "-s", "sat"]),
        &["--split states", "power of two", "6"],
    );
    clean_error(
        &run(&[
            "--pes",
            "2",
            "--split",
            "states",
            "-s",
            "bfs",
            "--count-nodes",
        ]),
        &["--split states", "count the nodes"],
    );
    // `auto` falls back to the spread table where slices cannot run.
    let o = success(run(&["--pes", "3", "-s", "bfs"]));
    assert!(o.stdout.contains("node table over 3 PEs"), "{}", o.stdout);
    // Split variables that cannot split these PEs' states.
    clean_error(
        &run(&["--pes", "2", "--split-vars", "3"]),
        &["--split-vars", "3 is not a state variable", "0, 2, 4"],
    );
    clean_error(
        &run(&["--pes", "4", "--split-vars", "0"]),
        &["--split-vars", "4 PEs are split by 2 variables, not 1"],
    );
    clean_error(
        &run(&["--pes", "2", "--split", "table", "--split-vars", "0"]),
        &["--split-vars", "--split table has no split variables"],
    );
    clean_error(
        &run(&["--pes", "3", "--split-vars", "0"]),
        &["--split-vars", "not sliced", "power of two"],
    );
}

/// `--split-vars`: the given variable slices the states (the summary and the JSON say
/// so), with one PE's answers.
#[test]
fn given_split_variables_slice_the_states() {
    let base = [
        "reach",
        "--builtin",
        "philosophers:24",
        "-w",
        "1",
        "--memory",
        "64M",
    ];
    let one = success(rhizome(&[&base[..], &["--json", "-"]].concat()));
    let one: Value = serde_json::from_str(&one.stdout).expect("one JSON report");
    for (pes, vars) in [("2", "6"), ("2", "40"), ("4", "40,6")] {
        let args = ["--pes", pes, "--split-vars", vars];
        let env = [("RHIZOME_SPLIT_NODES", "0")];
        let j = success(rhizome_env(
            &[&base[..], &args, &["--json", "-"]].concat(),
            &env,
        ));
        let j: Value = serde_json::from_str(&j.stdout).expect("one JSON report");
        for key in ["states", "levels", "nodes"] {
            assert_eq!(j[key], one[key], "{key} split by {vars}");
        }
        let want: Vec<Value> = vars
            .split(',')
            .map(|v| v.parse::<u32>().unwrap().into())
            .collect();
        assert_eq!(j["slices"]["split_vars"], Value::Array(want), "{j}");
        assert_eq!(j["slices"]["split_vars_given"], true, "{j}");
        let text = success(rhizome_env(&[&base[..], &args].concat(), &env));
        assert!(
            text.stdout
                .contains(&format!("[{}] of --split-vars", vars.replace(',', ", "))),
            "{}",
            text.stdout
        );
    }
}

/// `RHIZOME_MEM_LOG=prefix`: every PE of a sliced run writes `prefix.<pe>`, one line a
/// level, and each PE's table starts at its share of one PE's (`Config::for_share`).
#[test]
fn the_memory_log_has_a_line_a_level_on_every_pe_and_shares_the_table() {
    let tmp = TempDir::new("mem-log");
    let prefix = tmp.path("mem");
    let prefix = prefix.to_str().unwrap();
    let args = |pes: &'static str| {
        [
            "reach",
            "--builtin",
            "philosophers:12",
            "-s",
            "bfs",
            "-w",
            "1",
            "--pes",
            pes,
            "--json",
            "-",
        ]
    };
    // One level's slots, the fourth column after level, seconds and collections, and more.
    let slots = |path: &str| -> Vec<(usize, usize)> {
        let text = std::fs::read_to_string(path).expect("a memory log");
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        let col = header
            .iter()
            .position(|&h| h == "slots")
            .expect("a slots column");
        assert_eq!(header[0], "level");
        lines
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                assert_eq!(f.len(), header.len(), "{l}");
                (f[0].parse().unwrap(), f[col].parse().unwrap())
            })
            .collect()
    };
    let one: Value = serde_json::from_str(
        &success(rhizome_env(&args("1"), &[("RHIZOME_MEM_LOG", prefix)])).stdout,
    )
    .unwrap();
    let whole = slots(&format!("{prefix}.0"));
    let levels = one["levels"].as_u64().unwrap() as usize;
    assert_eq!(whole.len(), levels + 1, "a line for level 0 to the last");
    let two: Value = serde_json::from_str(
        &success(rhizome_env(
            &args("2"),
            &[("RHIZOME_MEM_LOG", prefix), ("RHIZOME_SPLIT_NODES", "0")],
        ))
        .stdout,
    )
    .unwrap();
    assert_eq!(two["states"], one["states"]);
    for pe in 0..2 {
        let share = slots(&format!("{prefix}.{pe}"));
        assert_eq!(share.len(), levels + 1, "PE {pe}");
        // A small model never grows the table: each PE keeps half of one PE's.
        assert_eq!(share[0].1 * 2, whole[0].1, "PE {pe}");
        assert!(
            share.iter().enumerate().all(|(i, &(l, _))| l == i),
            "PE {pe}"
        );
    }
}
