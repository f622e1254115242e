//! `rhizome bench bale` for the matrix and permutation kernels (permute, randperm,
//! transpose, triangles, toposort) end to end on the local transport: one checked record
//! per version the kernel has, in the kernel's unit, and one-line refusals of a version
//! it does not have and of impossible sizes. Nothing here measures time.

#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
#[path = "../../rhizome-mc/tests/support/models.rs"]
mod models;
mod support;

use serde_json::Value;
use support::{clean_error, rhizome, success, usage_error};

/// `bench bale KERNEL ARGS` on `pes` PEs with tiny buffers: its records.
fn records(kernel: &str, pes: &str, args: &[&str]) -> Vec<Value> {
    let base = [
        "bench", "bale", kernel, "-b", "3", "--pes", pes, "--repeat", "1",
    ];
    let o = success(rhizome(&[&base[..], args, &["--json", "-"]].concat()));
    serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", o.context()))
}

#[test]
fn every_kernel_records_each_of_its_versions_checked() {
    let cases: [(&str, &[&str], &[&str], &str); 6] = [
        (
            "permute",
            &["-n", "200", "-z", "4"],
            &["agp", "conveyor", "context", "selector"],
            "nonzeros/s",
        ),
        (
            "randperm",
            &["-n", "2000"],
            &["agp", "conveyor", "selector"],
            "entries/s",
        ),
        (
            "transpose",
            &["-n", "200", "-z", "4"],
            &["agp", "conveyor", "selector"],
            "nonzeros/s",
        ),
        (
            "triangles",
            &["--scale", "9"],
            &["agp", "conveyor", "selector"],
            "edges/s",
        ),
        (
            "triangles",
            &["-K", "1:2x3x4"],
            &["agp", "conveyor", "selector"],
            "edges/s",
        ),
        (
            "toposort",
            &["-n", "200", "-z", "4"],
            &["agp", "conveyor", "selector"],
            "rows/s",
        ),
    ];
    for (pes, (kernel, args, imps, unit)) in ["1", "3", "2", "4", "3", "2"].into_iter().zip(cases) {
        let recs = records(kernel, pes, args);
        let names: Vec<&str> = recs.iter().filter_map(|r| r["name"].as_str()).collect();
        let want: Vec<String> = imps
            .iter()
            .map(|i| format!("bale {kernel} ({i})"))
            .collect();
        assert_eq!(names, want);
        for r in &recs {
            assert_eq!(r["result"], "checked", "{r}");
            assert_eq!(r["unit"], unit, "{r}");
            assert_eq!(r["pes"].as_u64(), pes.parse().ok(), "{r}");
            assert!(r["value"].as_f64().is_some_and(|v| v > 0.0), "{r}");
        }
    }
}

#[test]
fn a_version_a_kernel_lacks_or_an_impossible_size_is_one_line() {
    for kernel in ["randperm", "transpose", "triangles", "toposort"] {
        let e = clean_error(
            &rhizome(&["bench", "bale", kernel, "--impl", "context"]),
            &["has no context version"],
        );
        assert!(e.contains(kernel), "{e}");
    }
    clean_error(
        &rhizome(&["bench", "bale", "triangles", "--scale", "0"]),
        &["--scale"],
    );
    clean_error(&rhizome(&["bench", "bale", "permute", "-n", "0"]), &["-n"]);
    clean_error(
        &rhizome(&["bench", "bale", "permute", "-K", "1:2x3"]),
        &["--kronecker", "triangles only"],
    );
    for (spec, why) in [("4:2x3", "mode"), ("1:2x0", "leaves"), ("1:2;3", "leaves")] {
        usage_error(
            &rhizome(&["bench", "bale", "triangles", "-K", spec]),
            &[spec, why],
        );
    }
}
