//! The graph kernels at small scales on 1, 2 and 4 PEs of the local transport: the
//! generator is deterministic and its graph the same however many PEs build it, every
//! BFS tree passes Graph500's validation and reaches the root's whole component, every
//! connected-components labelling matches a sequential union-find, and the validator
//! refuses broken trees.

use rhizome::{Ctx, World};
use rhizome_kernels::graph::{
    DistGraph, Impl, Kronecker, NONE, UnionFind, bfs, cc, pick_root, validate_bfs_tree,
};
use std::rc::Rc;

/// Runs `f` on `pes` PEs of the local transport; every PE's result.
fn on_pes<R: Send>(pes: usize, f: impl Fn(&Ctx) -> R + Sync) -> Vec<R> {
    World::builder().pes(pes).run(f).expect("the run succeeds")
}

/// The whole graph's sorted adjacency lists, as PE 0 of a `pes`-PE build sees them.
fn adjacency(g: &Kronecker, pes: usize) -> Vec<Vec<u64>> {
    let out = on_pes(pes, |ctx| {
        let graph = DistGraph::build(ctx, g);
        let mine: Vec<Vec<u64>> = graph.local().map(|v| graph.neighbors(v).to_vec()).collect();
        ctx.allgather(mine).concat()
    });
    out.into_iter().next().unwrap()
}

/// The sequential union-find of all of `g`'s edges.
fn union_find(g: &Kronecker) -> UnionFind {
    let mut uf = UnionFind::new(g.vertices() as usize);
    for i in 0..g.edges() {
        let (u, v) = g.edge(i);
        uf.union(u as usize, v as usize);
    }
    uf
}

#[test]
fn the_generator_is_deterministic_and_skewed() {
    let g = Kronecker::new(10, 16, 7).unwrap();
    let again = Kronecker::new(10, 16, 7).unwrap();
    let other = Kronecker::new(10, 16, 8).unwrap();
    let edges: Vec<_> = (0..g.edges()).map(|i| g.edge(i)).collect();
    assert_eq!(
        edges,
        (0..g.edges()).map(|i| again.edge(i)).collect::<Vec<_>>()
    );
    let differ = (0..g.edges())
        .filter(|&i| other.edge(i) != edges[i as usize])
        .count();
    assert!(differ as u64 > g.edges() / 2, "another seed, another graph");
    // Kronecker degrees are skewed: the largest is far above the mean, and vertices
    // are spread over the whole range by the permutation (both halves get edges).
    let mut degree = vec![0u64; g.vertices() as usize];
    for &(u, v) in &edges {
        assert!(u < g.vertices() && v < g.vertices());
        degree[u as usize] += 1;
        degree[v as usize] += 1;
    }
    let mean = 2 * g.edges() / g.vertices();
    assert!(
        *degree.iter().max().unwrap() > 8 * mean,
        "max degree {:?}",
        degree.iter().max()
    );
    let half = degree.len() / 2;
    let low: u64 = degree[..half].iter().sum();
    assert!(
        low > g.edges() / 2 && low < 3 * g.edges() / 2,
        "low half {low}"
    );
}

#[test]
fn the_graph_is_the_same_on_any_number_of_pes() {
    let g = Kronecker::new(9, 8, 3).unwrap();
    let one = adjacency(&g, 1);
    assert_eq!(one.len() as u64, g.vertices());
    // Undirected, no self loop, no repeat, no more arcs than twice the edges, and every
    // generated edge (not a loop) present.
    let arcs: usize = one.iter().map(Vec::len).sum();
    assert!(arcs as u64 <= 2 * g.edges() && arcs.is_multiple_of(2));
    for (u, list) in one.iter().enumerate() {
        assert!(list.windows(2).all(|w| w[0] < w[1]), "sorted and unique");
        for &v in list {
            assert_ne!(v, u as u64);
            assert!(one[v as usize].binary_search(&(u as u64)).is_ok());
        }
    }
    for i in 0..g.edges() {
        let (u, v) = g.edge(i);
        assert!(u == v || one[u as usize].binary_search(&v).is_ok());
    }
    for pes in [2, 3, 4] {
        assert_eq!(adjacency(&g, pes), one, "{pes} PEs");
    }
}

#[test]
fn every_bfs_is_valid_and_reaches_the_roots_component() {
    for (scale, seed) in [(8, 1), (10, 2)] {
        let g = Kronecker::new(scale, 16, seed).unwrap();
        let mut uf = union_find(&g);
        for pes in [1, 2, 4] {
            let out = on_pes(pes, |ctx| {
                let graph = Rc::new(DistGraph::build(ctx, &g));
                let root = pick_root(ctx, &graph, seed);
                let runs: Vec<_> = Impl::ALL
                    .iter()
                    .map(|&imp| bfs(ctx, &graph, root, imp, 64).map(|r| (r.count, r.edges)))
                    .collect();
                (root, runs)
            });
            let (root, runs) = &out[0];
            let size = (0..g.vertices() as usize)
                .filter(|&v| uf.find(v) == uf.find(*root as usize))
                .count() as u64;
            let inside = (0..g.edges())
                .filter(|&i| uf.find(g.edge(i).0 as usize) == uf.find(*root as usize))
                .count() as u64;
            for (imp, run) in Impl::ALL.iter().zip(runs) {
                let what = format!("scale {scale}, {pes} PEs, {}", imp.name());
                assert_eq!(run, &Ok((size, inside)), "{what}");
            }
            assert!(out.iter().all(|o| o == &out[0]), "all PEs agree");
        }
    }
}

#[test]
fn every_cc_matches_a_sequential_union_find() {
    for (scale, edgefactor, seed) in [(8, 16, 1), (10, 4, 5)] {
        let g = Kronecker::new(scale, edgefactor, seed).unwrap();
        let components = union_find(&g).count();
        assert!(components > 1, "the graph has isolated vertices to label");
        for pes in [1, 2, 4] {
            let out = on_pes(pes, |ctx| {
                let graph = Rc::new(DistGraph::build(ctx, &g));
                let runs: Vec<_> = Impl::ALL
                    .iter()
                    .map(|&imp| cc(ctx, &graph, imp, 64).map(|r| (r.count, r.edges)))
                    .collect();
                runs
            });
            for (imp, run) in Impl::ALL.iter().zip(&out[0]) {
                let what = format!("scale {scale}, {pes} PEs, {}", imp.name());
                assert_eq!(run, &Ok((components, g.edges())), "{what}");
            }
            assert!(out.iter().all(|o| o == &out[0]), "all PEs agree");
        }
    }
}

#[test]
fn the_validator_refuses_broken_trees() {
    let g = Kronecker::new(8, 16, 4).unwrap();
    let out = on_pes(2, |ctx| {
        let graph = DistGraph::build(ctx, &g);
        let root = pick_root(ctx, &graph, 4);
        // A correct tree, made sequentially from the whole adjacency.
        let mine: Vec<Vec<u64>> = graph.local().map(|v| graph.neighbors(v).to_vec()).collect();
        let all = ctx.allgather(mine).concat();
        let mut parent = vec![NONE; all.len()];
        parent[root as usize] = root;
        let mut queue = std::collections::VecDeque::from([root]);
        while let Some(u) = queue.pop_front() {
            for &v in &all[u as usize] {
                if parent[v as usize] == NONE {
                    parent[v as usize] = u;
                    queue.push_back(v);
                }
            }
        }
        let local = graph.local();
        let mine = |p: &[u64]| p[local.start as usize..local.end as usize].to_vec();
        let good = validate_bfs_tree(ctx, &graph, root, &mine(&parent));
        // A reached vertex two levels below the root, hung from the root instead
        // (not a graph edge unless they are neighbours: pick one that is not).
        let far = (0..all.len())
            .find(|&v| {
                parent[v] != NONE
                    && parent[v] != root
                    && parent[v] != v as u64
                    && all[root as usize].binary_search(&(v as u64)).is_err()
            })
            .unwrap();
        let mut wrong = parent.clone();
        wrong[far] = root;
        let not_an_edge = validate_bfs_tree(ctx, &graph, root, &mine(&wrong));
        // A reached vertex dropped from the tree.
        let mut dropped = parent.clone();
        dropped[far] = NONE;
        let unreached = validate_bfs_tree(ctx, &graph, root, &mine(&dropped));
        (good, not_an_edge, unreached)
    });
    for (good, not_an_edge, unreached) in out {
        assert!(good.is_ok(), "{good:?}");
        assert!(not_an_edge.unwrap_err().contains("not an edge"));
        assert!(unreached.unwrap_err().contains("unreached"));
    }
}

#[test]
fn bad_roots_are_refused() {
    let g = Kronecker::new(6, 4, 1).unwrap();
    let out = on_pes(2, |ctx| {
        let graph = Rc::new(DistGraph::build(ctx, &g));
        bfs(ctx, &graph, 1 << 6, Impl::Tuned, 1).unwrap_err()
    });
    assert!(out[0].contains("not a vertex"));
}

/// The level-cost rounds run (each checks its result) on 1 and 2 PEs, give one figure
/// per kind of round, the same on every PE, and the filter keeps only what it names.
#[test]
fn level_cost_rounds_are_checked_and_reported_alike() {
    use rhizome_kernels::graph::level_cost::level_costs;
    for pes in [1, 2] {
        let out = on_pes(pes, |ctx| {
            level_costs(ctx, 20, 1, "").expect("every round right")
        });
        assert_eq!(out[0].len(), 7);
        assert!(out[0].iter().all(|r| r.micros > 0.0));
        assert!(out.iter().all(|rows| rows == &out[0]));
    }
    let out = on_pes(2, |ctx| level_costs(ctx, 5, 1, "allreduce").unwrap());
    assert_eq!(out[0].len(), 3, "{:?}", out[0]);
}
