//! One benchmark measurement, printed as a table row and as a JSON record.

use crate::RuntimeOpts;
use crate::output::Replaceable;
use clap::Args;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The options of every benchmark: where its JSON records go, and the runtime's size.
#[derive(Args)]
pub struct BenchOpts {
    /// Write JSON records to this file (an existing one only if it is an earlier report),
    /// or to stdout with `-` (the table then goes to stderr). Default: none.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub runtime: RuntimeOpts,
}

impl BenchOpts {
    /// Refuses impossible thread counts and an unusable JSON path before anything runs.
    pub fn check(&self) -> anyhow::Result<()> {
        self.runtime.check_bounds()?;
        check_json(self.json.as_deref())
    }
}

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

impl Record {
    /// A measurement `value` in `unit` of a run on `(transport, pes, workers)`, beside the
    /// peer's `(figure, name)` if there is one, with the run's result if it has one.
    pub fn new(
        name: String,
        (transport, pes, workers): (&str, usize, usize),
        value: f64,
        unit: &str,
        baseline: Option<(f64, &str)>,
        result: Option<String>,
    ) -> Record {
        Record {
            name,
            transport: transport.into(),
            pes,
            workers,
            value,
            unit: unit.into(),
            baseline: baseline.map(|b| b.0),
            baseline_name: baseline.map(|b| b.1.into()),
            result,
        }
    }
}

/// Prints `records` as an aligned table, on stdout or (when the JSON report takes stdout)
/// stderr.
fn print_table(records: &[Record], out: &mut dyn std::io::Write) -> std::io::Result<()> {
    // Each column as wide as its widest cell: names such as `aggregated AM rate (8 B)` and
    // long units must not push the rest of their row out of line.
    let width = |cell: fn(&Record) -> &str, least: usize| {
        records
            .iter()
            .map(|r| cell(r).len())
            .fold(least, usize::max)
    };
    let name_w = width(|r| &r.name, 28);
    let unit_w = width(|r| &r.unit, 8);
    let transport_w = width(|r| &r.transport, 9);
    writeln!(
        out,
        "{:<name_w$} {:>transport_w$} {:>4} {:>7} {:>14} {:>unit_w$} {:>14} {:>7}",
        "name", "transport", "pes", "workers", "value", "unit", "baseline", "ratio"
    )?;
    for r in records {
        let (base, ratio) = match r.baseline {
            Some(b) if b != 0.0 => (format!("{b:.4}"), format!("{:.2}", r.value / b)),
            _ => ("-".into(), "-".into()),
        };
        writeln!(
            out,
            "{:<name_w$} {:>transport_w$} {:>4} {:>7} {:>14.4} {:>unit_w$} {:>14} {:>7}",
            r.name, r.transport, r.pes, r.workers, r.value, r.unit, base, ratio
        )?;
    }
    Ok(())
}

/// Refuses a `--json` path before the benchmark runs: one that would replace a file that
/// is not an earlier report, or that cannot be written. `-` is stdout.
pub fn check_json(path: Option<&Path>) -> anyhow::Result<()> {
    let Some(path) = path.filter(|p| !crate::output::is_stdout(p)) else {
        return Ok(());
    };
    crate::output::check_output("--json", path, Replaceable::Report, &[], None)?;
    probe_writable(path)
}

/// The table, and the JSON records if asked for: to a file, or to stdout with `-` (the
/// table then on stderr, so that stdout is the JSON alone).
/// What a benchmark's world returns on each PE: its PE number, transport name, PE
/// count and rows (or the kernel's refusal).
pub type PeRows<T> = Result<(usize, &'static str, usize, T), String>;

/// PE 0's transport, PE count and rows from a world's results; `None` on another rank
/// of an MPI launch (only PE 0's rank reports). A failed run or kernel is an error.
pub fn pe0_rows<T>(
    results: Result<Vec<PeRows<T>>, rhizome::RunError>,
) -> anyhow::Result<Option<(&'static str, usize, T)>> {
    let results = results.map_err(|e| anyhow::anyhow!("{e}"))?;
    let Some(first) = results.into_iter().next() else {
        return Ok(None);
    };
    let (me, transport, pes, rows) = first.map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((me == 0).then_some((transport, pes, rows)))
}

pub fn report(records: &[Record], json: Option<&Path>) -> anyhow::Result<()> {
    report_with(records, records, json)
}

/// [`report`] whose JSON records are `json_records` (one per row, with fields beyond a
/// [`Record`]'s) instead of the table's rows.
pub fn report_with<T: Serialize>(
    records: &[Record],
    json_records: &[T],
    json: Option<&Path>,
) -> anyhow::Result<()> {
    let json_to_stdout = json.is_some_and(crate::output::is_stdout);
    if json_to_stdout {
        print_table(records, &mut std::io::stderr().lock())?;
    } else {
        print_table(records, &mut std::io::stdout().lock())?;
    }
    match json {
        Some(_) if json_to_stdout => {
            println!("{}", serde_json::to_string_pretty(json_records)?);
            Ok(())
        }
        Some(path) => write_json(path, json_records),
        None => Ok(()),
    }
}

/// Writes `records` as a JSON array to `path`.
fn write_json<T: Serialize>(path: &Path, records: &[T]) -> anyhow::Result<()> {
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
