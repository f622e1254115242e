//! Reachability with the node table spread over 2 and 4 PEs of the local transport
//! ([`DistNodeStore`], PE 0 driving and the operations spread over every PE's manager, as
//! `rhizome reach --pes N` runs): every strategy,
//! with deadlock detection, gives the same states, levels, final node count and deadlock
//! count as one PE, on files of the three formats; and every format C file reaches the
//! reachable set it stores on 2 PEs. Without the shared model files the tests are
//! reported as ignored.

#[path = "support/answer.rs"]
mod answer;
#[path = "support/models.rs"]
mod models;
#[path = "support/reach.rs"]
mod support;

use answer::{Answer, WITH_DEADLOCKS, answer};
use models::required_models_dir;
use rhizome::World;
use rhizome::tasks::Tasks;
use rhizome_bdd::{Config, DistNodeStore, DistOpCache, Manager};
use rhizome_mc::reach::{ReachOptions, StoredCheck, Strategy};
use std::sync::Arc;
use support::{ALL_STRATEGIES, explore_file, run_file};

/// Explores every `(file, strategy)` of `jobs` on `pes` PEs of one worker, one after the
/// other in one distributed table of `slots` slots per PE (collected between files), the
/// operations spread over the PEs (every fork of an operation, and every branch of a
/// saturation, a sendable half that another PE may take).
fn explore_on(
    pes: usize,
    slots: usize,
    jobs: &[(&str, Strategy)],
    opts: &ReachOptions,
) -> Vec<Answer> {
    let dir = required_models_dir();
    let mut results = World::builder()
        .pes(pes)
        .workers(1)
        .run(|ctx| {
            let store = DistNodeStore::new(ctx, slots, ctx.workers());
            let cache = DistOpCache::shared(ctx, slots, slots);
            let pool = Arc::clone(ctx.pool());
            let mut m = Manager::from_parts_on_pool(store, cache, Config::default(), pool);
            let tasks = Tasks::new(ctx);
            rhizome_mc::reach::register_jobs(&tasks);
            m.spread_over(ctx, &tasks, u32::MAX);
            let mut answers = Vec::new();
            if ctx.my_pe() == 0 {
                tasks.run(ctx, |_| {
                    for &(file, strategy) in jobs {
                        answers.push(answer(&explore_file(&mut m, &dir, file, strategy, opts)));
                        m.collect_garbage(&[]);
                    }
                });
            } else {
                m.serve(ctx, &tasks);
            }
            ctx.barrier();
            answers
        })
        .expect("the world runs");
    results.swap_remove(0)
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn every_strategy_gives_the_answers_of_one_pe_on_2_and_4_pes() {
    // Every strategy on a small file of formats B and C; saturation (the one strategy
    // that finishes in seconds there) on a format A file.
    let jobs: Vec<(&str, Strategy)> = ["ltsmin-2017/anderson.4.bdd", "spin17-beem/at.1.bdd"]
        .iter()
        .flat_map(|&f| ALL_STRATEGIES.map(|s| (f, s)))
        .chain([("thesis-2014/schedule_world.2.8-rgs.bdd", Strategy::Sat)])
        .collect();
    let one: Vec<Answer> = jobs
        .iter()
        .map(|&(file, strategy)| {
            let mut m = Manager::new(1);
            answer(&explore_file(
                &mut m,
                &required_models_dir(),
                file,
                strategy,
                &WITH_DEADLOCKS,
            ))
        })
        .collect();
    for pes in [2, 4] {
        let many = explore_on(pes, 1 << 19, &jobs, &WITH_DEADLOCKS);
        for (k, (a, b)) in one.iter().zip(&many).enumerate() {
            assert_eq!(a, b, "{:?} on {pes} PEs", jobs[k]);
        }
    }
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn every_format_c_file_reaches_its_stored_set_on_2_pes() {
    let dir = required_models_dir().join("spin17-beem");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".bdd"))
        .map(|n| format!("spin17-beem/{n}"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 53, "the SPIN 2017 set");
    let jobs: Vec<(&str, Strategy)> = files.iter().map(|f| (f.as_str(), Strategy::Sat)).collect();
    let answers = explore_on(2, 1 << 19, &jobs, &ReachOptions::default());
    for (file, a) in files.iter().zip(&answers) {
        assert_eq!(a.check, Some(StoredCheck::Matches), "{file}");
    }
    // The counts are one PE's too (a spot check; format_c_reach.rs has them all).
    let at = run_file(
        &required_models_dir(),
        "spin17-beem/at.1.bdd",
        Strategy::Sat,
        1,
    );
    let k = files.iter().position(|f| f.ends_with("/at.1.bdd")).unwrap();
    assert_eq!(answers[k].states, at.states);
}
