//! Where output goes: closed pipes, and files that a report may or may not replace.

use anyhow::bail;
use std::path::Path;

/// Restores the default action of SIGPIPE, which the Rust runtime sets to "ignore".
///
/// Ignored, a write to a closed pipe returns `EPIPE`, and `println!`/`eprintln!` turn that
/// into a panic whose message goes to the closed pipe or is lost (exit 101). With the
/// default action, the kernel ends the process at the first such write, silently, which is
/// what `grep`, `ls` and every other filter does under `| head`; the shell reports status
/// 141 (128 + SIGPIPE). The choice covers every write in the program (progress lines,
/// summaries, JSON on stdout) without handling `EPIPE` at each of them.
pub fn die_quietly_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: signal(2) with SIG_DFL installs no handler code, only the kernel's default
    // action; it runs first thing in main, before any thread exists that could race on the
    // disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// What an existing file at an output path may be replaced by rhizome.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Replaceable {
    /// A JSON report: a JSON object or array that rhizome wrote (`reach --json`, `bench
    /// --json`).
    Report,
    /// A model file in a format `rhizome reach` reads (a `--write-model` output).
    Model,
}

/// Refuses to write `path` when that would destroy a file the user did not ask to replace:
/// an existing file is replaced only when it is what this output writes (an earlier
/// report, an earlier model file), or with `--force` (`force: None` where the command has
/// no such option). `inputs` are files this run reads, never replaced. Checked before the
/// run, so that nothing is computed only to be refused.
pub fn check_output(
    flag: &str,
    path: &Path,
    kind: Replaceable,
    inputs: &[&Path],
    force: Option<bool>,
) -> anyhow::Result<()> {
    for input in inputs {
        if same_file(path, input) {
            bail!(
                "{flag} {}: that is the model this run reads; refusing to overwrite it",
                path.display()
            );
        }
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // Nothing there yet (or unreachable: the write will say why).
    };
    if !meta.is_file() {
        // /dev/null, a FIFO: writing destroys nothing.
        return Ok(());
    }
    if force == Some(true) || meta.len() == 0 {
        return Ok(());
    }
    let ours = match kind {
        Replaceable::Report => is_report(path),
        Replaceable::Model => std::fs::read(path).is_ok_and(|b| written_by_rhizome(path, &b)),
    };
    if !ours {
        let what = match kind {
            Replaceable::Report => "a JSON report written by rhizome",
            Replaceable::Model => "a model file written by rhizome --write-model",
        };
        let remedy = match force {
            Some(_) => "remove it or pass --force",
            None => "remove it first",
        };
        bail!(
            "{flag} {}: the file exists and is not {what}; refusing to overwrite it ({remedy})",
            path.display()
        );
    }
    Ok(())
}

/// Whether the file holds a report rhizome wrote: `reach --json` writes an object with
/// `model`, `strategy` and `states`; `bench --json` an array of records with `name`,
/// `transport` and `value`.
fn is_report(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    let has = |o: &serde_json::Value, keys: &[&str]| keys.iter().all(|k| o.get(k).is_some());
    match &v {
        serde_json::Value::Object(_) => has(&v, &["model", "strategy", "states"]),
        serde_json::Value::Array(a) => {
            !a.is_empty() && a.iter().all(|r| has(r, &["name", "transport", "value"]))
        }
        _ => false,
    }
}

/// Whether `bytes` are exactly what `--write-model` writes for the model they hold: a
/// format-B file that reads back and writes out byte for byte. A file from LTSmin differs
/// (it has action labels and a stored state set after the relations), so a model a user
/// downloaded is never mistaken for an earlier export.
fn written_by_rhizome(path: &Path, bytes: &[u8]) -> bool {
    use rhizome_mc::model_file::{Format, parse_model, write_format_b};
    parse_model(bytes, &path.display().to_string(), Some(Format::B))
        .is_ok_and(|model| write_format_b(&model) == bytes)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Whether `path` names a model file by its extension (`.bdd`, `.ldd`).
pub fn looks_like_model(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("bdd") || e.eq_ignore_ascii_case("ldd"))
}

/// `-` as an output path: standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// With `--json -` the report owns standard output: the human summary goes to stderr.
/// Rather than thread a writer through every line of the summary, file descriptor 1 is
/// pointed at stderr for the run, and the real stdout is kept for the report.
pub struct ReportToStdout {
    #[cfg(unix)]
    saved: std::fs::File,
}

impl ReportToStdout {
    /// Points fd 1 at stderr and keeps the real stdout for [`ReportToStdout::write`].
    pub fn divert() -> anyhow::Result<ReportToStdout> {
        use std::io::Write;
        std::io::stdout().flush()?;
        #[cfg(unix)]
        {
            use std::os::fd::FromRawFd;
            // SAFETY: dup and dup2 act on descriptors this process owns (0..2 are open
            // for its whole life); `saved` is a fresh descriptor that only the returned
            // File owns and closes.
            unsafe {
                let saved = libc::dup(1);
                if saved < 0 || libc::dup2(2, 1) < 0 {
                    anyhow::bail!(
                        "--json -: cannot redirect the summary to stderr: {}",
                        std::io::Error::last_os_error()
                    );
                }
                Ok(ReportToStdout {
                    saved: std::fs::File::from_raw_fd(saved),
                })
            }
        }
        #[cfg(not(unix))]
        anyhow::bail!("--json - needs a Unix system; name a file instead")
    }

    /// Writes the report to the real standard output.
    pub fn write(&mut self, text: &str) -> anyhow::Result<()> {
        use std::io::Write;
        std::io::stdout().flush()?;
        #[cfg(unix)]
        {
            self.saved.write_all(text.as_bytes())?;
            self.saved.flush()?;
        }
        Ok(())
    }
}
