//! The error of a graph's run.

use std::fmt;

/// What went wrong in a [`Graph::run`](crate::Graph::run), collected from every PE (the
/// same on every PE). Each list holds one line per event, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CncError {
    /// Tags put twice into one item collection: "`name` tag TAG".
    pub double_puts: Vec<String>,
    /// Step instances that panicked, with the panic's message.
    pub failed_steps: Vec<String>,
    /// Gets still waiting when the graph quiesced (no one put the item): "`name` tag TAG
    /// (wanted by step `step` tag TAG)".
    pub unsatisfied: Vec<String>,
}

impl CncError {
    /// Whether nothing went wrong.
    pub fn is_empty(&self) -> bool {
        self.double_puts.is_empty() && self.failed_steps.is_empty() && self.unsatisfied.is_empty()
    }
}

/// At most this many lines of each kind in the message.
const SHOWN: usize = 5;

fn list(f: &mut fmt::Formatter<'_>, what: &str, lines: &[String], first: &mut bool) -> fmt::Result {
    if lines.is_empty() {
        return Ok(());
    }
    if !*first {
        write!(f, "; ")?;
    }
    *first = false;
    write!(f, "{what} ({}): ", lines.len())?;
    for (i, l) in lines.iter().take(SHOWN).enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write!(f, "{l}")?;
    }
    if lines.len() > SHOWN {
        write!(f, ", ...")?;
    }
    Ok(())
}

impl fmt::Display for CncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        list(f, "double put", &self.double_puts, &mut first)?;
        list(f, "step failed", &self.failed_steps, &mut first)?;
        list(
            f,
            "get never satisfied at quiescence",
            &self.unsatisfied,
            &mut first,
        )
    }
}

impl std::error::Error for CncError {}
