//! Running a program from a test as a user would: stdin closed, both outputs captured,
//! and a time limit that turns a hang into a test failure. Shared by the launch tests of
//! `rhizome` (`tests/mpi.rs`) and of the command (`rhizome-cli/tests/cli*.rs`), which
//! include this file by path.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a launch ended.
pub struct Outcome {
    /// The command line, for messages.
    pub what: String,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// The launch and its output, for assertion messages.
    pub fn context(&self) -> String {
        format!(
            "{} exited with {:?}\nstdout:\n{}\nstderr:\n{}",
            self.what, self.code, self.stdout, self.stderr
        )
    }
}

/// Removes the variables through which the tester's environment would change what
/// rhizome does; without `RUST_BACKTRACE` a panic prints its one recognisable note.
pub fn clear_rhizome_env(cmd: &mut Command) {
    for var in [
        "RHIZOME_PES",
        "RHIZOME_WORKERS",
        "RHIZOME_TRANSPORT",
        "RHIZOME_CACHE_RATIO",
        "RHIZOME_INITIAL_NODES",
        "RHIZOME_GROW",
        "RUST_BACKTRACE",
        "RUST_LIB_BACKTRACE",
    ] {
        cmd.env_remove(var);
    }
}

/// Runs `cmd` to its end. One still running after `limit` is a hang: it gets SIGTERM
/// (which lets `mpirun` stop its ranks), then is killed, and the test fails.
pub fn run(mut cmd: Command, what: &str, limit: Duration) -> Outcome {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    // Drain both pipes while waiting, so that a chatty child cannot block on a full pipe.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the child") {
            break s;
        }
        if start.elapsed() > limit {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            std::thread::sleep(Duration::from_secs(5));
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} hung (killed after {limit:?})");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Outcome {
        what: what.to_string(),
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}
