//! The check of an exploration against the reachable states its model file stores.
//!
//! A format-C file stores the answer; a correct exploration computes exactly that set. The
//! stored BDD is loaded into the same manager as the explored one, where both are
//! canonical: the sets are equal exactly when their BDDs are one and the same node. Only a
//! difference costs more: two set differences, counted, tell how far off the run was.

use crate::model::{Model, load_stored_bdd};
use num_bigint::BigUint;
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache};
use std::fmt;

/// How the reachable states of a run compare with those the model file stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredCheck {
    /// The explored set is the stored one (the same BDD).
    Matches,
    /// The sets differ.
    Differs {
        /// Stored states the run did not reach.
        missing: BigUint,
        /// States the run reached that the file does not store.
        extra: BigUint,
    },
}

impl StoredCheck {
    /// Whether the run found exactly the stored states.
    pub fn matches(&self) -> bool {
        matches!(self, StoredCheck::Matches)
    }
}

impl fmt::Display for StoredCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoredCheck::Matches => f.write_str("matches the stored reachable set"),
            StoredCheck::Differs { missing, extra } => write!(
                f,
                "differs from the stored reachable set: {missing} stored states not reached, {extra} reached states not stored"
            ),
        }
    }
}

/// Compares `reachable` (rooted by the caller) with the model's stored set; `None` when the
/// model stores none.
pub(super) fn check_stored<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: &Model,
    reachable: Bdd,
) -> Result<Option<StoredCheck>, BddError> {
    let Some(stored) = &model.stored_reachable else {
        return Ok(None);
    };
    let expected = load_stored_bdd(m, stored)?;
    if expected == reachable {
        return Ok(Some(StoredCheck::Matches));
    }
    let expected = m.root(expected);
    let missing = m.diff(expected.get(), reachable)?;
    let missing = m.satcount(missing, &model.state_vars);
    let extra = m.diff(reachable, expected.get())?;
    let extra = m.satcount(extra, &model.state_vars);
    Ok(Some(StoredCheck::Differs { missing, extra }))
}
