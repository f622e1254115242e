//! The `rhizome` command under `mpirun -np 2` (cargo feature `mpi`, Open MPI's `mpirun` on
//! the `PATH`): `bench tasks` runs one PE per rank and only PE 0's rank writes the
//! records, which name the `mpi` transport and 2 PEs; `reach` spreads its node table over
//! 2 and 4 ranks, or slices its states over them, with the answers of one, and ends on
//! every rank when one rank is killed mid-run; `bench bale` checks every
//! implementation of its kernels (histogram, index-gather, permute, randperm, transpose,
//! triangles, toposort) under `-np 2` and `-np 4`, and so does `bench graph` (BFS trees
//! validated, components against a union-find); `bench dsm all` runs every DSM application
//! on the shared region across 2 ranks with 2 threads each, checked against its
//! sequential run.
//!
//! Each launch has a generous time limit so that a hang fails the test instead of
//! blocking it, and launches run one at a time; nothing here measures time.
#![cfg(feature = "mpi")]

#[path = "support/dsm_small.rs"]
mod dsm_small;
#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;

use launch::Outcome;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// A launch that has not ended after this long is a hang.
const HANG_LIMIT: Duration = Duration::from_secs(240);

/// One launch at a time: the machine may have few cores and the ranks busy-poll.
static LAUNCH: Mutex<()> = Mutex::new(());

/// `mpirun -np 2 rhizome ARGS`, which must succeed.
fn mpirun(args: &[&str]) -> Outcome {
    let o = mpirun_any(args);
    assert_eq!(o.code, Some(0), "{}", o.context());
    o
}

/// `mpirun -np 2 rhizome ARGS`, whatever its exit status.
fn mpirun_any(args: &[&str]) -> Outcome {
    mpirun_on(2, args)
}

/// `mpirun -np NP rhizome ARGS`, whatever its exit status.
fn mpirun_on(np: usize, args: &[&str]) -> Outcome {
    mpirun_with(np, &[], args)
}

/// `mpirun -np NP -x VAR=VALUE... rhizome ARGS`, whatever its exit status.
fn mpirun_with(np: usize, env: &[&str], args: &[&str]) -> Outcome {
    let _one = LAUNCH.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(np.to_string());
    for var in env {
        cmd.args(["-x", var]);
    }
    cmd.arg(env!("CARGO_BIN_EXE_rhizome")).args(args);
    launch::clear_rhizome_env(&mut cmd);
    let what = format!(
        "mpirun -np {np} rhizome {} (is Open MPI installed?)",
        args.join(" ")
    );
    launch::run(cmd, &what, HANG_LIMIT)
}

/// A JSON output file, unique to this test process, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        let p = std::env::temp_dir().join(format!(
            "rhizome-cli-mpi-test-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&p);
        TempFile(p)
    }
    fn arg(&self) -> &str {
        self.0.to_str().expect("UTF-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn bench_tasks_on_two_ranks(kernel: &[&str], name: &str, known: Option<&str>) {
    let f = TempFile::new(&format!("{name}.json"));
    let mut args = vec!["bench", "tasks"];
    args.extend_from_slice(kernel);
    args.extend(["--repeat", "1", "--json", f.arg()]);
    let o = mpirun(&args);
    // Only PE 0's rank reports (and so writes the file): one summary line, one table. A
    // rank that wrote too would have printed its own.
    assert_eq!(o.stdout.matches(": result ").count(), 1, "{}", o.context());
    assert_eq!(o.stdout.matches("name ").count(), 1, "{}", o.context());
    let text = std::fs::read_to_string(&f.0).expect("the records were written");
    let recs: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let times = recs
        .iter()
        .filter(|r| r["name"].as_str().is_some_and(|n| n.ends_with(" time")))
        .count();
    assert_eq!(times, 1, "not one record set: {text}");
    let result = recs[0]["result"].as_str().expect("a result");
    if let Some(k) = known {
        assert_eq!(result, k);
    }
    for r in &recs {
        assert_eq!(r["transport"], "mpi", "{r}");
        assert_eq!(r["pes"], 2, "{r}");
        assert_eq!(r["result"].as_str(), Some(result), "{r}");
    }
}

#[test]
fn bench_tasks_qsort_on_two_ranks() {
    // The result is a hash of the sorted data, checked by the run against its sequential
    // sort; a rank that lost or duplicated a stolen part would fail that check.
    bench_tasks_on_two_ranks(&["qsort", "20000"], "qsort", None);
}

#[test]
fn bench_tasks_fib_on_two_ranks() {
    // A cutoff below N, so that there are jobs to steal across ranks.
    bench_tasks_on_two_ranks(&["fib", "25", "--cutoff", "15"], "fib", Some("75025"));
}

#[test]
fn bench_fib_reports_once_from_rank_0_with_the_mpi_transport() {
    // The fork-join pool is one PE's: rank 0 computes and reports; a rank that printed its
    // own row (as every rank once did, labelled `local`) would show a second table.
    let f = TempFile::new("fib.json");
    let o = mpirun(&["bench", "fib", "20", "--workers", "1", "--json", f.arg()]);
    assert_eq!(o.stdout.matches("name ").count(), 1, "{}", o.context());
    assert_eq!(o.stdout.matches("fib(20)").count(), 1, "{}", o.context());
    let text = std::fs::read_to_string(&f.0).expect("the records were written");
    let recs: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(recs.len(), 1, "{text}");
    assert_eq!(recs[0]["transport"], "mpi", "{text}");
    assert_eq!(recs[0]["result"], "6765", "{text}");
}

#[test]
fn bench_dsm_runs_every_application_across_two_ranks() {
    // Small sizes; each application is checked against its sequential run (the command
    // fails otherwise). A rank that left after the first application (as once happened)
    // would leave rank 0 waiting in the next one's collective run: the hang limit.
    let f = TempFile::new("dsm.json");
    let o = mpirun(
        &[
            &["bench", "dsm", "all", "-w", "2", "--json", f.arg()],
            dsm_small::SMALL,
        ]
        .concat(),
    );
    assert_eq!(o.stdout.matches("name ").count(), 1, "{}", o.context());
    let text = std::fs::read_to_string(&f.0).expect("the records were written");
    let recs: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let apps: Vec<&str> = recs.iter().map(|r| r["app"].as_str().unwrap()).collect();
    assert_eq!(apps, dsm_small::APPS, "{text}");
    for r in &recs {
        assert_eq!(r["transport"], "mpi", "{r}");
        assert_eq!(r["pes"], 2, "{r}");
        assert_eq!(r["threads"], 2, "{r}");
        assert_eq!(r["result"], "matches sequential", "{r}");
        assert!(r["protocol"]["page_fetches"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["diffs"], "message", "{r}");
    }
}

#[test]
fn bench_dsm_with_one_sided_transfers_across_two_ranks() {
    // Diffs into rings and write notices into bins at the receiving rank, by puts.
    let f = TempFile::new("dsm-one-sided.json");
    let transfers = ["--diffs", "one-sided", "--notices", "one-sided"];
    let head = ["bench", "dsm", "all", "-w", "2", "--json", f.arg()];
    mpirun(&[&head[..], &transfers, dsm_small::SMALL].concat());
    let text = std::fs::read_to_string(&f.0).expect("the records were written");
    let recs: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(recs.len(), dsm_small::APPS.len(), "{text}");
    for r in &recs {
        assert_eq!(r["result"], "matches sequential", "{r}");
        assert_eq!(
            (&r["diffs"], &r["notices"]),
            (&"one-sided".into(), &"one-sided".into())
        );
        let p = &r["protocol"];
        if p["diffs_created"].as_u64().unwrap() > 0 {
            assert!(p["puts"].as_u64().unwrap() > 0, "diffs went by puts: {r}");
        }
    }
}

/// `reach ARGS --json -` on `np` ranks: the one report, parsed.
fn reach_report(np: usize, args: &[&str]) -> Value {
    let o = mpirun_on(np, &[&["reach"], args, &["--json", "-"]].concat());
    assert_eq!(o.code, Some(0), "{}", o.context());
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", o.context()))
}

#[test]
fn reach_on_2_and_4_ranks_gives_the_answers_of_one() {
    for strategy in ["bfs", "chaining", "sat", "par"] {
        let args = [
            "--builtin",
            "philosophers:24",
            "-s",
            strategy,
            "-d",
            "-w",
            "1",
            "--memory",
            "16M",
            "--split",
            "table",
        ];
        let one = reach_report(1, &args);
        for np in [2, 4] {
            let many = reach_report(np, &args);
            for key in ["states", "levels", "nodes", "deadlocks"] {
                assert_eq!(many[key], one[key], "{key}: {strategy} on {np} ranks");
            }
            assert_eq!(many["pes"], np, "{many}");
            assert_eq!(many["transport"], "mpi", "{many}");
            let peaks = many["peak_rss_bytes_per_pe"]
                .as_array()
                .expect("per-PE peaks");
            assert_eq!(peaks.len(), np, "{many}");
        }
    }
}

#[test]
fn reach_counts_the_one_sided_operations_it_sends_as_messages() {
    let args = [
        "reach",
        "--builtin",
        "philosophers:8",
        "-s",
        "bfs",
        "-w",
        "1",
        "--memory",
        "16M",
        "--split",
        "table",
        "--json",
        "-",
    ];
    let report = |env: &[&str]| {
        let o = mpirun_with(2, env, &args);
        assert_eq!(o.code, Some(0), "{}", o.context());
        let v: Value =
            serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", o.context()));
        (v, o)
    };
    // Shared windows (one machine): nothing goes as a message, nothing is counted.
    let (windows, _) = report(&[]);
    let none = windows["remote_ops_per_pe"].as_array().expect("per PE");
    assert_eq!(none.len(), 2, "{windows}");
    assert!(none.iter().all(Value::is_null), "{windows}");
    // Messages: both PEs read and insert nodes in the other's partition.
    let (messages, o) = report(&["RHIZOME_MPI_RMA=messages"]);
    for key in ["states", "levels", "nodes"] {
        assert_eq!(messages[key], windows[key], "{key}");
    }
    let per_pe = messages["remote_ops_per_pe"].as_array().expect("per PE");
    assert_eq!(per_pe.len(), 2, "{messages}");
    for (pe, r) in per_pe.iter().enumerate() {
        let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("PE {pe} {k}: {r}"));
        let kinds = n("gets") + n("puts") + n("compare_exchanges") + n("other_atomics");
        assert_eq!(n("messages"), kinds, "PE {pe}: {r}");
        assert!(n("gets") > 0 && n("compare_exchanges") > 0, "PE {pe}: {r}");
        assert!(n("get_bytes") >= 8 * n("gets"), "PE {pe}: {r}");
        assert!(n("waited") <= n("messages"), "PE {pe}: {r}");
    }
    assert!(o.stderr.contains("remote ops"), "{}", o.context());
}

/// `reach --split states` on 2 and 4 ranks, split at once: one rank's answers, the
/// slices adding up to the states; and a model file's stored reachable set.
#[test]
fn reach_with_sliced_states_on_2_and_4_ranks_gives_the_answers_of_one() {
    let models = option_env!("RHIZOME_MODELS_DIR").map(PathBuf::from);
    let at1 = models
        .map(|d| d.join("spin17-beem/at.1.bdd"))
        .filter(|p| p.exists());
    let at1 = at1.as_ref().map(|p| p.to_string_lossy().into_owned());
    let mut inputs: Vec<Vec<&str>> = vec![vec!["--builtin", "philosophers:24"]];
    if let Some(f) = &at1 {
        inputs.push(vec![f.as_str()]);
    }
    for input in &inputs {
        for strategy in ["bfs", "par", "sat", "chaining"] {
            let args = [
                &input[..],
                &["-s", strategy, "-d", "-w", "1", "--memory", "64M"],
            ]
            .concat();
            let one = reach_report(1, &args);
            for np in [2, 4] {
                let sliced = [&args[..], &["--split", "states", "--json", "-"]].concat();
                let o = mpirun_with(
                    np,
                    &["RHIZOME_SPLIT_NODES=0"],
                    &[&["reach"], &sliced[..]].concat(),
                );
                assert_eq!(o.code, Some(0), "{}", o.context());
                let many: Value = serde_json::from_str(&o.stdout)
                    .unwrap_or_else(|e| panic!("{e}\n{}", o.context()));
                for key in ["states", "levels", "nodes", "deadlocks", "check"] {
                    assert_eq!(
                        many[key], one[key],
                        "{key}: {input:?} {strategy} on {np} ranks"
                    );
                }
                assert_eq!(many["split"], "states", "{many}");
                assert_eq!(many["transport"], "mpi", "{many}");
                let per_pe = many["slices"]["states_per_pe"].as_array().expect("slices");
                assert_eq!(per_pe.len(), np, "{many}");
                let sum: u128 = per_pe
                    .iter()
                    .map(|c| c.as_str().unwrap().parse::<u128>().unwrap())
                    .sum();
                assert_eq!(sum.to_string(), one["states"].as_str().unwrap(), "{many}");
            }
        }
    }
}

/// `--split-vars` under mpirun: the given variable splits the states with one rank's
/// answers, and one that cannot ends every rank with one line from rank 0.
#[test]
fn reach_with_given_split_variables_on_2_ranks() {
    let args = [
        "--builtin",
        "philosophers:24",
        "-s",
        "sat",
        "-w",
        "1",
        "--memory",
        "64M",
    ];
    let one = reach_report(1, &args);
    let given = [
        &["reach"],
        &args[..],
        &["--split-vars", "40", "--json", "-"],
    ]
    .concat();
    let o = mpirun_with(2, &["RHIZOME_SPLIT_NODES=0"], &given);
    assert_eq!(o.code, Some(0), "{}", o.context());
    let many: Value =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", o.context()));
    for key in ["states", "levels", "nodes"] {
        assert_eq!(many[key], one[key], "{key}");
    }
    assert_eq!(
        many["slices"]["split_vars"],
        serde_json::json!([40]),
        "{many}"
    );
    assert_eq!(many["slices"]["split_vars_given"], true, "{many}");
    let bad = [&["reach"], &args[..], &["--split-vars", "41"]].concat();
    let o = mpirun_any(&bad);
    assert_ne!(o.code, Some(0), "{}", o.context());
    let errors: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.starts_with("rhizome: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", o.context());
    assert!(
        errors[0].contains("--split-vars: 41 is not a state variable"),
        "{}",
        o.context()
    );
}

#[test]
fn a_rank_killed_mid_run_ends_every_rank() {
    // Rank 1 (holding half of the node table, or a slice of the states) is killed while
    // rank 0 explores: the run must end, with a failure, instead of rank 0 waiting for it
    // forever.
    for (split, strategy) in [("table", "bfs"), ("states", "bfs"), ("states", "sat")] {
        a_rank_killed_mid_run_ends_every_rank_with(split, strategy);
    }
}

fn a_rank_killed_mid_run_ends_every_rank_with(split: &str, strategy: &str) {
    let _one = LAUNCH.lock().unwrap_or_else(|e| e.into_inner());
    let script =
        r#"if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then (sleep 2; kill -9 $$) & fi; exec "$0" "$@""#;
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        "2",
        "sh",
        "-c",
    ])
    .arg(script)
    .arg(env!("CARGO_BIN_EXE_rhizome"))
    .args([
        "reach",
        "--builtin",
        "philosophers:2000",
        "-s",
        strategy,
        "-w",
        "1",
        "--split",
        split,
    ]);
    launch::clear_rhizome_env(&mut cmd);
    let o = launch::run(
        cmd,
        "mpirun -np 2 (rank 1 killed) rhizome reach",
        HANG_LIMIT,
    );
    assert!(o.code.is_some_and(|c| c != 0), "{}", o.context());
    assert!(!o.stdout.contains("states "), "{}", o.context());
    assert!(!o.stderr.contains("panicked"), "{}", o.context());
}

/// `mpirun -np NP rhizome ARGS --json -`, which must succeed with records that all name
/// the `mpi` transport and NP PEs and have a positive value.
fn mpi_records(np: usize, args: &[&str]) -> (Outcome, Vec<Value>) {
    let o = mpirun_on(np, &[args, &["--json", "-"]].concat());
    assert_eq!(o.code, Some(0), "{}", o.context());
    let records: Vec<Value> = serde_json::from_str(&o.stdout).expect("JSON records");
    for r in &records {
        assert_eq!(r["transport"], "mpi");
        assert_eq!(r["pes"], np);
        assert!(r["value"].as_f64().is_some_and(|v| v > 0.0), "{r}");
    }
    (o, records)
}

/// `bench bale KERNEL SIZES` on `np` ranks with buffers of 5 items (many refusals and
/// flushes between the ranks): one checked record of the `mpi` transport per version in
/// `imps`, in that order.
fn bench_bale_on(np: usize, kernel: &str, sizes: &[&str], imps: &[&str]) {
    let args = ["bench", "bale", kernel, "-b", "5", "--repeat", "1"];
    let (o, records) = mpi_records(np, &[&args[..], sizes].concat());
    let names: Vec<&str> = records.iter().filter_map(|r| r["name"].as_str()).collect();
    let want: Vec<String> = imps
        .iter()
        .map(|i| format!("bale {kernel} ({i})"))
        .collect();
    assert_eq!(names, want, "{}", o.context());
    for r in &records {
        assert_eq!(r["result"], "checked");
    }
}

#[test]
fn bench_bale_checks_every_implementation_on_2_and_4_ranks() {
    for np in [2, 4] {
        for kernel in ["histogram", "index-gather"] {
            let sizes = ["-n", "20000", "-T", "100"];
            bench_bale_on(
                np,
                kernel,
                &sizes,
                &["agp", "conveyor", "context", "selector"],
            );
        }
    }
}

#[test]
fn bench_bale_matrix_kernels_check_every_version_on_2_and_4_ranks() {
    let matrix = ["-n", "300", "-z", "4"];
    let cases: [(&str, &[&str]); 6] = [
        ("permute", &matrix),
        ("randperm", &["-n", "3000"]),
        ("transpose", &matrix),
        ("triangles", &["--scale", "9"]),
        ("triangles", &["-K", "1:2x3x4x2"]),
        ("toposort", &matrix),
    ];
    for np in [2, 4] {
        for (kernel, sizes) in cases {
            // Every kernel has these three; permute also an aggregation-context version.
            let imps: &[&str] = match kernel {
                "permute" => &["agp", "conveyor", "context", "selector"],
                _ => &["agp", "conveyor", "selector"],
            };
            bench_bale_on(np, kernel, sizes, imps);
        }
    }
}

#[test]
fn bench_graph_checks_every_implementation_on_2_and_4_ranks() {
    let launches = [2, 4]
        .into_iter()
        .flat_map(|np| ["bfs", "cc"].map(|k| (np, k)));
    for (np, kernel) in launches {
        let small = ["--scale", "9", "--tasks", "64", "--repeat", "1"];
        let (o, records) = mpi_records(np, &[&["bench", "graph", kernel][..], &small].concat());
        // Every run checked (a BFS tree validated, components against a union-find),
        // or the command fails.
        let rates: Vec<&str> = records
            .iter()
            .filter(|r| r["unit"] == "MTEPS")
            .filter_map(|r| r["name"].as_str())
            .collect();
        let want = ["combining", "none", "tuned"].map(|i| format!("graph {kernel} scale 9 {i}"));
        assert_eq!(rates, want, "{}", o.context());
    }
}
