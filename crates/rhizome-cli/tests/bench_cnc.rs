//! `rhizome bench cnc` end to end on the local transport: one checked record per PE
//! count, the 1-PE rate as the baseline of the others, and one-line refusals of
//! impossible sizes. Nothing here measures time: only the shape of the records and the
//! checked results they carry.

#[path = "../../rhizome/tests/support/launch.rs"]
mod launch;
#[path = "../../rhizome-mc/tests/support/models.rs"]
mod models;
mod support;

use serde_json::Value;
use support::{clean_error, rhizome, success, usage_error};

fn records(args: &[&str]) -> Vec<Value> {
    let o = success(rhizome(
        &[
            &["bench", "cnc"][..],
            args,
            &["--repeat", "1", "--json", "-"],
        ]
        .concat(),
    ));
    serde_json::from_str(&o.stdout).expect("JSON records")
}

#[test]
fn cholesky_and_smith_waterman_give_checked_records_on_1_and_2_pes() {
    let chol = records(&["cholesky", "--tiles", "3", "--tile", "8"]);
    assert_eq!(chol.len(), 2, "{chol:?}");
    for (r, pes) in chol.iter().zip([1, 2]) {
        assert_eq!(r["name"], "cnc cholesky");
        assert_eq!(r["pes"], pes);
        assert_eq!(r["unit"], "Gflop/s");
        assert!(r["value"].as_f64().unwrap() > 0.0, "{r}");
        assert!(
            r["result"].as_str().unwrap().starts_with("n 24 residual"),
            "{r}"
        );
    }
    assert!(chol[0]["baseline"].is_null() && chol[1]["baseline"] == chol[0]["value"]);
    let sw = records(&[
        "smith-waterman",
        "--length",
        "100",
        "--tile",
        "16",
        "--pes",
        "2",
    ]);
    assert_eq!(sw.len(), 1, "{sw:?}");
    assert_eq!(sw[0]["pes"], 2);
    // The best local alignment score of the two fixed random sequences, checked against
    // the sequential matrix inside the run; a positive score.
    let result = sw[0]["result"].as_str().unwrap();
    let best: i64 = result
        .strip_prefix("best score ")
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{result}"));
    assert!(best > 0, "{result}");
}

#[test]
fn impossible_sizes_are_one_line_errors() {
    let bad: [(&[&str], &str); 3] = [
        (&["cholesky", "--tiles", "0"], "--tiles"),
        (&["smith-waterman", "--repeat", "0"], "--repeat"),
        (&["cholesky", "--pes", "0"], "--pes"),
    ];
    for (args, flag) in bad {
        clean_error(&rhizome(&[&["bench", "cnc"][..], args].concat()), &[flag]);
    }
    usage_error(&rhizome(&["bench", "cnc", "lu"]), &["lu"]);
}
