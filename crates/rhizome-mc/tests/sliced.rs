//! Sliced reachability (`reach_sliced`) on 2 and 4 PEs of the local transport, each PE with
//! a one-PE manager of its own and the states sliced over the PEs: the states, levels,
//! final node count and deadlocks of one PE's `bfs`, `sat` and `chaining`, on files of the three formats (and,
//! with `--ignored`, on every model file whose `bfs` finishes in seconds), and the reachable set each format C file stores; the slices
//! add up to the states; what cannot run sliced is refused on every PE alike. Without the
//! shared model files the model tests are reported as ignored.

#[path = "support/answer.rs"]
mod answer;
#[path = "support/models.rs"]
mod models;

use answer::{Answer, WITH_DEADLOCKS, answer};
use models::required_models_dir;
use num_bigint::BigUint;
use rhizome::{Ctx, World};
use rhizome_bdd::{Config, Manager};
use rhizome_mc::model::Model;
use rhizome_mc::model_file::read_model;
use rhizome_mc::reach::{
    DEFAULT_SAT_SPLIT_NODES, DEFAULT_SPLIT_NODES, ReachOptions, SliceInfo, SliceOptions,
    SlicedError, SlicedOutcome, StoredCheck, Strategy, reach, reach_sliced,
};
use std::path::Path;
use std::sync::Arc;

/// Files whose `bfs` takes longer than a test may (tens of seconds to minutes on two
/// cores, thousands of levels, or both); saturation and the spread-table tests cover them.
const TOO_SLOW_FOR_BFS: &[&str] = &[
    "spin17-beem/resistance.1.bdd",
    "spin17-beem/plc.1.bdd",
    "spin17-beem/pgm_protocol.1.bdd",
    "spin17-beem/synapse.1.bdd",
    "spin17-beem/cambridge.1.bdd",
    "spin17-beem/driving_phils.1.bdd",
    "ltsmin-2017/collision.4.bdd",
    "ltsmin-2017/collision.5.bdd",
    "ltsmin-2017/collision.6.bdd",
    "ltsmin-2017/lifts.6.bdd",
    "ltsmin-2017/lifts.7.bdd",
    "ltsmin-2017/schedule_world.3.bdd",
    "thesis-2014/anderson.6.4-rgs.bdd",
    "thesis-2014/anderson.8.4-rgs.bdd",
    "thesis-2014/at.5.8-rgs.bdd",
    "thesis-2014/at.6.8-rgs.bdd",
    "thesis-2014/at.7.8-rgs.bdd",
    "thesis-2014/collision.5.9-rgs.bdd",
    "thesis-2014/schedule_world.3.8-rgs.bdd",
];

/// Every `.bdd` file of the models directory that `bfs` finishes in seconds.
fn model_files() -> Vec<String> {
    let dir = required_models_dir();
    let mut files = Vec::new();
    for set in ["ltsmin-2017", "spin17-beem", "thesis-2014"] {
        let entries = std::fs::read_dir(dir.join(set)).expect("a model set");
        for e in entries.flatten() {
            let name = format!("{set}/{}", e.file_name().to_string_lossy());
            if name.ends_with(".bdd") && !TOO_SLOW_FOR_BFS.contains(&name.as_str()) {
                files.push(name);
            }
        }
    }
    files.sort();
    files
}

fn load(m: &mut Manager, dir: &Path, file: &str) -> Model {
    let stored = read_model(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
    Model::from_stored(m, file.to_string(), &stored).unwrap()
}

/// One PE's `strategy` with deadlocks.
fn one_pe(file: &str, strategy: Strategy) -> Answer {
    let mut m = Manager::new(1);
    let model = load(&mut m, &required_models_dir(), file);
    let r = reach(&mut m, &model, strategy, &WITH_DEADLOCKS, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    answer(&r)
}

/// Every file of `files` explored sliced over `pes` PEs of one worker, split once the
/// visited set has `split_nodes` nodes: PE 0's answers, and the slices' states added up.
fn sliced_on(
    pes: usize,
    split_nodes: usize,
    files: &[String],
    strategy: Strategy,
) -> Vec<(Answer, BigUint, usize)> {
    let dir = required_models_dir();
    let slicing = SliceOptions {
        split_nodes: Some(split_nodes),
        ..SliceOptions::default()
    };
    let mut results = World::builder()
        .pes(pes)
        .workers(1)
        .run(|ctx| {
            let mut out = Vec::new();
            for file in files {
                let o = explore_sliced(ctx, &dir, file, strategy, &slicing);
                let sum: BigUint = o.slices.slice_states.iter().sum();
                if let Some(r) = o.report {
                    out.push((answer(&r), sum, o.slices.split_vars.len()));
                }
            }
            out
        })
        .expect("the world runs");
    results.swap_remove(0)
}

/// `file` explored by this PE's part of a sliced run of `strategy` (a one-PE manager of
/// one worker with a small table to start with); a failure is a panic naming the file.
fn explore_sliced(
    ctx: &Ctx,
    dir: &Path,
    file: &str,
    strategy: Strategy,
    slicing: &SliceOptions,
) -> SlicedOutcome {
    let config = Config {
        workers: 1,
        initial_nodes: 1 << 16,
        ..Config::default()
    };
    let mut m = Manager::with_pool(config, Arc::clone(ctx.pool()));
    let model = load(&mut m, dir, file);
    reach_sliced(
        ctx,
        &mut m,
        &model,
        strategy,
        &WITH_DEADLOCKS,
        slicing,
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{file} on {} PEs: {e}", ctx.num_pes()))
}

/// Files of the three formats, with and without deadlocks, split early and late: seconds
/// in all.
const QUICK: &[&str] = &[
    "ltsmin-2017/anderson.4.bdd",
    "ltsmin-2017/bakery.4.bdd",
    "spin17-beem/at.1.bdd",
    "thesis-2014/anderson.1.8-rgs.bdd",
    "thesis-2014/schedule_world.2.8-rgs.bdd",
];

/// `files` sliced on 2 PEs (split after a few levels) and on 4 (split at once) give one
/// PE's answers with `strategy`; the slices add up to the states.
fn sliced_answers_are_one_pes(files: &[String], strategy: Strategy) {
    let one: Vec<Answer> = files.iter().map(|f| one_pe(f, strategy)).collect();
    for (pes, split_nodes) in [(2, 64), (4, 0)] {
        let many = sliced_on(pes, split_nodes, files, strategy);
        assert_eq!(many.len(), files.len());
        let mut split = 0;
        for ((file, want), (got, sum, vars)) in files.iter().zip(&one).zip(&many) {
            assert_eq!(want, got, "{file}: {strategy} on {pes} PEs");
            if file.starts_with("spin17-beem/") {
                assert_eq!(got.check, Some(StoredCheck::Matches), "{file}");
            }
            assert_eq!(sum, &got.states, "{file}: the slices add up");
            split += usize::from(*vars == pes.trailing_zeros() as usize);
        }
        // Every file was split with split_nodes 0; most of them with 64.
        assert!(split * 2 > files.len(), "{split} of {} split", files.len());
    }
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn sliced_bfs_gives_one_pes_answers_on_2_and_4_pes() {
    sliced_answers_are_one_pes(&quick(), Strategy::Bfs);
}

fn quick() -> Vec<String> {
    QUICK.iter().map(|f| f.to_string()).collect()
}

/// Sliced saturation: each slice saturated in rounds, the crossing images exchanged
/// (dropping them loses states on every file here).
#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn sliced_sat_gives_one_pes_answers_on_2_and_4_pes() {
    sliced_answers_are_one_pes(&quick(), Strategy::Sat);
}

/// Sliced chaining: each slice swept, what lands in other slices exchanged; the levels
/// are one PE's.
#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn sliced_chaining_gives_one_pes_answers_on_2_and_4_pes() {
    sliced_answers_are_one_pes(&quick(), Strategy::Chaining);
}

/// Every model file (minutes on two cores: run it with `--ignored`).
#[test]
#[ignore = "minutes: every model file whose bfs takes seconds, on 1, 2 and 4 PEs"]
fn sliced_bfs_gives_one_pes_answers_on_every_model_on_2_and_4_pes() {
    let files = model_files();
    assert!(files.len() >= 50, "{files:?}");
    sliced_answers_are_one_pes(&files, Strategy::Bfs);
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn sliced_par_gives_the_levels_of_bfs() {
    let files: Vec<String> = ["ltsmin-2017/anderson.4.bdd", "spin17-beem/at.1.bdd"]
        .map(String::from)
        .to_vec();
    let many = sliced_on(2, 0, &files, Strategy::Par);
    for (file, (got, _, _)) in files.iter().zip(&many) {
        assert_eq!(&one_pe(file, Strategy::Bfs), got, "{file}");
    }
}

/// Sliced `sat` with the default options splits at its own threshold
/// ([`DEFAULT_SAT_SPLIT_NODES`], earlier than the level strategies'
/// [`DEFAULT_SPLIT_NODES`]: bakery.4 after sweep 8, not 18) and gives one PE's answers.
#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn sliced_sat_splits_at_its_own_default_threshold() {
    let file = "ltsmin-2017/bakery.4.bdd";
    let want = one_pe(file, Strategy::Sat);
    let dir = required_models_dir();
    let split_after = |split_nodes: Option<usize>| {
        let mut per_pe = World::builder()
            .pes(2)
            .workers(1)
            .run(|ctx| {
                let slicing = SliceOptions {
                    split_nodes,
                    ..SliceOptions::default()
                };
                let o = explore_sliced(ctx, &dir, file, Strategy::Sat, &slicing);
                (o.report.map(|r| answer(&r)), o.slices.split_level)
            })
            .expect("the world runs");
        let (report, level) = per_pe.swap_remove(0);
        assert_eq!(report.as_ref(), Some(&want), "{file}: {split_nodes:?}");
        level.expect("bakery.4 is split")
    };
    let default = split_after(None);
    assert_eq!(default, split_after(Some(DEFAULT_SAT_SPLIT_NODES)));
    assert!(
        default < split_after(Some(DEFAULT_SPLIT_NODES)),
        "{default}"
    );
}

/// PE 0's answers and how `file` was sliced over `pes` PEs with `slicing`.
fn split_by(
    pes: usize,
    file: &str,
    strategy: Strategy,
    slicing: &SliceOptions,
) -> (Answer, SliceInfo) {
    let dir = required_models_dir();
    let mut per_pe = World::builder()
        .pes(pes)
        .workers(1)
        .run(|ctx| {
            let o = explore_sliced(ctx, &dir, file, strategy, slicing);
            (o.report.map(|r| answer(&r)), o.slices)
        })
        .expect("the world runs");
    let (report, slices) = per_pe.swap_remove(0);
    (report.expect("PE 0 reports"), slices)
}

/// `--split-vars`: the given variables, not the rule's, slice the states (reported as
/// given), and the answers are one PE's, on 2 PEs and on 4.
#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn given_split_variables_slice_the_states_with_one_pes_answers() {
    for file in ["ltsmin-2017/bakery.4.bdd", "spin17-beem/at.1.bdd"] {
        let mut m = Manager::new(1);
        let vars = load(&mut m, &required_models_dir(), file).state_vars;
        for strategy in [Strategy::Sat, Strategy::Bfs, Strategy::Chaining] {
            let want = one_pe(file, strategy);
            let early = SliceOptions {
                split_nodes: Some(0),
                ..SliceOptions::default()
            };
            let (_, rule) = split_by(2, file, strategy, &early);
            let chosen = rule.split_vars;
            assert!(!rule.split_given, "{file}: the rule chose {chosen:?}");
            // Variables the rule did not choose, from both ends of the state vector.
            let other = |from_end: bool| {
                let mut it: Box<dyn Iterator<Item = &u32>> = match from_end {
                    true => Box::new(vars.iter().rev()),
                    false => Box::new(vars.iter()),
                };
                *it.find(|v| !chosen.contains(v)).expect("another variable")
            };
            for pick in [
                vec![other(false)],
                vec![other(true)],
                vec![other(true), other(false)],
            ] {
                let pes = 1 << pick.len();
                let slicing = SliceOptions {
                    split_vars: Some(pick.clone()),
                    ..early.clone()
                };
                let (got, slices) = split_by(pes, file, strategy, &slicing);
                let sum: BigUint = slices.slice_states.iter().sum();
                let (split, given) = (slices.split_vars, slices.split_given);
                assert_eq!(
                    want, got,
                    "{file}: {strategy} on {pes} PEs split by {pick:?}"
                );
                assert_eq!(split, pick, "{file}: {strategy}");
                assert!(given, "{file}: {strategy}");
                assert_eq!(sum, got.states, "{file}: the slices add up");
            }
        }
    }
}

/// Sliced `sat` does not split by a variable that many successors flip. In resistance.1,
/// variable 30 cuts the visited set as evenly as the rule's choice and its writers are as
/// shallow, but almost half of the successors flip it (the rule before stop 33 took it):
/// split by 30, the ranks mail several times the bytes of states they mail under the
/// rule's split, and take seconds longer. Both give one PE's answers.
#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn sat_splits_by_a_variable_few_successors_flip() {
    let file = "spin17-beem/resistance.1.bdd";
    let want = one_pe(file, Strategy::Sat);
    let run = |split_vars: Option<Vec<u32>>| {
        let slicing = SliceOptions {
            split_vars,
            ..SliceOptions::default()
        };
        let (got, slices) = split_by(2, file, Strategy::Sat, &slicing);
        assert_eq!(got, want, "{file}: {:?}", slices.split_vars);
        (slices.split_vars, slices.bytes_sent.iter().sum::<u64>())
    };
    let (chosen, chosen_bytes) = run(None);
    let (heavy, heavy_bytes) = run(Some(vec![30]));
    assert_eq!(heavy, [30]);
    assert_ne!(chosen, heavy, "the rule chose the heavy split");
    assert!(
        4 * chosen_bytes < heavy_bytes,
        "split by {chosen:?}: {chosen_bytes} bytes mailed; by {heavy:?}: {heavy_bytes}"
    );
}

/// `outcome(PE, result)` of every PE of a sliced run of the built-in model `spec` over
/// `pes` PEs with `strategy` and `slicing`, each PE's manager made from `config(PE)`.
fn on_builtin_sliced<R: Send>(
    pes: usize,
    spec: &str,
    strategy: Strategy,
    slicing: &SliceOptions,
    config: impl Fn(usize) -> Config + Sync,
    outcome: impl Fn(usize, Result<SlicedOutcome, SlicedError>) -> R + Sync,
) -> Vec<R> {
    World::builder()
        .pes(pes)
        .workers(1)
        .run(|ctx| {
            let mut m = Manager::with_pool(config(ctx.my_pe()), Arc::clone(ctx.pool()));
            let model = rhizome_mc::builtin::build(&mut m, spec).unwrap();
            let r = reach_sliced(
                ctx,
                &mut m,
                &model,
                strategy,
                &ReachOptions::default(),
                slicing,
                &mut |_, _| {},
            );
            outcome(ctx.my_pe(), r)
        })
        .expect("the world runs")
}

/// Every PE's refusal of `philosophers:4` sliced over `pes` PEs with `strategy` and
/// `slicing` (a run that is not refused is a panic).
fn refusals(pes: usize, strategy: Strategy, slicing: &SliceOptions) -> Vec<String> {
    let config = |_| Config::default();
    on_builtin_sliced(
        pes,
        "philosophers:4",
        strategy,
        slicing,
        config,
        |_, r| match r {
            Err(SlicedError::Unsupported(why)) => why,
            other => panic!("{strategy} on {pes} PEs, {slicing:?}: {other:?}"),
        },
    )
}

/// Split variables that cannot split the states are refused on every PE alike, before
/// any exchange: too few or too many, not a state variable, one given twice.
#[test]
fn unusable_split_variables_are_refused_on_every_pe() {
    for (pes, vars, says) in [
        (2, vec![0, 2], "2 PEs are split by 1 variable, not 2"),
        (4, vec![0], "4 PEs are split by 2 variables, not 1"),
        (2, vec![1], "1 is not a state variable of the model"),
        (2, vec![1 << 20], "is not a state variable"),
        (4, vec![2, 2], "variable 2 given twice"),
    ] {
        let slicing = SliceOptions {
            split_vars: Some(vars.clone()),
            ..SliceOptions::default()
        };
        let refused = refusals(pes, Strategy::Sat, &slicing);
        assert_eq!(refused.len(), pes);
        assert!(refused.iter().all(|w| w == &refused[0]), "{refused:?}");
        assert!(
            refused[0].starts_with("--split-vars: ") && refused[0].contains(says),
            "{vars:?}: {}",
            refused[0]
        );
    }
}

#[test]
fn what_cannot_run_sliced_is_refused_on_every_pe() {
    for (pes, strategy) in [
        (3, Strategy::Bfs),
        (3, Strategy::Chaining),
        (6, Strategy::Sat),
    ] {
        let refused = refusals(pes, strategy, &SliceOptions::default());
        assert_eq!(refused.len(), pes);
        assert!(refused.iter().all(|w| w == &refused[0]), "{refused:?}");
    }
}

/// Every PE's error when the last PE's table is too small for `philosophers:40` (it fills
/// up in the third level, before any split) and the others' tables are large, sliced
/// over `pes` PEs, split at `split_nodes`: `(live, capacity, level, levels done)`.
fn out_of_nodes_on_the_last_pe(pes: usize, split_nodes: usize) -> Vec<[usize; 4]> {
    let config = |pe: usize| Config {
        workers: 1,
        initial_nodes: 1 << 12,
        max_nodes: if pe == pes - 1 { 1 << 12 } else { 1 << 22 },
        ..Config::default()
    };
    let slicing = SliceOptions {
        split_nodes: Some(split_nodes),
        ..SliceOptions::default()
    };
    let spec = "philosophers:40";
    on_builtin_sliced(
        pes,
        spec,
        Strategy::Bfs,
        &slicing,
        config,
        |pe, r| match r {
            Err(SlicedError::Incomplete(i)) => match i.error {
                rhizome_bdd::BddError::OutOfNodes { live, capacity } => {
                    [live, capacity, i.level, i.partial.levels.unwrap_or(0)]
                }
            },
            other => panic!("PE {pe} of {pes}: {other:?}"),
        },
    )
}

/// Before the split the PEs compute the same levels and agree on nothing level by level
/// (`agree_alike`): a PE whose table fills up must still end every PE with its error and
/// the level it failed in, and none may wait for it, whether the others go on to the end
/// of the exploration (no split; `philosophers:40` has 41 levels) or to the split (at
/// 4,000 nodes, in level 9).
#[test]
fn a_pe_out_of_nodes_before_the_split_ends_every_pe_with_its_error() {
    for (pes, split_nodes, others_done) in [
        (2, usize::MAX, 40),
        (2, 4000, 8),
        (4, usize::MAX, 40),
        (4, 4000, 8),
    ] {
        let got = out_of_nodes_on_the_last_pe(pes, split_nodes);
        let case = format!("{pes} PEs, split at {split_nodes}: {got:?}");
        assert_eq!(got.len(), pes, "{case}");
        let [live, capacity, level, done] = got[pes - 1];
        assert_eq!((capacity, level, done), (1 << 12, 3, 2), "{case}");
        for e in &got[..pes - 1] {
            // The failing PE's error and level; the partial report is the PE's own, which
            // went on to the split or the end.
            assert_eq!(*e, [live, capacity, level, others_done], "{case}");
        }
    }
}
