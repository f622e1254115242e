//! The unique table's `find_or_put` under loom's model of the memory orderings: threads
//! inserting the same node and different nodes at once, in every interleaving (bounded).
//! Each node ends with exactly one index; whoever gets an index, by inserting or by
//! finding it, reads the whole node behind it; the copy a losing thread wrote is freed at
//! the next collection.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test --release -p rhizome-bdd --lib node_table::loom_model`.

use super::*;
use ::loom::sync::Arc;
use ::loom::thread;

/// A node's contents: variable, low edge, high edge.
type Node = (u32, Bdd, Bdd);

/// Two different nodes that hash to the same bucket of the smallest table, so their
/// insertions race for one bucket and the later one probes past the earlier one.
fn colliding_nodes() -> (Node, Node) {
    let bucket = |(var, low, high): Node| {
        let (w0, w1) = encode(var, low, high);
        hash(w0, w1) as usize & (MIN_SLOTS - 1)
    };
    let a = (1, Bdd::FALSE, Bdd::TRUE);
    let b = (2..)
        .map(|var| (var, Bdd::FALSE, Bdd::TRUE))
        .find(|&n| bucket(n) == bucket(a))
        .expect("a colliding node");
    (a, b)
}

/// Inserts `nodes[k]` with allocation slot `k`, each on its own thread (the last on the
/// model's main thread); returns the table, the allocation mark from before the
/// insertions and the index each insertion returned.
fn insert_concurrently(nodes: &[Node]) -> (SharedNodeTable, usize, Vec<u64>) {
    let table = Arc::new(SharedNodeTable::new(0, 0, nodes.len()));
    let mark = table.alloc_mark();
    let insert = |table: &SharedNodeTable, slot: usize, (var, low, high): Node| {
        let i = table.find_or_put(slot, var, low, high).expect("room");
        // Whether this thread published the node or found it published by another, the
        // index must name the whole node.
        assert_eq!(
            table.node(i),
            (var, low, high),
            "a node read before it was whole"
        );
        i
    };
    let (last, spawned) = nodes.split_last().expect("a node");
    let handles: Vec<_> = spawned
        .iter()
        .enumerate()
        .map(|(slot, &node)| {
            let table = Arc::clone(&table);
            thread::spawn(move || insert(&table, slot, node))
        })
        .collect();
    let mine = insert(&table, spawned.len(), *last);
    let mut indices: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    indices.push(mine);
    let table = Arc::try_unwrap(table).ok().expect("every thread joined");
    (table, mark, indices)
}

/// Equal nodes got one index, different nodes different ones; after a collection that
/// keeps what was allocated since `mark` exactly the distinct nodes are in use (the copy a
/// losing thread wrote was allocated too, but is freed), and inserting any of them again
/// finds the same index.
fn check_one_index_per_node(
    nodes: &[Node],
    (mut table, mark, indices): (SharedNodeTable, usize, Vec<u64>),
) {
    for (a, (na, ia)) in nodes.iter().zip(&indices).enumerate() {
        for (nb, ib) in nodes.iter().zip(&indices).skip(a + 1) {
            assert_eq!(na == nb, ia == ib, "{na:?} at {ia}, {nb:?} at {ib}");
        }
    }
    let mut distinct = indices.clone();
    distinct.sort_unstable();
    distinct.dedup();
    table.collect(
        &mut std::iter::empty(),
        CollectPlan {
            keep_since: Some(mark),
            grow_threshold: 1.0,
            force_grow: false,
        },
    );
    assert_eq!(table.used_count(), distinct.len(), "a losing copy survived");
    for (&(var, low, high), &i) in nodes.iter().zip(&indices) {
        assert_eq!(table.find_or_put(0, var, low, high), Some(i));
    }
}

#[test]
fn two_threads_inserting_one_node_agree_on_its_index() {
    let (a, _) = colliding_nodes();
    ::loom::model(move || {
        let nodes = [a, a];
        check_one_index_per_node(&nodes, insert_concurrently(&nodes));
    });
}

#[test]
fn three_threads_inserting_two_colliding_nodes_get_one_index_each() {
    let (a, b) = colliding_nodes();
    ::loom::model(move || {
        let nodes = [a, b, a];
        check_one_index_per_node(&nodes, insert_concurrently(&nodes));
    });
}
