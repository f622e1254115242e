//! Views of a model's transition groups that Sylvan's `bddmc` offers: the dependency
//! matrix (`--print-matrix`) and the union of all groups into one relation
//! (`--merge-relations`).

use crate::model::Model;
use crate::model_file::ReadWrite;
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache};
use std::collections::HashMap;

/// One row of the dependency matrix per group, one character per state integer, as `bddmc`
/// prints them: `-` untouched, `r` read, `w` written, `+` read and written.
///
/// `read_write` are the groups' projections as a format-B file declares them. Without
/// them (format A, built-in models) only the union is known, and every integer a group
/// touches shows as `+`.
///
/// `sorted`: in the order `bddmc` uses for saturation and chaining (it sorts the groups by
/// their first variable, stably, before printing); otherwise in file order.
pub fn dependency_matrix(
    model: &Model,
    read_write: Option<&[ReadWrite]>,
    sorted: bool,
) -> Vec<String> {
    let mut rows = rows(model, read_write);
    if sorted {
        // The first touched integer holds the group's first variable.
        rows.sort_by_key(|row| row.find(|c| c != '-').unwrap_or(usize::MAX));
    }
    rows
}

fn rows(model: &Model, read_write: Option<&[ReadWrite]>) -> Vec<String> {
    let ints = model.state_bits.len();
    if let Some(rw) = read_write {
        return rw
            .iter()
            .map(|g| {
                (0..ints)
                    .map(|i| match (g.read.contains(&i), g.write.contains(&i)) {
                        (false, false) => '-',
                        (true, false) => 'r',
                        (false, true) => 'w',
                        (true, true) => '+',
                    })
                    .collect()
            })
            .collect();
    }
    let integer_of = integer_of_var(model);
    model
        .groups
        .iter()
        .map(|g| {
            let mut row = vec!['-'; ints];
            for v in &g.cur_vars {
                if let Some(&i) = integer_of.get(v) {
                    row[i] = '+';
                }
            }
            row.into_iter().collect()
        })
        .collect()
}

/// The state integer each current-state variable belongs to.
fn integer_of_var(model: &Model) -> HashMap<u32, usize> {
    let mut map = HashMap::new();
    let mut bit = 0usize;
    for (i, &w) in model.state_bits.iter().enumerate() {
        for _ in 0..w {
            map.insert(model.state_vars[bit], i);
            bit += 1;
        }
    }
    map
}

/// The model with all its groups merged into one relation over every state variable, as
/// `bddmc --merge-relations` does: each group's relation is extended with `x = x'` for
/// every state bit it does not touch (the group leaves those unchanged, which its own
/// relation leaves implicit), and the extended relations are joined by disjunction. The
/// reachable states are the same; the images are fewer and larger. The separate groups'
/// roots are released with `model` (unless a clone of it lives on).
pub fn merge_relations<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    model: Model,
) -> Result<Model, BddError> {
    let relations: Vec<Bdd> = model.groups.iter().map(|g| g.relation).collect();
    let pairs: Vec<(u32, u32)> = model
        .state_vars
        .iter()
        .copied()
        .zip(model.prime_vars.iter().copied())
        .collect();
    // Deepest variable first, so that each conjunction adds one level on top.
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(pairs[k].0.max(pairs[k].1)));
    let touched: Vec<std::collections::HashSet<u32>> = model
        .groups
        .iter()
        .map(|g| g.cur_vars.iter().copied().collect())
        .collect();
    // One operation: if the table fills, the whole merge runs again after a collection.
    let merged = m.run(&relations, |c| {
        let extended: Vec<Bdd> = relations
            .iter()
            .zip(&touched)
            .map(|(&r, touched)| {
                let mut identity = Bdd::TRUE;
                for &k in &order {
                    let (x, x1) = pairs[k];
                    if touched.contains(&x) {
                        continue;
                    }
                    let (vx, vx1) = (
                        c.make(x, Bdd::FALSE, Bdd::TRUE),
                        c.make(x1, Bdd::FALSE, Bdd::TRUE),
                    );
                    identity = c.and(identity, c.equiv(vx, vx1));
                }
                c.and(r, identity)
            })
            .collect();
        big_union(c, &extended)
    })?;
    // `Model::new` roots `merged` before it runs anything that could collect it.
    let mut merged_model = Model::new(
        m,
        format!("{} (relations merged)", model.name),
        model.state_bits.clone(),
        model.state_vars.clone(),
        model.prime_vars.clone(),
        model.initial,
        vec![(merged, model.state_vars.clone(), model.prime_vars.clone())],
    )?;
    merged_model.stored_reachable = model.stored_reachable.clone();
    Ok(merged_model)
}

/// The disjunction of `rs`, halves in parallel (as `bddmc`'s `big_union`).
fn big_union<S: rhizome_bdd::NodeStore, C: rhizome_bdd::OpCache>(
    c: &rhizome_bdd::OpCtx<'_, S, C>,
    rs: &[Bdd],
) -> Bdd {
    match rs {
        [] => Bdd::FALSE,
        [r] => *r,
        _ => {
            let (a, b) = rs.split_at(rs.len() / 2);
            let (x, y) = c.join(|c| big_union(c, a), |c| big_union(c, b));
            c.or(x, y)
        }
    }
}
