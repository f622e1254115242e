//! Running the built `rhizome` binary as a user does, and checking what it printed: shared
//! by the end-to-end tests of the command (`cli.rs`, `cli_flags.rs`), which include this
//! file by path. Not every including file uses every item.
#![allow(dead_code)]

use crate::launch::{self, Outcome};
use crate::models;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A launch that has not ended after this long is a hang.
pub const HANG_LIMIT: Duration = Duration::from_secs(180);

// ----- running the binary -----

/// Checks on a finished run of the command.
pub trait Checked {
    /// Exit 0, and no panic on the way (a failed PE thread could print one and still
    /// leave the process a zero exit).
    fn success(self) -> Self;
    /// The value of the summary line `key`, e.g. `states` in `states     82`.
    fn field(&self, key: &str) -> &str;
}

impl Checked for Outcome {
    fn success(self) -> Outcome {
        assert_eq!(self.code, Some(0), "{}", self.context());
        no_panic(&self);
        self
    }

    fn field(&self, key: &str) -> &str {
        summary_field(&self.stdout, key).unwrap_or_else(|| {
            panic!("no `{key}` line in the summary\n{}", self.context());
        })
    }
}

/// The value of the summary line `key` in `text`; panics naming the key if there is none.
pub fn field<'a>(text: &'a str, key: &str) -> &'a str {
    summary_field(text, key).unwrap_or_else(|| panic!("no `{key}` line in\n{text}"))
}

pub fn summary_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?;
        // `states` must not match a `statesfoo` line; the value follows spaces.
        rest.starts_with(' ').then(|| rest.trim())
    })
}

/// [`Checked::success`] as a function: exit 0 and no panic.
pub fn success(o: Outcome) -> Outcome {
    o.success()
}

pub fn rhizome(args: &[&str]) -> Outcome {
    rhizome_env(args, &[])
}

pub fn rhizome_env(args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let mut cmd = command(args);
    cmd.envs(env.iter().copied());
    launch::run(cmd, &format!("rhizome {}", args.join(" ")), HANG_LIMIT)
}

/// The command with `args`, its environment cleared of `RHIZOME_*` and backtrace settings.
pub fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rhizome"));
    launch::clear_rhizome_env(&mut cmd);
    cmd.args(args);
    cmd
}

pub fn no_panic(o: &Outcome) {
    for bad in ["panicked", "RUST_BACKTRACE", "stack backtrace"] {
        assert!(
            !o.stderr.contains(bad) && !o.stdout.contains(bad),
            "a panic, not an error\n{}",
            o.context()
        );
    }
}

/// A run-time error: exit 1 and exactly one line on stderr, `rhizome: error: ...`,
/// containing every `needle`. Returns that line.
pub fn clean_error(o: &Outcome, needles: &[&str]) -> String {
    no_panic(o);
    assert_eq!(o.code, Some(1), "{}", o.context());
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "not one line on stderr\n{}", o.context());
    assert!(lines[0].starts_with("rhizome: error: "), "{}", o.context());
    for n in needles {
        assert!(
            lines[0].contains(n),
            "no {n:?} in the error\n{}",
            o.context()
        );
    }
    lines[0].to_string()
}

/// A command-line error found by clap: exit 2, the one-line `error: ...` naming the
/// problem, possibly clap's hints (possible values, a tip, the usage line), then its
/// pointer to `--help`; nothing on stdout. This is clap's standard form, which users and
/// scripts know; the exit code tells it apart from a failed run (1).
pub fn usage_error(o: &Outcome, needles: &[&str]) {
    no_panic(o);
    assert_eq!(o.code, Some(2), "{}", o.context());
    assert!(o.stdout.is_empty(), "{}", o.context());
    let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        lines.first().is_some_and(|l| l.starts_with("error: ")),
        "{}",
        o.context()
    );
    for n in needles {
        assert!(
            lines[0].contains(n),
            "no {n:?} in the error\n{}",
            o.context()
        );
    }
    assert_eq!(
        lines.last().copied(),
        Some("For more information, try '--help'."),
        "{}",
        o.context()
    );
    let hint = |l: &&str| {
        let l = l.trim_start();
        ["[possible values:", "tip:", "Usage:"]
            .iter()
            .any(|h| l.starts_with(h))
    };
    assert!(
        lines[1..lines.len() - 1].iter().all(hint),
        "more than the error and clap's hints\n{}",
        o.context()
    );
}

// ----- files -----

/// A fresh directory under the system's temp directory, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "rhizome-{}-{}-{tag}-{}",
            env!("CARGO_CRATE_NAME"),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        TempDir(dir)
    }

    /// The directory itself.
    pub fn dir(&self) -> &Path {
        &self.0
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, bytes).expect("write a temp file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// The shared models directory. The tests that need it are ignored without it (the
/// `has_models` attribute), so they reach this only when it is there.
pub fn models_dir() -> Option<PathBuf> {
    Some(models::required_models_dir())
}

/// A model file of the shared directory as an argument.
pub fn model(dir: &Path, file: &str) -> String {
    dir.join(file).to_str().expect("UTF-8 path").to_string()
}
