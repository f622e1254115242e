//! Model-file readers against the real BEEM model files, round trips through the format-B
//! writer, and robustness against truncated and corrupted input.
//!
//! The model files are not in the repository. `build.rs` looks them up in `$RHIZOME_MODELS`,
//! then in `../shared/models` relative to the repository root (CI layout: the repository
//! beside `shared/`). When neither holds them the file-based tests are ignored, with the
//! reason, in the test runner's summary.

#[path = "support/models.rs"]
mod models;

use models::models_dir;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use rhizome_bdd::{Config, Manager};
use rhizome_mc::model::{Model, load_stored_bdd};
use rhizome_mc::model_file::{
    COMPLEMENT, Format, INDEX_MASK, StoredGroup, StoredModel, StoredNode, StoredSet, detect_format,
    parse_model, read_model, same_function, try_write_format_a, try_write_format_c, write_format_b,
};

/// Every `*/*.bdd` under the models directory, sorted, with its bytes.
fn model_files() -> &'static [(PathBuf, Vec<u8>)] {
    static FILES: OnceLock<Vec<(PathBuf, Vec<u8>)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let Some(dir) = models_dir() else {
            return Vec::new(); // only the tests ignored without models read the list
        };
        let mut paths = Vec::new();
        for sub in std::fs::read_dir(&dir)
            .expect("models dir readable")
            .flatten()
        {
            if let Ok(entries) = std::fs::read_dir(sub.path()) {
                for e in entries.flatten() {
                    let p = e.path();
                    if p.extension().is_some_and(|x| x == "bdd") {
                        paths.push(p);
                    }
                }
            }
        }
        paths.sort();
        paths
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(&p).expect("model file readable");
                (p, bytes)
            })
            .collect()
    })
}

/// Whether the model files were found; the tests calling this are ignored without them, so
/// an empty list here means the directory lost its files after the build.
fn have_files(test: &str) -> bool {
    assert!(
        !model_files().is_empty(),
        "{test}: the models directory holds no model files"
    );
    true
}

/// The format of a real model file, chosen by its content. Each folder holds one format, so
/// this also checks detection against the folder the file came from.
fn file_format(path: &Path, bytes: &[u8]) -> Format {
    let detected = detect_format(bytes).expect("model files are longer than 8 bytes");
    let folder = path.parent().and_then(|d| d.file_name()).unwrap();
    let expected = match folder.to_str().unwrap() {
        "thesis-2014" => Some(Format::A),
        "ltsmin-2017" => Some(Format::B),
        "spin17-beem" => Some(Format::C),
        _ => None, // a folder added later: content alone decides
    };
    if let Some(expected) = expected {
        assert_eq!(detected, expected, "{}", path.display());
    }
    detected
}

/// The real files (every format is read).
fn readable_files() -> impl Iterator<Item = &'static (PathBuf, Vec<u8>)> {
    model_files().iter()
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn parses_every_real_model_file() {
    if !have_files("parses_every_real_model_file") {
        return;
    }
    println!(
        "{:<40} {:>3} {:>5} {:>5} {:>6} {:>7} {:>7} {:>9}",
        "file", "fmt", "ints", "bits", "groups", "nodes", "init", "max rel"
    );
    for (path, bytes) in readable_files() {
        let m = read_model(path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.format, file_format(path, bytes), "{}", path.display());
        assert_eq!(
            parse_model(bytes, "x", Some(m.format)).unwrap(),
            m,
            "forced format"
        );
        m.validate()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let total: u32 = m.state_bits.iter().sum();
        assert_eq!(m.state_vars.len(), total as usize);
        assert_eq!(m.prime_vars.len(), total as usize);
        assert!(!m.nodes.is_empty());
        assert!(!m.groups.is_empty());
        for g in &m.groups {
            assert!(!g.cur_vars.is_empty());
            assert_eq!(g.cur_vars.len(), g.next_vars.len());
            // Some exported relations are empty (the group never fired): root `false`.
            assert!(g.relation == 0 || m.reachable_nodes(g.relation) > 0);
        }
        // Every node belongs to some BDD of the file: the exporters write no garbage.
        let reachable: usize = std::iter::once(m.initial.root)
            .chain(m.groups.iter().map(|g| g.relation))
            .chain(m.reachable.iter().map(|s| s.root))
            .map(|r| m.reachable_nodes(r))
            .sum();
        // Only format C stores the reachable states, always on the whole vector.
        assert_eq!(m.reachable.is_some(), m.format == Format::C);
        if let Some(set) = &m.reachable {
            assert_eq!(set.vars, m.state_vars);
            assert_eq!(m.initial.vars, m.state_vars);
        }
        assert!(reachable >= m.nodes.len(), "{}", path.display());
        if m.format == Format::B {
            // LTSmin's exports define the initial set on the whole state vector.
            assert_eq!(m.initial.vars, m.state_vars);
            // Each block holds exactly its BDD's nodes.
            assert_eq!(reachable, m.nodes.len());
        } else {
            let bits = m.state_bits[0];
            assert!(m.state_bits.iter().all(|&b| b == bits));
            for g in &m.groups {
                assert_eq!(g.cur_vars.len() % bits as usize, 0);
            }
        }
        let max_rel = m
            .groups
            .iter()
            .map(|g| m.reachable_nodes(g.relation))
            .max()
            .unwrap();
        println!(
            "{:<40} {:>3} {:>5} {:>5} {:>6} {:>7} {:>7} {:>9}",
            path.strip_prefix(path.parent().unwrap().parent().unwrap())
                .unwrap()
                .display(),
            format!("{:?}", m.format),
            m.vector_size(),
            total,
            m.groups.len(),
            m.nodes.len(),
            m.reachable_nodes(m.initial.root),
            max_rel
        );
    }
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn known_headers() {
    if !have_files("known_headers") {
        return;
    }
    // Facts read off the first bytes of two files with a hex dump.
    for (path, _) in model_files() {
        let name = path.file_name().unwrap().to_str().unwrap();
        if name == "anderson.4.bdd" {
            let m = read_model(path).unwrap();
            assert_eq!(m.vector_size(), 13);
            assert_eq!(m.state_bits, [1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3]);
            // The first record of the initial set: var 60, low false, high true.
            assert_eq!(
                m.nodes[0],
                StoredNode {
                    var: 60,
                    low: 0,
                    high: COMPLEMENT
                }
            );
        }
        if name == "anderson.1.8-rgs.bdd" {
            let m = read_model(path).unwrap();
            assert_eq!(m.state_bits, [8; 7]);
            assert_eq!(m.state_vars, (0..56).map(|p| 2 * p).collect::<Vec<u32>>());
            assert_eq!(
                m.prime_vars,
                (0..56).map(|p| 2 * p + 1).collect::<Vec<u32>>()
            );
        }
    }
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn format_b_round_trip_is_exact() {
    if !have_files("format_b_round_trip_is_exact") {
        return;
    }
    for (path, _) in readable_files().filter(|(p, b)| file_format(p, b) == Format::B) {
        let m = read_model(path).unwrap();
        let bytes = write_format_b(&m);
        let back = parse_model(&bytes, "rewritten", None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, m, "{}", path.display());
    }
}

fn assert_same_bdds(a: &StoredModel, b: &StoredModel) {
    assert_eq!(a.state_bits, b.state_bits);
    assert_eq!(a.state_vars, b.state_vars);
    assert_eq!(a.prime_vars, b.prime_vars);
    assert_eq!(a.initial.vars, b.initial.vars);
    assert!(same_function(a, a.initial.root, b, b.initial.root));
    assert_eq!(
        a.reachable_nodes(a.initial.root),
        b.reachable_nodes(b.initial.root)
    );
    assert_eq!(a.groups.len(), b.groups.len());
    for (ga, gb) in a.groups.iter().zip(&b.groups) {
        assert_eq!(ga.cur_vars, gb.cur_vars);
        assert_eq!(ga.next_vars, gb.next_vars);
        assert!(same_function(a, ga.relation, b, gb.relation));
        assert_eq!(
            a.reachable_nodes(ga.relation),
            b.reachable_nodes(gb.relation)
        );
    }
}

/// Whether two models have the same layout and BDDs of the same functions, compared in one
/// BDD manager (the format-C reader stores its BDDs reduced, which a generated model's
/// need not be, so the shapes may differ).
fn assert_same_functions(a: &StoredModel, b: &StoredModel) {
    assert_eq!(a.state_vars, b.state_vars);
    let mut m = Manager::with_config(Config {
        workers: 1,
        initial_nodes: 1 << 12,
        ..Config::default()
    });
    let load = |m: &mut Manager, s: &StoredModel| {
        let model = Model::from_stored(m, "x".into(), s).unwrap();
        let stored = model.stored_reachable.as_ref();
        let reachable = stored.map(|r| load_stored_bdd(m, r).unwrap());
        let relations: Vec<_> = model.groups.iter().map(|g| g.relation).collect();
        (model, relations, reachable)
    };
    let (ma, ra, sa) = load(&mut m, a);
    let (mb, rb, sb) = load(&mut m, b);
    assert_eq!(ma.initial, mb.initial);
    assert_eq!(ra, rb);
    assert_eq!(sa, sb);
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn format_a_rewrites_keep_the_bdds() {
    if !have_files("format_a_rewrites_keep_the_bdds") {
        return;
    }
    for (path, bytes) in readable_files().filter(|(p, b)| file_format(p, b) == Format::A) {
        let m = read_model(path).unwrap();
        let b = parse_model(&write_format_b(&m), "as-b", None).unwrap();
        assert_eq!(b.format, Format::B);
        assert_same_bdds(&m, &b);
        // Format A shares nodes between BDDs; format B cannot, so it never has fewer.
        assert!(b.nodes.len() >= m.nodes.len());
        let a_bytes = try_write_format_a(&m).unwrap();
        assert_eq!(
            a_bytes.len(),
            bytes.len(),
            "same sizes, only block boundaries move"
        );
        let a = parse_model(&a_bytes, "as-a", None).unwrap();
        assert_eq!(a, m, "{}", path.display());
    }
}

#[cfg_attr(
    not(has_models),
    ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)"
)]
#[test]
fn format_c_files_rewrite_to_the_same_bdds() {
    if !have_files("format_c_files_rewrite_to_the_same_bdds") {
        return;
    }
    let mut read = 0;
    for (path, bytes) in model_files() {
        if file_format(path, bytes) != Format::C {
            continue;
        }
        let m = parse_model(bytes, "c.bdd", Some(Format::C)).unwrap_or_else(|e| panic!("{e}"));
        let stored = m.reachable.as_ref().unwrap();
        for (format, rewrite) in [
            (Format::C, try_write_format_c(&m).unwrap()),
            (Format::B, write_format_b(&m)),
            (Format::A, try_write_format_a(&m).unwrap()),
        ] {
            let back = parse_model(&rewrite, "rewritten", None).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(back.format, format, "{}", path.display());
            assert_same_bdds(&m, &back);
            if format == Format::C {
                let again = back.reachable.as_ref().unwrap();
                assert!(same_function(&m, stored.root, &back, again.root));
                // The reader keeps a node only once and only if a BDD uses it.
                assert_eq!(back.nodes.len(), m.nodes.len(), "{}", path.display());
            }
        }
        read += 1;
    }
    println!("{read} format-C files rewritten");
    assert!(read > 0, "no format-C file in the models directory");
}

#[test]
fn missing_file_error_names_it() {
    let e = read_model(Path::new("/nonexistent/dir/x.bdd")).unwrap_err();
    let s = e.to_string();
    assert!(s.starts_with("/nonexistent/dir/x.bdd: "), "{s}");
    assert!(e.offset().is_none());
}

// ---------------------------------------------------------------------------------------
// Generated models.

/// Deterministic generator (xorshift) so a proptest seed reproduces a model.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Appends up to `count` random nodes over `vars` (sorted) to `nodes`; returns a root built
/// from them. Children are earlier nodes of this BDD with larger variables, or constants.
fn random_bdd(rng: &mut Rng, nodes: &mut Vec<StoredNode>, vars: &[u32], count: usize) -> u64 {
    let first = nodes.len();
    let mut root = if rng.below(2) == 0 { 0 } else { COMPLEMENT };
    if vars.is_empty() {
        return root;
    }
    for _ in 0..count {
        let var = vars[rng.below(vars.len() as u64) as usize];
        let candidates: Vec<u64> = (first..nodes.len())
            .filter(|&i| nodes[i].var > var)
            .map(|i| i as u64 + 1)
            .collect();
        let pick = |rng: &mut Rng| {
            if candidates.is_empty() || rng.below(3) == 0 {
                0
            } else {
                candidates[rng.below(candidates.len() as u64) as usize]
            }
        };
        let low = pick(rng);
        let high = pick(rng) | if rng.below(2) == 0 { 0 } else { COMPLEMENT };
        nodes.push(StoredNode { var, low, high });
        root = nodes.len() as u64 | if rng.below(2) == 0 { 0 } else { COMPLEMENT };
    }
    root
}

fn random_model(seed: u64) -> StoredModel {
    let mut rng = Rng(seed | 1);
    let vs = 1 + rng.below(4) as usize;
    let uniform = rng.below(2) == 0;
    let w = 1 + rng.below(3) as u32;
    let state_bits: Vec<u32> = (0..vs)
        .map(|_| if uniform { w } else { 1 + rng.below(3) as u32 })
        .collect();
    let total: u32 = state_bits.iter().sum();
    let mut first = Vec::new();
    let mut acc = 0;
    for &b in &state_bits {
        first.push(acc);
        acc += b;
    }
    let cur_of = |ints: &[usize]| -> Vec<u32> {
        ints.iter()
            .flat_map(|&i| (first[i]..first[i] + state_bits[i]).map(|p| 2 * p))
            .collect()
    };
    let mut nodes = Vec::new();
    let all: Vec<usize> = (0..vs).collect();
    let vars = cur_of(&all);
    let n = rng.below(6) as usize;
    let root = random_bdd(&mut rng, &mut nodes, &vars, n);
    let initial = StoredSet { root, vars };
    let mut groups = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let ints: Vec<usize> = (0..vs).filter(|_| rng.below(2) == 0).collect();
        let ints = if ints.is_empty() { vec![0] } else { ints };
        let cur_vars = cur_of(&ints);
        let next_vars: Vec<u32> = cur_vars.iter().map(|v| v + 1).collect();
        let mut domain: Vec<u32> = cur_vars.iter().chain(&next_vars).copied().collect();
        domain.sort_unstable();
        let n = rng.below(8) as usize;
        let relation = random_bdd(&mut rng, &mut nodes, &domain, n);
        groups.push(StoredGroup {
            relation,
            cur_vars,
            next_vars,
        });
    }
    // Drawn last, so that the rest of a seed's model is as it was before sets were stored.
    let reachable = (rng.below(2) == 0).then(|| {
        let n = rng.below(6) as usize;
        let root = random_bdd(&mut rng, &mut nodes, &initial.vars, n);
        StoredSet {
            root,
            vars: initial.vars.clone(),
        }
    });
    StoredModel {
        format: Format::B,
        state_bits,
        state_vars: (0..total).map(|p| 2 * p).collect(),
        prime_vars: (0..total).map(|p| 2 * p + 1).collect(),
        nodes,
        initial,
        groups,
        reachable,
    }
}

fn check_parse_never_panics(bytes: &[u8]) -> Result<(), TestCaseError> {
    for format in [None, Some(Format::A), Some(Format::B), Some(Format::C)] {
        if let Err(e) = parse_model(bytes, "mutated", format) {
            let off = e.offset().expect("content error has an offset");
            prop_assert!(off <= bytes.len() as u64, "{e}");
            let s = e.to_string();
            prop_assert!(!s.contains('\n'));
            prop_assert!(s.starts_with(&format!("mutated: byte {off}: ")), "{s}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn generated_models_round_trip(seed in any::<u64>()) {
        let m = random_model(seed);
        m.validate().unwrap();
        let once = parse_model(&write_format_b(&m), "gen", None).unwrap();
        assert_same_bdds(&m, &once);
        let twice = parse_model(&write_format_b(&once), "gen", None).unwrap();
        prop_assert_eq!(&twice, &once);
        if m.state_bits.iter().all(|&b| b == m.state_bits[0]) {
            let a = parse_model(&try_write_format_a(&m).unwrap(), "gen-a", None).unwrap();
            prop_assert_eq!(a.format, Format::A);
            prop_assert_eq!(StoredModel { format: Format::B, reachable: m.reachable.clone(), ..a }, m.clone());
            // Detection tells a written format-C file from format B by content alone.
            let c = parse_model(&try_write_format_c(&m).unwrap(), "gen-c", None).unwrap();
            prop_assert_eq!(c.format, Format::C);
            assert_same_functions(&m, &c);
        }
    }

    #[test]
    fn generated_models_survive_corruption(
        seed in any::<u64>(),
        format in 0..3u8,
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let m = random_model(seed);
        let bytes = match format {
            0 => try_write_format_a(&m).unwrap_or_else(|_| write_format_b(&m)),
            1 => try_write_format_c(&m).unwrap_or_else(|_| write_format_b(&m)),
            _ => write_format_b(&m),
        };
        let cut = cut.index(bytes.len());
        let truncated = &bytes[..cut];
        check_parse_never_panics(truncated)?;
        // Generated files end with their last relation: any truncation loses data.
        prop_assert!(parse_model(truncated, "t", None).is_err());
        let mut flipped = bytes.clone();
        for (i, b) in flips {
            let i = i.index(flipped.len());
            flipped[i] ^= b.max(1);
        }
        check_parse_never_panics(&flipped)?;
    }

    #[cfg_attr(not(has_models), ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)")]
    #[test]
    fn real_files_survive_truncation(file in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>()) {
        let files = model_files();
        if files.is_empty() {
            return Ok(());
        }
        let (path, bytes) = &files[file.index(files.len())];
        let cut = cut.index(bytes.len());
        check_parse_never_panics(&bytes[..cut])?;
        match parse_model(&bytes[..cut], "t", None) {
            Ok(m) => {
                // Only format B has an ignorable tail; cutting into it changes nothing.
                prop_assert_eq!(file_format(path, bytes), Format::B);
                prop_assert_eq!(m, parse_model(bytes, "t", None).unwrap());
            }
            Err(e) => prop_assert!(e.offset().unwrap() <= cut as u64),
        }
    }

    #[cfg_attr(not(has_models), ignore = "needs the BEEM model files ($RHIZOME_MODELS or ../shared/models)")]
    #[test]
    fn real_files_survive_byte_flips(
        file in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1..=255u8), 1..4),
    ) {
        let files = model_files();
        if files.is_empty() {
            return Ok(());
        }
        let (_, bytes) = &files[file.index(files.len())];
        let mut flipped = bytes.clone();
        for (i, b) in flips {
            let i = i.index(flipped.len());
            flipped[i] ^= b;
        }
        check_parse_never_panics(&flipped)?;
        // Whatever parses must satisfy every invariant the readers promise.
        if let Ok(m) = parse_model(&flipped, "f", None) {
            prop_assert!(m.validate().is_ok());
            let _ = INDEX_MASK;
        }
    }
}

/// CI found this generated format-B file: its `int` fields read as format C's node count,
/// landing exactly on a copy of `vector_size`. It must still be read as format B.
#[test]
fn format_b_file_resembling_format_c_is_read_as_b() {
    let m = random_model(3175508746348868480);
    let bytes = write_format_b(&m);
    assert_eq!(
        &bytes[12..20],
        &3u64.to_le_bytes(),
        "the resemblance is gone"
    );
    assert_eq!(
        &bytes[76..84],
        &3u64.to_le_bytes(),
        "the resemblance is gone"
    );
    let read = parse_model(&bytes, "gen", None).unwrap();
    assert_eq!(read.format, Format::B);
    assert_same_bdds(&m, &read);
}
