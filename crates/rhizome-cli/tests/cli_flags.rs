//! End-to-end tests of the command's flags and limits: Sylvan `bddmc`'s options with its
//! meaning (compared with what bddmc printed on one model), `--merge-relations`,
//! `--print-matrix`, LDD files, memory and thread limits, closed pipes, outputs that must
//! never destroy a file, the default built-in model, shell completions, the help texts and
//! `bench`'s table.
//!
//! The shared models are found at `$RHIZOME_MODELS`, else at `../shared/models` beside the
//! repository (by `build.rs`); the tests that need them are reported as ignored, with the
//! reason, when they are absent. Nothing here
//! measures time: every launch only has a generous hang limit.

#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
#[path = "../../rhizome-mc/tests/support/models.rs"]
mod models;
mod support;

use support::{HANG_LIMIT, TempDir, command, field, models_dir, rhizome, s, success};

use launch::Outcome;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A run-time error (see [`support::clean_error`]) that printed nothing on stdout.
fn clean_error(o: &Outcome, needles: &[&str]) {
    support::clean_error(o, needles);
    assert!(o.stdout.is_empty(), "{}", o.context());
}

// ----- bddmc's flags -----

/// `bddmc --print-matrix` on `ltsmin-2017/anderson.4.bdd`, as printed by Sylvan's bddmc
/// 7b69b56 (`bddmc -w 2 -s bfs --print-matrix`, rows in file order; the time prefix
/// `[    0.26] ` of each line removed).
const ANDERSON4_MATRIX_BFS: [&str; 24] = [
    "----+w---+---",
    "----+r---+---",
    "----++-------",
    "rrrr+r-------",
    "wwww+r-------",
    "wwww+r-------",
    "------+-w+---",
    "------+-r+---",
    "------+-+----",
    "rrrr--+-r----",
    "wwww--+-r----",
    "wwww--+-r----",
    "-------+-+-w-",
    "-------+-+-r-",
    "-------+---+-",
    "rrrr---+---r-",
    "wwww---+---r-",
    "wwww---+---r-",
    "---------++-w",
    "---------++-r",
    "----------+-+",
    "rrrr------+-r",
    "wwww------+-r",
    "wwww------+-r",
];

/// The same from `bddmc -w 2 -s sat --print-matrix` (7b69b56): for saturation bddmc sorts
/// the groups by their first variable before printing.
const ANDERSON4_MATRIX_SAT: [&str; 24] = [
    "rrrr+r-------",
    "wwww+r-------",
    "wwww+r-------",
    "rrrr--+-r----",
    "wwww--+-r----",
    "wwww--+-r----",
    "rrrr---+---r-",
    "wwww---+---r-",
    "wwww---+---r-",
    "rrrr------+-r",
    "wwww------+-r",
    "wwww------+-r",
    "----+w---+---",
    "----+r---+---",
    "----++-------",
    "------+-w+---",
    "------+-r+---",
    "------+-+----",
    "-------+-+-w-",
    "-------+-+-r-",
    "-------+---+-",
    "---------++-w",
    "---------++-r",
    "----------+-+",
];

/// bddmc 7b69b56 on anderson.4.bdd (`-w 2 -s bfs --deadlocks`): `Final states: 29641
/// states`, 81 lines `Level N done`, and no `Found N deadlock states` line.
const ANDERSON4_STATES: &str = "29641";
const ANDERSON4_LEVELS: &str = "81";

/// bddmc 7b69b56 `--merge-relations --count-nodes -s bfs`: `Final states: 5935 BDD nodes`.
/// Sylvan's node count includes the terminal node; rhizome's counts inner nodes.
const ANDERSON4_FINAL_NODES_SYLVAN: u64 = 5935;

/// The matrix rows a run printed: the lines of `-`, `r`, `w`, `+` before the summary.
fn matrix_rows(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .take_while(|l| !l.starts_with("model "))
        .filter(|l| !l.is_empty() && l.chars().all(|c| "-rw+".contains(c)))
        .collect()
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn bddmc_short_flags_and_matrix_match_bddmc_on_anderson4() {
    let Some(dir) = models_dir() else { return };
    let model = dir.join("ltsmin-2017/anderson.4.bdd");
    let m = s(&model);
    // bddmc's spelling: -w, -s, and -d (which bddmc itself spells only --deadlocks).
    let o = success(rhizome(&[
        "reach",
        "-w",
        "2",
        "-s",
        "bfs",
        "-d",
        "--print-matrix",
        m,
    ]));
    assert_eq!(
        matrix_rows(&o.stdout),
        ANDERSON4_MATRIX_BFS,
        "{}",
        o.context()
    );
    assert_eq!(field(&o.stdout, "states"), ANDERSON4_STATES);
    assert_eq!(field(&o.stdout, "levels"), ANDERSON4_LEVELS);
    assert_eq!(field(&o.stdout, "deadlocks"), "0");
    assert!(
        field(&o.stdout, "strategy").contains("(2 workers"),
        "{}",
        o.context()
    );

    // The long forms mean the same.
    let long = success(rhizome(&[
        "reach",
        "--workers",
        "2",
        "--strategy",
        "sat",
        "--deadlocks",
        "--print-matrix",
        m,
    ]));
    assert_eq!(
        matrix_rows(&long.stdout),
        ANDERSON4_MATRIX_SAT,
        "{}",
        long.context()
    );
    assert_eq!(field(&long.stdout, "states"), ANDERSON4_STATES);
    assert_eq!(field(&long.stdout, "deadlocks"), "0");
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn merged_relations_give_bddmcs_states_levels_and_nodes() {
    let Some(dir) = models_dir() else { return };
    let model = dir.join("ltsmin-2017/anderson.4.bdd");
    for strategy in ["bfs", "sat", "chaining", "par"] {
        let o = success(rhizome(&[
            "reach",
            "-w",
            "2",
            "-s",
            strategy,
            "--merge-relations",
            s(&model),
        ]));
        assert_eq!(field(&o.stdout, "states"), ANDERSON4_STATES, "{strategy}");
        assert_eq!(
            field(&o.stdout, "nodes").parse::<u64>().unwrap(),
            ANDERSON4_FINAL_NODES_SYLVAN - 1,
            "{strategy}: final visited set\n{}",
            o.context()
        );
        if strategy == "bfs" {
            // One relation: every BFS level is one image of the whole relation, so the
            // level count is the breadth of the state space, as with separate groups.
            assert_eq!(field(&o.stdout, "levels"), ANDERSON4_LEVELS);
        }
    }
}

#[test]
fn merged_relations_keep_states_and_deadlocks_of_the_builtin_model() {
    for strategy in ["bfs", "sat"] {
        let plain = success(rhizome(&[
            "reach",
            "--builtin",
            "philosophers:12",
            "-s",
            strategy,
            "-d",
        ]));
        let merged = success(rhizome(&[
            "reach",
            "--builtin",
            "philosophers:12",
            "-s",
            strategy,
            "-d",
            "--merge-relations",
        ]));
        for key in ["states", "deadlocks"] {
            assert_eq!(
                field(&plain.stdout, key),
                field(&merged.stdout, key),
                "{strategy} {key}\n{}\n{}",
                plain.context(),
                merged.context()
            );
        }
        assert!(
            field(&merged.stdout, "model").ends_with("(relations merged)"),
            "{}",
            merged.context()
        );
    }
}

#[test]
fn matrix_of_a_builtin_model_marks_the_integers_each_group_touches() {
    // philosophers:N: integers s_0 f_0 s_1 f_1 ...; philosopher i touches s_i, f_i and
    // f_(i+1 mod N). A built-in model records no read/write split: `+`.
    let o = success(rhizome(&[
        "reach",
        "--builtin",
        "philosophers:4",
        "-s",
        "bfs",
        "--print-matrix",
    ]));
    let want: Vec<String> = (0..4)
        .map(|i| {
            let mut row = vec!['-'; 8];
            row[2 * i] = '+';
            row[2 * i + 1] = '+';
            row[2 * ((i + 1) % 4) + 1] = '+';
            row.into_iter().collect()
        })
        .collect();
    assert_eq!(matrix_rows(&o.stdout), want, "{}", o.context());
}

// ----- files rhizome does not read -----

#[test]
fn an_ldd_file_is_named_as_such() {
    // The LDD header: int vector_size, int k = -1, size_t node count, 16-byte records,
    // size_t root.
    let tmp = TempDir::new("ldd");
    let mut bytes = Vec::new();
    bytes.extend(3i32.to_le_bytes());
    bytes.extend((-1i32).to_le_bytes());
    bytes.extend(1u64.to_le_bytes());
    bytes.extend([0u8; 16]);
    bytes.extend(2u64.to_le_bytes());
    // Named `.bdd`: the content decides, not the name.
    let f = tmp.path("renamed.bdd");
    std::fs::write(&f, &bytes).unwrap();
    let o = rhizome(&["reach", s(&f)]);
    clean_error(&o, &["LDD file", "formats A", "B", s(&f)]);
    assert!(!o.stderr.contains("state_bits"), "{}", o.context());
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn the_shared_ldd_files_are_named_as_such() {
    let Some(dir) = models_dir() else { return };
    for name in ["anderson.4.ldd", "bakery.4.ldd"] {
        let f = dir.join("ltsmin-2017").join(name);
        clean_error(&rhizome(&["reach", s(&f)]), &["LDD file", "formats A"]);
    }
}

// ----- limits -----

#[test]
fn a_memory_limit_beyond_the_machine_reserves_lazily_and_runs() {
    // 1 TiB of tables on a machine with far less: address space is reserved, memory is
    // committed as the table grows (Sylvan's way). Where the kernel does not overcommit
    // (vm.overcommit_memory = 2), the limit is refused with one line instead.
    let o = rhizome(&["reach", "--memory", "1T", "-s", "sat"]);
    let strict =
        std::fs::read_to_string("/proc/sys/vm/overcommit_memory").is_ok_and(|s| s.trim() == "2");
    if strict {
        clean_error(&o, &["--memory"]);
        return;
    }
    let o = success(o);
    assert_eq!(
        field(&o.stdout, "states"),
        "3145168096065837266706434",
        "{}",
        o.context()
    );
}

#[test]
fn a_memory_limit_the_address_space_cannot_hold_is_refused_in_one_line() {
    let mut cmd = command(&["reach", "--memory", "1T", "-s", "sat"]);
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits,
    // between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            // 8 GiB of address space: the program and a default-sized table fit, the 1 TiB
            // reservation does not.
            let limit = libc::rlimit {
                rlim_cur: 8 << 30,
                rlim_max: 8 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = launch::run(
        cmd,
        "rhizome reach --memory 1T (8 GiB address space)",
        HANG_LIMIT,
    );
    clean_error(&o, &["--memory 1.0 TiB", "cannot reserve"]);
}

#[test]
fn absurd_worker_and_pe_counts_are_refused_in_one_line() {
    clean_error(
        &rhizome(&["reach", "--workers", "100000"]),
        &["--workers 100000", "cores"],
    );
    clean_error(&rhizome(&["reach", "-w", "100000"]), &["--workers 100000"]);
    clean_error(
        &rhizome(&["bench", "fib", "10", "--workers", "100000"]),
        &["--workers 100000"],
    );
    clean_error(
        &rhizome(&["bench", "comm", "--pes", "100000"]),
        &["--pes 100000"],
    );
    // Each count within the bound, their product beyond it.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pes = (2 * cores).to_string();
    clean_error(
        &rhizome(&[
            "bench",
            "tasks",
            "fib",
            "10",
            "--pes",
            &pes,
            "--workers",
            "4",
        ]),
        &[&format!("--pes {pes} x --workers 4"), "threads"],
    );
    let mut cmd = command(&["reach", "-s", "sat"]);
    cmd.env("RHIZOME_WORKERS", "100000");
    clean_error(
        &launch::run(cmd, "RHIZOME_WORKERS=100000 rhizome reach", HANG_LIMIT),
        &["--workers 100000"],
    );
    // The bound leaves room for oversubscription: 2 PEs x 1 worker always runs.
    success(rhizome(&[
        "bench", "tasks", "fib", "12", "--pes", "2", "--repeat", "1",
    ]));
}

// ----- closed pipes -----

/// Runs `args` with stdout (`which = 1`) or stderr (`which = 2`) a pipe whose reading end
/// is closed before the program starts, the other stream captured. Returns the status and
/// the captured stream.
fn with_closed_pipe(args: &[&str], which: u8) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader); // Every write to `writer` now fails with EPIPE or raises SIGPIPE.
    let mut cmd = command(args);
    cmd.stdin(Stdio::null());
    if which == 1 {
        cmd.stdout(writer).stderr(Stdio::piped());
    } else {
        cmd.stderr(writer).stdout(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("start rhizome");
    let mut captured = if which == 1 {
        Box::new(child.stderr.take().unwrap()) as Box<dyn std::io::Read + Send>
    } else {
        Box::new(child.stdout.take().unwrap())
    };
    let drain = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = captured.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > HANG_LIMIT {
            let _ = child.kill();
            panic!("rhizome {} hung with a closed pipe", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (status, drain.join().unwrap())
}

fn ended_by_sigpipe(status: std::process::ExitStatus, other: &str, what: &str) {
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(libc::SIGPIPE),
        "{what}: not ended quietly by SIGPIPE: {status:?}\n{other}"
    );
    for bad in ["panicked", "Broken pipe", "error"] {
        assert!(
            !other.contains(bad),
            "{what}: {bad:?} on the other stream\n{other}"
        );
    }
}

#[test]
fn a_closed_stdout_ends_the_program_quietly() {
    for args in [
        &["reach", "--builtin", "philosophers:64", "-s", "sat"][..],
        &[
            "reach",
            "--builtin",
            "philosophers:8",
            "-s",
            "bfs",
            "--count-nodes",
        ],
        &["reach", "-s", "sat", "--json", "-"],
        &["completions", "bash"],
        &["--help"],
    ] {
        let (status, stderr) = with_closed_pipe(args, 1);
        ended_by_sigpipe(status, &stderr, &args.join(" "));
    }
}

#[test]
fn a_closed_stderr_ends_the_program_quietly() {
    for args in [
        // An error message is the one write.
        &["reach", "--workers", "0"][..],
        // With `--json -` the summary goes to stderr.
        &[
            "reach",
            "--builtin",
            "philosophers:8",
            "-s",
            "sat",
            "--json",
            "-",
        ],
    ] {
        let (status, stdout) = with_closed_pipe(args, 2);
        ended_by_sigpipe(status, &stdout, &args.join(" "));
    }
}

// ----- outputs never destroy a file -----

/// A model file made by the tool, as a user would have one.
fn exported_model(tmp: &TempDir, name: &str) -> PathBuf {
    let f = tmp.path(name);
    success(rhizome(&[
        "reach",
        "--builtin",
        "philosophers:4",
        "-s",
        "sat",
        "--write-model",
        s(&f),
    ]));
    f
}

#[test]
fn json_never_overwrites_a_model_or_a_foreign_file() {
    let tmp = TempDir::new("json-guard");
    let model = exported_model(&tmp, "model.bdd");
    let original = std::fs::read(&model).unwrap();

    // "Print JSON for model.bdd": no model named, a model file as the report.
    let o = rhizome(&["reach", "-s", "bfs", "--json", s(&model)]);
    clean_error(&o, &["--json", "looks like a model file", "rhizome reach"]);
    // A report path ending in .bdd that does not exist yet is refused the same way.
    let o = rhizome(&["reach", "-s", "sat", "--json", s(&tmp.path("new.bdd"))]);
    clean_error(&o, &["looks like a model file"]);
    assert!(!tmp.path("new.bdd").exists());
    // The model that is read, as its own report.
    let o = rhizome(&["reach", s(&model), "-s", "sat", "--json", s(&model)]);
    clean_error(&o, &["the model this run reads"]);
    // ... even with --force.
    let o = rhizome(&[
        "reach",
        s(&model),
        "-s",
        "sat",
        "--json",
        s(&model),
        "--force",
    ]);
    clean_error(&o, &["the model this run reads"]);
    assert_eq!(
        std::fs::read(&model).unwrap(),
        original,
        "the model was changed"
    );

    // A file that is not a report.
    let notes = tmp.path("notes.json");
    std::fs::write(&notes, "{\"mine\": true}\n").unwrap();
    let o = rhizome(&["reach", "-s", "sat", "--json", s(&notes)]);
    clean_error(&o, &["--json", "not a JSON report", "--force"]);
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "{\"mine\": true}\n"
    );
    // ... unless forced.
    success(rhizome(&[
        "reach",
        "-s",
        "sat",
        "--json",
        s(&notes),
        "--force",
    ]));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&notes).unwrap()).unwrap();
    assert_eq!(v["states"], "3145168096065837266706434");

    // An earlier report is replaced.
    let report = tmp.path("run.json");
    success(rhizome(&[
        "reach",
        "--builtin",
        "philosophers:3",
        "-s",
        "sat",
        "--json",
        s(&report),
    ]));
    success(rhizome(&[
        "reach",
        "--builtin",
        "philosophers:5",
        "-s",
        "sat",
        "--json",
        s(&report),
    ]));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["model"], "philosophers:5");

    // bench --json has the same guard (and no --force).
    let o = rhizome(&["bench", "fib", "10", "--json", s(&model)]);
    clean_error(&o, &["--json", "not a JSON report", "remove it first"]);
    assert_eq!(
        std::fs::read(&model).unwrap(),
        original,
        "the model was changed"
    );
    let bench = tmp.path("bench.json");
    success(rhizome(&["bench", "fib", "10", "--json", s(&bench)]));
    success(rhizome(&["bench", "fib", "11", "--json", s(&bench)]));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&bench).unwrap()).unwrap();
    assert_eq!(v[0]["name"], "fib(11) fork");
}

#[test]
fn json_dash_is_the_report_on_stdout_and_the_summary_on_stderr() {
    let o = success(rhizome(&[
        "reach",
        "--builtin",
        "philosophers:6",
        "-s",
        "sat",
        "--json",
        "-",
    ]));
    let v: Value = serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not the JSON report alone: {e}\n{}", o.context()));
    assert_eq!(v["model"], "philosophers:6");
    assert_eq!(v["states"].as_str(), Some(field(&o.stderr, "states")));
    assert!(
        !std::path::Path::new("-").exists(),
        "a file named - was written"
    );

    let o = success(rhizome(&[
        "bench",
        "fib",
        "12",
        "--workers",
        "1",
        "--json",
        "-",
    ]));
    let v: Value =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", o.context()));
    assert_eq!(v[0]["result"], "144");
    assert!(
        o.stderr.contains("fib(12)"),
        "the table goes to stderr\n{}",
        o.context()
    );
}

#[test]
fn write_model_never_overwrites_an_input_or_a_foreign_file() {
    let tmp = TempDir::new("write-guard");
    let model = exported_model(&tmp, "model.bdd");
    let original = std::fs::read(&model).unwrap();

    // Over the model read: never, even with --force.
    for force in [false, true] {
        let mut args = vec!["reach", s(&model), "-s", "sat", "--write-model", s(&model)];
        if force {
            args.push("--force");
        }
        clean_error(
            &rhizome(&args),
            &["--write-model", "the model this run reads"],
        );
        assert_eq!(std::fs::read(&model).unwrap(), original);
    }
    // Over a file that is not a model rhizome wrote.
    let notes = tmp.path("notes.bdd");
    std::fs::write(&notes, b"my notes\n").unwrap();
    let o = rhizome(&["reach", "-s", "sat", "--write-model", s(&notes)]);
    clean_error(
        &o,
        &[
            "--write-model",
            "not a model file written by rhizome",
            "--force",
        ],
    );
    assert_eq!(std::fs::read(&notes).unwrap(), b"my notes\n");
    // An earlier export is replaced, and --force replaces anything else.
    success(rhizome(&[
        "reach",
        "--builtin",
        "philosophers:5",
        "-s",
        "sat",
        "--write-model",
        s(&model),
    ]));
    assert_ne!(std::fs::read(&model).unwrap(), original);
    success(rhizome(&[
        "reach",
        "-s",
        "sat",
        "--write-model",
        s(&notes),
        "--force",
    ]));
    let o = success(rhizome(&["reach", s(&notes), "-s", "sat"]));
    assert_eq!(field(&o.stdout, "states"), "3145168096065837266706434");
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn write_model_never_overwrites_a_model_file_from_elsewhere() {
    // A model file from elsewhere (here a shared LTSmin export) is not an earlier export.
    let tmp = TempDir::new("foreign");
    let Some(dir) = models_dir() else { return };
    let foreign = tmp.path("anderson.4.bdd");
    std::fs::copy(dir.join("ltsmin-2017/anderson.4.bdd"), &foreign).unwrap();
    let before = std::fs::read(&foreign).unwrap();
    let o = rhizome(&["reach", "-s", "sat", "--write-model", s(&foreign)]);
    clean_error(&o, &["not a model file written by rhizome"]);
    assert_eq!(std::fs::read(&foreign).unwrap(), before);
}

// ----- defaults, completions, help -----

#[test]
fn philosophers_without_n_is_the_default_64() {
    let bare = success(rhizome(&[
        "reach",
        "--builtin",
        "philosophers",
        "-s",
        "sat",
    ]));
    let default = success(rhizome(&["reach", "-s", "sat"]));
    assert_eq!(field(&bare.stdout, "model"), "philosophers:64");
    assert_eq!(field(&default.stdout, "model"), "philosophers:64");
    assert_eq!(
        field(&bare.stdout, "states"),
        field(&default.stdout, "states")
    );
}

#[test]
fn completions_for_each_shell_know_reach_and_its_options() {
    // fish spells a long option `-l strategy`.
    for (shell, long) in [("bash", "--"), ("zsh", "--"), ("fish", "-l ")] {
        let o = success(rhizome(&["completions", shell]));
        let words = [
            "reach".to_string(),
            "bench".to_string(),
            format!("{long}strategy"),
            format!("{long}merge-relations"),
        ];
        for word in &words {
            assert!(
                o.stdout.contains(word),
                "{shell}: no {word}\n{}",
                o.context()
            );
        }
    }
    let o = rhizome(&["completions", "tcsh"]);
    assert_eq!(o.code, Some(2), "{}", o.context());
}

#[test]
fn help_documents_exit_codes_pes_and_no_path_outside_the_repository() {
    let top = success(rhizome(&["--help"]));
    for needle in [
        "Exit status",
        "0 ",
        "1 ",
        "2 ",
        "141",
        "SIGPIPE",
        "completions",
    ] {
        assert!(top.stdout.contains(needle), "no {needle:?}\n{}", top.stdout);
    }
    let reach = success(rhizome(&["reach", "--help"]));
    for bad in ["../", "shared/", "ARCHITECTURE"] {
        assert!(
            !reach.stdout.contains(bad),
            "{bad:?} in reach --help\n{}",
            reach.stdout
        );
    }
    for needle in [
        "-w, --workers",
        "-s, --strategy",
        "-d, --deadlocks",
        "--merge-relations",
        "--print-matrix",
        "--pes N (or mpirun -np N, one PE per rank): with --split states",
        "--split table",
        "--force",
    ] {
        assert!(
            reach.stdout.contains(needle),
            "no {needle:?}\n{}",
            reach.stdout
        );
    }
}

#[test]
fn bench_tables_keep_their_columns_in_line() {
    let o = success(rhizome(&[
        "bench",
        "comm",
        "--pes",
        "2",
        "--repeat",
        "1",
        "--iters",
        "200",
        "--messages",
        "2000",
    ]));
    let lines: Vec<&str> = o.stdout.lines().filter(|l| !l.is_empty()).collect();
    assert!(lines.len() > 5, "{}", o.context());
    // Right-aligned columns: every row ends where the header ends, and each column's
    // right edge (a non-space before a space or the end) is where the header's is.
    let edges = |l: &str| -> Vec<usize> {
        let b = l.as_bytes();
        (0..b.len())
            .filter(|&i| b[i] != b' ' && (i + 1 == b.len() || b[i + 1] == b' '))
            .collect()
    };
    let header = edges(lines[0]);
    for l in &lines[1..] {
        let row = edges(l);
        // The name column is left-aligned: compare the columns after it.
        let tail = |e: &[usize]| e[e.len() - 7..].to_vec();
        assert_eq!(
            tail(&row),
            tail(&header),
            "misaligned row\n{l}\n{}",
            lines[0]
        );
    }
}
