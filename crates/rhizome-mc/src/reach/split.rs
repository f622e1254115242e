//! Choosing the variables that slice the state space over the ranks, and the slices.
//!
//! With `2^k` ranks, `k` state variables split the states: rank `p` owns the states whose
//! split variables spell `p` (the first variable its most significant bit). The choice is
//! made from a set every rank holds alike (the states visited before the split), by a
//! rule that depends on nothing else, so every rank picks the same variables (the ranks
//! only share the work of the choice, below). The rule is the one of Heyman, Geist,
//! Grumberg and Schuster (2000): a slice should be a small BDD, so each variable is
//! chosen, greedily, to minimise the largest node count among the parts it cuts the set
//! into (ties: the smaller total, then the earlier variable in state-vector order).
//!
//! Every rank could rank every candidate itself, but the ranking costs two conjunctions
//! and two node counts per candidate (0.2 s of schedule_world.3's 2 s on 2 ranks, the
//! same 0.2 s on every rank), so the ranks [share](shared) it: each ranks every `N`-th
//! candidate and one allgather gives every rank the whole ranking. Node counts do not
//! depend on which rank's table holds the nodes, so the choice is the one a single rank
//! would make.

use rhizome::{Ctx, Message};
use rhizome_bdd::{Bdd, BddError, Manager, NodeStore, OpCache, Root};

/// The split of the states over `2^k` ranks.
pub(super) struct Split {
    /// The split variables, most significant first.
    pub(super) vars: Vec<u32>,
    /// Rank `p`'s slice: the cube of the split variables' literals that spell `p`.
    pub(super) slices: Vec<Root>,
    /// The variables were given (`--split-vars`), not chosen.
    pub(super) given: bool,
}

impl Split {
    /// The split of `2^k` ranks by `vars`. With fewer variables than `k` (a model of
    /// fewer state bits), the ranks whose missing bits are 1 get empty slices.
    fn by<S: NodeStore, C: OpCache>(
        m: &mut Manager<S, C>,
        vars: Vec<u32>,
        k: u32,
        given: bool,
    ) -> Result<Split, BddError> {
        let slices = (0..1usize << k)
            .map(|p| slice_cube(m, &vars, k, p))
            .collect::<Result<Vec<Root>, BddError>>()?;
        Ok(Split {
            vars,
            slices,
            given,
        })
    }
}

/// Chooses `k` variables among `candidates` to cut `set` (rooted by the caller) by the
/// module's rule, and builds the `2^k` slices. Collective: every rank of `ctx` passes the
/// same set.
pub(super) fn choose_split<S: NodeStore, C: OpCache>(
    ctx: &Ctx,
    m: &mut Manager<S, C>,
    candidates: &[u32],
    set: Bdd,
    k: u32,
) -> Result<Split, BddError> {
    choose_split_by(
        ctx,
        m,
        candidates,
        set,
        k,
        |_, sizes| {
            let largest = sizes.iter().copied().max().unwrap_or(0);
            ((), (largest, sizes.iter().sum::<usize>()))
        },
        |_, _, _, _| Ok(true),
    )
}

/// Chooses `k` variables among `candidates` to cut `set` (rooted by the caller),
/// greedily, and builds the `2^k` slices. Each time, `key(variables, part sizes)` (the
/// variables chosen with the candidate last, and the node counts of the parts they cut
/// the set into) ranks the candidates, a tier first; in that order, the first candidate
/// of the best tier that `fits(manager, tier, variables, parts)` (the parts in slice
/// order) is taken, or the best candidate if none fits. Ties: the earlier candidate.
/// `fits` is separate from `key` because it may cost images, paid only for the
/// candidates that the cheap key ranks first. Collective: the ranks of `ctx` share the
/// cuts and node counts of the ranking ([`shared`]); `fits` must answer alike on every
/// rank.
pub(super) fn choose_split_by<S, C, T, K>(
    ctx: &Ctx,
    m: &mut Manager<S, C>,
    candidates: &[u32],
    set: Bdd,
    k: u32,
    key: impl Fn(&[u32], &[usize]) -> (T, K),
    mut fits: impl FnMut(&mut Manager<S, C>, &T, &[u32], &[Root]) -> Result<bool, BddError>,
) -> Result<Split, BddError>
where
    S: NodeStore,
    C: OpCache,
    T: Ord,
    K: Ord,
{
    let mut vars: Vec<u32> = Vec::new();
    let mut parts: Vec<Root> = vec![m.root(set)];
    for _ in 0..k {
        let open: Vec<(usize, u32)> = (candidates.iter().copied().enumerate())
            .filter(|(_, v)| !vars.contains(v))
            .collect();
        let all_sizes = shared(ctx, open.len(), |j| {
            let cut = cut_parts(m, &parts, open[j].1)?;
            Ok(cut
                .iter()
                .map(|r| m.node_count(r.get()))
                .collect::<Vec<usize>>())
        })?;
        let mut ranked: Vec<((T, K), usize, u32)> = (open.iter().zip(&all_sizes))
            .map(|(&(i, v), sizes)| {
                let with_v: Vec<u32> = vars.iter().copied().chain([v]).collect();
                (key(&with_v, sizes), i, v)
            })
            .collect();
        ranked.sort();
        let Some(((best_tier, _), _, _)) = ranked.first() else {
            break; // fewer candidates than split bits: the model is tiny
        };
        // The first of the tier that fits, else the tier's first (the best candidate).
        let mut chosen: Option<(u32, Vec<Root>)> = None;
        for ((tier, _), _, v) in ranked.iter().take_while(|((t, _), _, _)| t == best_tier) {
            // A rank whose table fills here, between the collectives, must not leave the
            // others waiting in the next one (in `fits`, or the next bit's ranking): the
            // ranks agree on every step that may fail.
            let cut = alike(ctx, cut_parts(m, &parts, *v))?;
            let with_v: Vec<u32> = vars.iter().copied().chain([*v]).collect();
            let fitting = alike(ctx, fits(m, tier, &with_v, &cut))?;
            if fitting || chosen.is_none() {
                chosen = Some((*v, cut));
            }
            if fitting {
                break;
            }
        }
        let (v, cut) = chosen.expect("the best tier holds the best candidate");
        vars.push(v);
        parts = cut;
    }
    Split::by(m, vars, k, false)
}

/// `[f(0), ..., f(n - 1)]` on every rank of `ctx`, each item computed on one rank: rank
/// `r` computes the items `i` with `i % N == r` (neighbouring candidates cost alike, so
/// the shares do too) and one allgather gives every rank all of them. Collective. If
/// `f` fails on some rank (its table full), every rank returns the first such rank's
/// error. (What may fail between two such calls goes through [`alike`].)
pub(super) fn shared<T: Message>(
    ctx: &Ctx,
    n: usize,
    mut f: impl FnMut(usize) -> Result<T, BddError>,
) -> Result<Vec<T>, BddError> {
    let (me, ranks) = (ctx.my_pe(), ctx.num_pes());
    // (items, or none and the error)
    let mine: (Option<Vec<T>>, [u64; 2]) = match (me..n)
        .step_by(ranks)
        .map(&mut f)
        .collect::<Result<Vec<T>, _>>()
    {
        Ok(items) => (Some(items), [0; 2]),
        Err(e) => (None, error_words(&e)),
    };
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    for (r, (items, error)) in ctx.allgather(mine).into_iter().enumerate() {
        let Some(items) = items else {
            return Err(error_of_words(error));
        };
        for (j, item) in items.into_iter().enumerate() {
            out[r + j * ranks] = Some(item);
        }
    }
    Ok(out
        .into_iter()
        .map(|item| item.expect("every item is some rank's share"))
        .collect())
}

/// `r` on every rank of `ctx` if it is `Ok` on every rank, else the error of the first
/// rank where it failed. Collective: every rank holds the same set and the same table
/// size and so fills up alike, except near the limit, where one rank may fail a step
/// that the others finish; without this it would return while the others wait for it in
/// their next collective.
pub(super) fn alike<T>(ctx: &Ctx, r: Result<T, BddError>) -> Result<T, BddError> {
    let mine: Option<[u64; 2]> = r.as_ref().err().map(error_words);
    match ctx.allgather(mine).into_iter().flatten().next() {
        None => r,
        Some(error) => Err(error_of_words(error)),
    }
}

/// A table's failure as the words a collective sends.
fn error_words(e: &BddError) -> [u64; 2] {
    let BddError::OutOfNodes { live, capacity } = e;
    [*live as u64, *capacity as u64]
}

/// The failure that [`error_words`] sent.
fn error_of_words([live, capacity]: [u64; 2]) -> BddError {
    BddError::OutOfNodes {
        live: live as usize,
        capacity: capacity as usize,
    }
}

/// The `2^k` slices of the split by `vars` (`k` distinct state variables, most
/// significant first), given rather than chosen.
pub(super) fn given_split<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    vars: &[u32],
    k: u32,
) -> Result<Split, BddError> {
    Split::by(m, vars.to_vec(), k, true)
}

/// Every part of `parts` cut by variable `v`: `P ∧ ¬v`, `P ∧ v` for each, in order.
fn cut_parts<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    parts: &[Root],
    v: u32,
) -> Result<Vec<Root>, BddError> {
    let x = m.ithvar(v);
    let mut out = Vec::with_capacity(2 * parts.len());
    for p in parts {
        for lit in [!x, x] {
            let c = m.and(p.get(), lit)?;
            out.push(m.root(c));
        }
    }
    Ok(out)
}

/// Rank `p`'s slice: the split variables set to the bits of `p`, the first variable the
/// most significant of `k` bits. With fewer variables than `k`, ranks whose missing bits
/// are not 0 get the empty slice.
pub(super) fn slice_cube<S: NodeStore, C: OpCache>(
    m: &mut Manager<S, C>,
    vars: &[u32],
    k: u32,
    p: usize,
) -> Result<Root, BddError> {
    let mut cube = m.root(Bdd::TRUE);
    for bit in 0..k as usize {
        let one = p >> (k as usize - 1 - bit) & 1 == 1;
        let lit = match vars.get(bit) {
            Some(&v) => {
                let x = m.ithvar(v);
                if one { x } else { !x }
            }
            None if one => Bdd::FALSE,
            None => Bdd::TRUE,
        };
        let c = m.and(cube.get(), lit)?;
        cube.set(c);
    }
    Ok(cube)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rhizome::World;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn shared_items_are_computed_once_and_reach_every_rank_in_order() {
        for pes in [1, 2, 3, 4] {
            for n in [0, 1, 5, 12] {
                let calls: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
                let got = World::builder()
                    .pes(pes)
                    .workers(1)
                    .run(|ctx| {
                        shared(ctx, n, |i| {
                            calls[i].fetch_add(1, Ordering::Relaxed);
                            Ok(vec![i as u64 * 10, ctx.my_pe() as u64])
                        })
                        .unwrap()
                    })
                    .unwrap();
                for (pe, items) in got.iter().enumerate() {
                    assert_eq!(items.len(), n, "{pes} PEs, PE {pe}");
                    for (i, item) in items.iter().enumerate() {
                        // Item i, computed by the rank whose share it is.
                        assert_eq!(item, &vec![i as u64 * 10, (i % pes) as u64]);
                    }
                }
                for (i, c) in calls.iter().enumerate() {
                    assert_eq!(c.load(Ordering::Relaxed), 1, "item {i} on {pes} PEs");
                }
            }
        }
    }

    #[test]
    fn a_rank_whose_table_fills_makes_every_rank_fail_alike() {
        let got = World::builder()
            .pes(3)
            .workers(1)
            .run(|ctx| {
                shared(ctx, 9, |i| match (ctx.my_pe(), i) {
                    // Ranks 1 and 2 both fail: every rank reports rank 1's error.
                    (1, 4) => Err(BddError::OutOfNodes {
                        live: 7,
                        capacity: 9,
                    }),
                    (2, 8) => Err(BddError::OutOfNodes {
                        live: 1,
                        capacity: 2,
                    }),
                    _ => Ok(i as u64),
                })
            })
            .unwrap();
        for r in got {
            assert!(matches!(
                r,
                Err(BddError::OutOfNodes {
                    live: 7,
                    capacity: 9
                })
            ));
        }
    }

    #[test]
    fn a_rank_that_fails_between_the_shared_steps_of_the_choice_makes_every_rank_fail_alike() {
        for pes in [2, 4] {
            let got = World::builder()
                .pes(pes)
                .workers(1)
                .run(|ctx| {
                    let mut m = Manager::new(1);
                    let vars: Vec<u32> = (0..6).map(|i| 2 * i).collect();
                    // x0 xor x2 xor ... : every variable cuts it into parts of one size.
                    let set = m
                        .run(&[], |c| {
                            vars.iter().fold(Bdd::FALSE, |f, &v| {
                                c.xor(f, c.make(v, Bdd::FALSE, Bdd::TRUE))
                            })
                        })
                        .unwrap();
                    let set = m.root(set);
                    // The last rank's `fits` fails: a step outside `shared`, as a table
                    // that fills while it images a candidate's parts.
                    let last = ctx.my_pe() == ctx.num_pes() - 1;
                    choose_split_by(
                        ctx,
                        &mut m,
                        &vars,
                        set.get(),
                        2,
                        |_, sizes| ((), sizes.iter().sum::<usize>()),
                        |_, _, _, _| match last {
                            true => Err(BddError::OutOfNodes {
                                live: 5,
                                capacity: 6,
                            }),
                            false => Ok(false),
                        },
                    )
                    .map(|split| split.vars)
                })
                .unwrap();
            for (pe, r) in got.iter().enumerate() {
                assert!(
                    matches!(
                        r,
                        Err(BddError::OutOfNodes {
                            live: 5,
                            capacity: 6
                        })
                    ),
                    "{pes} PEs, PE {pe}: {r:?}"
                );
            }
        }
    }
}
