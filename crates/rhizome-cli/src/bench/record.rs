//! One benchmark measurement, printed as a table row and as a JSON record.

use serde::Serialize;
use std::path::Path;

/// A benchmark result; `baseline` is the peer's figure (raw MPI, Lace, ...) where one exists.
#[derive(Serialize, Clone, Debug)]
pub struct Record {
    pub name: String,
    pub transport: String,
    pub pes: usize,
    pub workers: usize,
    pub value: f64,
    pub unit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

/// Prints `records` as an aligned table.
pub fn print_table(records: &[Record]) {
    println!(
        "{:<28} {:>9} {:>4} {:>7} {:>14} {:>8} {:>14} {:>7}",
        "name", "transport", "pes", "workers", "value", "unit", "baseline", "ratio"
    );
    for r in records {
        let (base, ratio) = match r.baseline {
            Some(b) if b != 0.0 => (format!("{b:.4}"), format!("{:.2}", r.value / b)),
            _ => ("-".into(), "-".into()),
        };
        println!(
            "{:<28} {:>9} {:>4} {:>7} {:>14.4} {:>8} {:>14} {:>7}",
            r.name, r.transport, r.pes, r.workers, r.value, r.unit, base, ratio
        );
    }
}

/// Writes `records` as a JSON array to `path`.
pub fn write_json(path: &Path, records: &[Record]) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(records)?;
    std::fs::write(path, text + "\n")
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// Fails now, with the reason, if `path` cannot be written, rather than after a long run
/// whose results would then be lost. Leaves no file behind that was not there.
pub fn probe_writable(path: &Path) -> anyhow::Result<()> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}
