//! `rhizome reach --pes N` on the local transport: the node table spread over N PEs in
//! this process. A table that is too small on one PE under `--memory` (a per-PE limit)
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
            "reach", "-s", "bfs", "-w", "1", "--memory", "1M", "--pes", pes,
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
