//! `rhizome bench dsm` end to end on the local transport: one checked record per
//! application, with the speedup against the sequential run and the protocol's counters,
//! and a one-line refusal of an impossible size. Nothing here measures time: only the
//! shape and the sanity of the figures.

#[path = "support/dsm_small.rs"]
mod dsm_small;
#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
#[path = "../../rhizome-mc/tests/support/models.rs"]
mod models;
mod support;

use serde_json::Value;
use support::{clean_error, rhizome, success, usage_error};

#[test]
fn records_carry_speedup_and_protocol_counters() {
    let o = success(rhizome(
        &[
            &[
                "bench", "dsm", "all", "--pes", "2", "-w", "2", "--json", "-",
            ],
            dsm_small::SMALL,
        ]
        .concat(),
    ));
    let records: Vec<Value> = serde_json::from_str(&o.stdout).expect("JSON records");
    let apps: Vec<&str> = records.iter().map(|r| r["app"].as_str().unwrap()).collect();
    assert_eq!(apps, dsm_small::APPS, "{}", o.stdout);
    for r in &records {
        assert_eq!(r["pes"], 2);
        assert_eq!(r["threads"], 2);
        assert_eq!(r["result"], "matches sequential");
        let speedup = r["speedup"].as_f64().unwrap();
        let want = r["sequential_seconds"].as_f64().unwrap() / r["value"].as_f64().unwrap();
        assert!((speedup - want).abs() <= 1e-9 * want, "{r}");
        // CPU times: both runs computed something, and the CPU speedup is their ratio.
        let (seq_cpu, cpu) = (
            r["sequential_cpu_seconds"].as_f64().unwrap(),
            r["cpu_seconds"].as_f64().unwrap(),
        );
        assert!(seq_cpu > 0.0 && cpu > 0.0, "{r}");
        let cpu_speedup = r["cpu_speedup"].as_f64().unwrap();
        assert!(
            (cpu_speedup - seq_cpu / cpu).abs() <= 1e-9 * cpu_speedup,
            "{r}"
        );
        let p = &r["protocol"];
        // Two PEs share the data: pages travel, and every PE passes every barrier.
        assert!(p["page_fetches"].as_u64().unwrap() > 0, "{r}");
        assert!(p["write_faults"].as_u64().unwrap() > 0, "{r}");
        assert!(p["barriers"].as_u64().unwrap() >= 2, "{r}");
        // Water sums its forces under a lock per molecule; TSP keeps its queue under one.
        let locks = p["lock_acquires"].as_u64().unwrap();
        assert_eq!(
            locks > 0,
            ["water", "tsp"].contains(&r["app"].as_str().unwrap()),
            "{r}"
        );
        // Water asks for the next run of locks' tokens ahead: some start on the other PE.
        let prefetches = p["lock_prefetches"].as_u64().unwrap();
        assert_eq!(prefetches > 0, r["app"] == "water", "{r}");
    }
}

#[test]
fn transfers_are_selectable_and_recorded() {
    // Table 2's choice: diffs and notices by messages (no puts) or by one-sided puts.
    for (diffs, notices) in [
        ("message", "message"),
        ("one-sided", "message"),
        ("message", "one-sided"),
    ] {
        let o = success(rhizome(
            &[
                &[
                    "bench",
                    "dsm",
                    "all",
                    "--pes",
                    "2",
                    "--diffs",
                    diffs,
                    "--notices",
                    notices,
                    "--json",
                    "-",
                ],
                dsm_small::SMALL,
            ]
            .concat(),
        ));
        let records: Vec<Value> = serde_json::from_str(&o.stdout).expect("JSON records");
        assert_eq!(records.len(), dsm_small::APPS.len(), "{}", o.stdout);
        let mut any_puts = false;
        for r in &records {
            assert_eq!(r["result"], "matches sequential", "{r}");
            assert_eq!(
                (r["diffs"].as_str(), r["notices"].as_str()),
                (Some(diffs), Some(notices))
            );
            let p = &r["protocol"];
            let puts = p["puts"].as_u64().unwrap();
            if diffs == "message" && notices == "message" {
                assert_eq!(puts, 0, "{r}");
            } else if diffs == "one-sided" && p["diffs_created"].as_u64().unwrap() > 0 {
                assert!(puts > 0, "diffs went by puts: {r}");
            }
            any_puts |= puts > 0;
        }
        assert_eq!(
            any_puts,
            diffs == "one-sided" || notices == "one-sided",
            "{}",
            o.stdout
        );
    }
    let o = rhizome(&["bench", "dsm", "sor", "--diffs", "rdma"]);
    usage_error(&o, &["--diffs"]);
}

#[test]
fn impossible_sizes_are_one_line_errors() {
    for (app, flag) in [
        ("sor", "--sor-n"),
        ("nbody", "--bodies"),
        ("water", "--molecules"),
        ("lu", "--lu-block"),
        ("tsp", "--cities"),
        ("tsp", "--tsp-split"),
        ("radix", "--keys"),
        ("nbodyw", "--bodies"),
    ] {
        let o = rhizome(&["bench", "dsm", app, flag, "0"]);
        clean_error(&o, &[flag, "at least 1"]);
    }
    let o = rhizome(&["bench", "dsm", "lu", "--lu-n", "100", "--lu-block", "32"]);
    clean_error(&o, &["--lu-n", "multiple of --lu-block"]);
    let o = rhizome(&["bench", "dsm", "tsp", "--cities", "65"]);
    clean_error(&o, &["--cities", "at most 64"]);
}
