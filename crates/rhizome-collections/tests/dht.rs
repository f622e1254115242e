//! The distributed hash table on the local transport: the shared SPMD suite on 1, 2 and
//! 4 PEs, and a property test of one PE against a `HashMap` model.

mod dht_suite;
#[macro_use]
mod support;

use proptest::prelude::*;
use rhizome::World;
use rhizome_collections::dht::{Access, Config, DistributedHashTable, Index};
use std::collections::HashMap;

local_suite_tests!(dht_suite::TESTS);

/// One operation of the property test.
#[derive(Clone, Debug)]
enum Op {
    /// find-or-put of the key with this number.
    Put(u8),
    /// get of the index the model recorded for the n-th key put so far (modulo).
    Get(usize),
    /// get of an arbitrary index (maybe empty, maybe beyond the table).
    GetAny(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<u8>().prop_map(Op::Put),
        1 => any::<usize>().prop_map(Op::Get),
        1 => (0u64..80).prop_map(Op::GetAny),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Against a `HashMap`: a key put twice gets the same index and `inserted` only the
    /// first time; different keys get different indices; `get` returns the key at its
    /// index; a key already in the table is found even when the table is full, and a
    /// new key is refused only as `Full`; probing in place or one-sided. The table (64 buckets, C = 4, M = 4) is small
    /// enough for up to 256 keys to fill it.
    #[test]
    fn one_pe_behaves_like_a_map(
        ops in prop::collection::vec(op(), 1..200),
        owner in any::<bool>(),
        direct in any::<bool>(),
    ) {
        let access = if owner { Access::OwnerComputes } else { Access::OneSided };
        World::builder().pes(1).run(|ctx| {
            let config = Config::new(64).chunk(4).max_chunks(4).access(access).direct(direct);
            let table = DistributedHashTable::<[u64; 2]>::new(ctx, config).unwrap();
            let mut model: HashMap<[u64; 2], Index> = HashMap::new();
            let mut order = Vec::new();
            for op in &ops {
                match *op {
                    Op::Put(n) => {
                        let k = [n as u64, !(n as u64)];
                        match (table.find_or_put_many(ctx, &[k]), model.get(&k)) {
                            (Ok(r), Some(&index)) => assert_eq!(r[0], (index, false)),
                            (Ok(r), None) => {
                                assert!(r[0].1, "a new key must be inserted");
                                assert!(!model.values().any(|&i| i == r[0].0));
                                model.insert(k, r[0].0);
                                order.push(k);
                            }
                            (Err(_), Some(_)) => panic!("a stored key was not found"),
                            (Err(_), None) => {}
                        }
                    }
                    Op::Get(n) if !order.is_empty() => {
                        let k = order[n % order.len()];
                        assert_eq!(table.get(model[&k]), Some(k));
                    }
                    Op::Get(_) => {}
                    Op::GetAny(i) => {
                        let expect = model.iter().find(|(_, v)| v.0 == i).map(|(k, _)| *k);
                        assert_eq!(table.get(Index(i)), expect);
                    }
                }
            }
        }).unwrap();
    }
}
