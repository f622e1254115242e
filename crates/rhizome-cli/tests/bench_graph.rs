//! `rhizome bench graph` end to end on the local transport: a record per implementation
//! (checked runs: a BFS tree Graph500 validation accepts, components equal to a
//! union-find's), the tuned version the others' baseline, the structures' counters, and
//! the refusals of impossible parameters, each one line. Nothing here measures time.

#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
#[path = "../../rhizome-mc/tests/support/models.rs"]
mod models;
mod support;

use serde_json::Value;
use support::{clean_error, rhizome, success, usage_error};

#[test]
fn bfs_and_cc_record_every_implementation() {
    for kernel in ["bfs", "cc"] {
        let o = success(rhizome(&[
            "bench", "graph", kernel, "--scale", "9", "--pes", "2", "--tasks", "64", "--repeat",
            "1", "--json", "-",
        ]));
        let records: Vec<Value> = serde_json::from_str(&o.stdout).expect("JSON records");
        let names: Vec<&str> = records.iter().filter_map(|r| r["name"].as_str()).collect();
        let want: Vec<String> = [
            "combining",
            "combining ops/msg",
            "none",
            "none ops/msg",
            "tuned",
        ]
        .iter()
        .map(|i| format!("graph {kernel} scale 9 {i}"))
        .collect();
        assert_eq!(names, want, "{}", o.stdout);
        for r in &records {
            assert_eq!(r["pes"], 2, "{r}");
            assert!(r["value"].as_f64().is_some_and(|v| v > 0.0), "{r}");
            let name = r["name"].as_str().unwrap();
            if r["unit"] == "MTEPS" {
                assert_eq!(
                    r["baseline_name"].is_string(),
                    !name.ends_with("tuned"),
                    "{r}"
                );
                // CC traverses every generated edge: 16 x 2^9.
                let result = r["result"].as_str().unwrap();
                if kernel == "cc" {
                    assert!(result.starts_with("8192 edges"), "{r}");
                }
            } else if name.contains(" none ") {
                let v = r["value"].as_f64().unwrap();
                if kernel == "cc" {
                    // One message per set insert.
                    assert_eq!(v, 1.0, "{r}");
                } else {
                    // Lock, operation, unlock per queue operation, and a pop whose value
                    // is stored on another PE one fetch more.
                    assert!((0.25..=1.0 / 3.0).contains(&v), "{r}");
                }
            }
        }
    }
}

#[test]
fn one_implementation_can_be_picked() {
    let o = success(rhizome(&[
        "bench",
        "graph",
        "bfs",
        "--scale",
        "8",
        "--edgefactor",
        "4",
        "--impl",
        "tuned",
        "--pes",
        "4",
        "--repeat",
        "2",
        "--json",
        "-",
    ]));
    let records: Vec<Value> = serde_json::from_str(&o.stdout).expect("JSON records");
    assert_eq!(records.len(), 1, "{}", o.stdout);
    assert_eq!(records[0]["name"], "graph bfs scale 8 tuned");
    assert_eq!(records[0]["pes"], 4);
}

#[test]
fn impossible_parameters_are_refused_in_one_line() {
    let bad_args: [&[&str]; 6] = [
        &["--scale", "0"],
        &["--scale", "31"],
        &["--scale", "8", "--edgefactor", "0"],
        &["--scale", "8", "--tasks", "0"],
        &["--scale", "8", "--repeat", "0"],
        &["--scale", "8", "--pes", "0"],
    ];
    for bad in bad_args {
        let what = bad[bad.len() - 2].trim_start_matches("--");
        let what = if what == "edgefactor" {
            "edge factor"
        } else {
            what
        };
        clean_error(
            &rhizome(&[&["bench", "graph", "bfs"][..], bad].concat()),
            &[what],
        );
    }
    usage_error(
        &rhizome(&["bench", "graph", "bfs", "--scale", "8", "--impl", "x"]),
        &["x"],
    );
    usage_error(
        &rhizome(&["bench", "graph", "sssp", "--scale", "8"]),
        &["sssp"],
    );
}
