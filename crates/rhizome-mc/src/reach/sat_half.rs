//! A branch of the parallel saturation as another PE takes it: the saturation's plan (each
//! group's relation and variable cube, in the order of their top variables, and the cache
//! key space) and the branch. The relations are BDDs of the node table that every PE's
//! manager shares ([`rhizome_bdd::DistNodeStore`]), so the plan is a few words per group;
//! it is encoded only when another PE's steal request takes the branch.

use super::saturation::SatPlan;
use crate::model::Group;
use rhizome::tasks::{Job, TaskCtx, Tasks};
use rhizome_bdd::{Bdd, OpHome};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What saturating a branch needs, on any PE.
#[derive(Serialize, Deserialize)]
pub(super) struct PlanData {
    /// `(relation, vars)` of each group, sorted by top variable (raw edges on the wire).
    #[serde(with = "edge_pairs")]
    pub(super) groups: Vec<(Bdd, Bdd)>,
    /// The top variable of each group.
    pub(super) tops: Vec<u32>,
    /// Cache key space of this saturation.
    pub(super) op: u64,
}

impl PlanData {
    pub(super) fn new(order: &[&Group], tops: &[u32], op: u64) -> PlanData {
        PlanData {
            groups: order.iter().map(|g| (g.relation, g.vars)).collect(),
            tops: tops.to_vec(),
            op,
        }
    }
}

/// The branch `set` of the saturation under groups `k..`, as a sendable half.
#[derive(Serialize, Deserialize)]
pub(super) struct SatHalf {
    plan: Arc<PlanData>,
    set: u64,
    k: u32,
    home: OpHome,
}

impl SatHalf {
    pub(super) fn new(plan: &Arc<PlanData>, set: Bdd, k: usize, home: OpHome) -> SatHalf {
        SatHalf {
            plan: Arc::clone(plan),
            set: set.raw(),
            k: k as u32,
            home,
        }
    }
}

impl Job for SatHalf {
    type Output = u64;
    fn run(self, t: &TaskCtx) -> u64 {
        let SatHalf { plan, set, k, home } = self;
        // A saturation that stops because this PE's view of the table filled up returns
        // its input; `run` then tells the waiting PE, which fails the operation.
        home.run(t, |c| {
            SatPlan { plan, watch: None }.saturate(c, Bdd::from_raw(set), k as usize)
        })
    }
}

/// Makes the jobs of the distributed exploration known to `tasks` (call on every PE).
pub fn register_jobs(tasks: &Tasks) {
    tasks.register::<SatHalf>();
}

/// Edges as raw words.
mod edge_pairs {
    use rhizome_bdd::Bdd;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &[(Bdd, Bdd)], s: S) -> Result<S::Ok, S::Error> {
        let raw: Vec<(u64, u64)> = v.iter().map(|(a, b)| (a.raw(), b.raw())).collect();
        raw.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(Bdd, Bdd)>, D::Error> {
        let raw = Vec::<(u64, u64)>::deserialize(d)?;
        Ok(raw
            .into_iter()
            .map(|(a, b)| (Bdd::from_raw(a), Bdd::from_raw(b)))
            .collect())
    }
}
