//! The distributed graph: vertices block-distributed over the PEs, each PE holding the
//! adjacency (CSR) of its own vertices, undirected (each edge in both endpoints' lists),
//! without self loops or repeated edges.
//!
//! Built collectively from a [`Kronecker`] generator: each PE generates its share of
//! the edges and sends each direction to the owner of its source through a conveyor.

use super::Kronecker;
use rhizome::Ctx;
use rhizome::conveyor::Conveyor;

/// One PE's part of an undirected graph whose vertices are block-distributed.
#[derive(Debug)]
pub struct DistGraph {
    vertices: u64,
    generator: Kronecker,
    /// Vertices per PE (the last PEs may have fewer, or none).
    block: u64,
    first: u64,
    /// `offsets[i]..offsets[i + 1]` are the neighbours of local vertex `i` in `targets`.
    offsets: Vec<usize>,
    targets: Vec<u64>,
}

impl DistGraph {
    /// Collective: the graph of `generator`'s edges, distributed over the PEs.
    pub fn build(ctx: &Ctx, generator: &Kronecker) -> DistGraph {
        let (me, pes) = (ctx.my_pe(), ctx.num_pes());
        let vertices = generator.vertices();
        let block = vertices.div_ceil(pes as u64);
        let first = (block * me as u64).min(vertices);
        let local = ((first + block).min(vertices) - first) as usize;
        let owner = |v: u64| (v / block) as usize;
        let mut arcs: Vec<[u64; 2]> = Vec::new();
        let mut conveyor = Conveyor::<[u64; 2]>::new(ctx);
        let mut todo = generator
            .share(me, pes)
            .map(|i| generator.edge(i))
            .filter(|(u, v)| u != v)
            .flat_map(|(u, v)| [[u, v], [v, u]]);
        let mut next = todo.next();
        while conveyor.advance(next.is_none()) {
            while let Some(arc) = next {
                if !conveyor.push(arc, owner(arc[0])) {
                    break;
                }
                next = todo.next();
            }
            while let Some((arc, _)) = conveyor.pull() {
                arcs.push(arc);
            }
        }
        // Counting sort by source, then each list sorted and deduplicated in place.
        let mut offsets = vec![0usize; local + 1];
        for a in &arcs {
            offsets[(a[0] - first) as usize + 1] += 1;
        }
        for i in 0..local {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0u64; arcs.len()];
        for a in &arcs {
            let slot = &mut fill[(a[0] - first) as usize];
            targets[*slot] = a[1];
            *slot += 1;
        }
        let mut kept = 0;
        for i in 0..local {
            let list = &mut targets[offsets[i]..offsets[i + 1]];
            list.sort_unstable();
            let (start, mut last) = (kept, None);
            for k in offsets[i]..offsets[i + 1] {
                let t = targets[k];
                if last != Some(t) {
                    targets[kept] = t;
                    kept += 1;
                    last = Some(t);
                }
            }
            offsets[i] = start;
        }
        offsets[local] = kept;
        targets.truncate(kept);
        targets.shrink_to_fit();
        DistGraph {
            vertices,
            generator: *generator,
            block,
            first,
            offsets,
            targets,
        }
    }

    /// Vertices of the whole graph.
    pub fn vertices(&self) -> u64 {
        self.vertices
    }

    /// Edges the generator made (Graph500's input edge count, self loops and repeats
    /// included).
    pub fn input_edges(&self) -> u64 {
        self.generator.edges()
    }

    /// The generator the graph was built from (validators regenerate its edges).
    pub fn generator(&self) -> &Kronecker {
        &self.generator
    }

    /// The PE that owns vertex `v`.
    pub fn owner(&self, v: u64) -> usize {
        (v / self.block) as usize
    }

    /// This PE's vertices.
    pub fn local(&self) -> std::ops::Range<u64> {
        self.first..self.first + (self.offsets.len() - 1) as u64
    }

    /// Whether this PE owns `v`.
    pub fn is_local(&self, v: u64) -> bool {
        self.local().contains(&v)
    }

    /// The index of local vertex `v` in this PE's arrays.
    pub fn index(&self, v: u64) -> usize {
        debug_assert!(self.is_local(v), "vertex {v} is not local");
        (v - self.first) as usize
    }

    /// The neighbours of local vertex `v`, ascending, without `v` itself.
    pub fn neighbors(&self, v: u64) -> &[u64] {
        let i = self.index(v);
        &self.targets[self.offsets[i]..self.offsets[i + 1]]
    }

    /// The degree of local vertex `v`.
    pub fn degree(&self, v: u64) -> usize {
        let i = self.index(v);
        self.offsets[i + 1] - self.offsets[i]
    }

    /// Arcs held here: the sum of the local degrees.
    pub fn local_arcs(&self) -> usize {
        self.targets.len()
    }
}
