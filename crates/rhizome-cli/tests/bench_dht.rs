//! `rhizome bench dht` end to end on the local transport: the records it writes (every
//! load and access mode, and with `--sweep` one record per chunk size and load factor
//! beside the thesis' Lemma 1), and its refusals of impossible sizes, each one line.
//! Nothing here measures time: only the shape and the sanity of the figures.

#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
#[path = "../../rhizome-mc/tests/support/models.rs"]
mod models;
mod support;

use serde_json::Value;
use support::{clean_error, rhizome, success};

#[test]
fn records_cover_every_load_mode_and_sweep_level() {
    let o = success(rhizome(&[
        "bench",
        "dht",
        "--pes",
        "2",
        "--slots",
        "4096",
        "--ops",
        "500",
        "--repeat",
        "1",
        "--sweep",
        "--sweep-slots",
        "8192",
        "--sweep-chunks",
        "8,64",
        "--json",
        "-",
    ]));
    let records: Vec<Value> = serde_json::from_str(&o.stdout).expect("JSON records");
    let named = |prefix: &str| {
        records
            .iter()
            .filter(|r| r["name"].as_str().unwrap().starts_with(prefix))
            .collect::<Vec<_>>()
    };
    // 3 loads x 2 modes, each as a wall-clock and a per-CPU-second record.
    let throughput = named("find-or-put ");
    assert_eq!(throughput.len(), 12, "{}", o.stdout);
    for r in &throughput {
        assert_eq!(r["pes"], 2);
        assert!(r["value"].as_f64().unwrap() > 0.0);
        // Filled to just below 0.5, the run ends just above it.
        assert!(r["result"].as_str().unwrap().starts_with("load 0.4"), "{r}");
    }
    // 2 chunk sizes x load factors 0.1 .. 0.9: at least one chunk per insert, and the
    // model's figure beside it.
    let sweep = named("round trips/insert ");
    assert_eq!(sweep.len(), 18, "{}", o.stdout);
    for r in &sweep {
        assert!(r["value"].as_f64().unwrap() >= 1.0, "{r}");
        assert!(r["baseline"].as_f64().unwrap() >= 1.0, "{r}");
    }
    // Chunks of 64 need fewer round trips than chunks of 8 once the table is 90 % full.
    let at = |c: &str| {
        sweep
            .iter()
            .find(|r| r["name"] == format!("round trips/insert C={c} a=0.9"))
            .map(|r| r["value"].as_f64().unwrap())
            .unwrap()
    };
    assert!(at("64") < at("8"), "{}", o.stdout);
}

#[test]
fn impossible_sizes_are_one_line_errors() {
    clean_error(&rhizome(&["bench", "dht", "--alpha", "1.5"]), &["--alpha"]);
    clean_error(&rhizome(&["bench", "dht", "--slots", "0"]), &["at least 1"]);
    clean_error(
        &rhizome(&[
            "bench", "dht", "--pes", "1", "--slots", "1024", "--ops", "100000",
        ]),
        &["load factor"],
    );
    clean_error(
        &rhizome(&["bench", "dht", "--sweep-chunks", "8,0", "--sweep"]),
        &["--sweep-chunks"],
    );
}
