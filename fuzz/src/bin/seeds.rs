//! Writes the seed corpus: the built-in models exported as `rhizome reach --builtin SPEC
//! --write-model` does (format B), and a one-bit model in formats A, B and C (the built-in
//! models mix 1- and 2-bit integers, which formats A and C cannot hold).
//!
//! Seeds are named `*.fmt-a` / `*.fmt-b` / `*.fmt-c`, never `*.bdd`: model files stay out of the
//! repository, these small generated ones excepted. Usage: `seeds DIR`.

use rhizome_bdd::Manager;
use rhizome_mc::builtin;
use rhizome_mc::model_file::{
    COMPLEMENT, Format, StoredGroup, StoredModel, StoredNode, StoredSet, try_write_format_a,
    try_write_format_c, write_format_b,
};
use std::path::Path;

/// One 1-bit integer `x`; initially `x = 0`; one group sets `x' = 1`; so both states are
/// reachable (the stored set, which only format C writes, is `true`).
fn toggle() -> StoredModel {
    StoredModel {
        format: Format::B,
        state_bits: vec![1],
        state_vars: vec![0],
        prime_vars: vec![1],
        nodes: vec![
            StoredNode {
                var: 0,
                low: 0,
                high: COMPLEMENT,
            }, // 1: x
            StoredNode {
                var: 1,
                low: 0,
                high: COMPLEMENT,
            }, // 2: x'
        ],
        initial: StoredSet {
            root: 1 | COMPLEMENT,
            vars: vec![0],
        },
        groups: vec![StoredGroup {
            relation: 2,
            cur_vars: vec![0],
            next_vars: vec![1],
        }],
        reachable: Some(StoredSet {
            root: COMPLEMENT,
            vars: vec![0],
        }),
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    std::fs::write(&path, bytes)
        .unwrap_or_else(|e| panic!("seeds: cannot write {}: {e}", path.display()));
    println!("{} ({} bytes)", path.display(), bytes.len());
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: seeds DIR");
        std::process::exit(2);
    };
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).expect("seed directory");
    for n in [2, 3, 5] {
        let mut m = Manager::new(1);
        let spec = format!("philosophers:{n}");
        let model = builtin::build(&mut m, &spec).expect("built-in model");
        write(
            dir,
            &format!("philosophers-{n}.fmt-b"),
            &write_format_b(&model.to_stored(&m)),
        );
    }
    let t = toggle();
    write(dir, "toggle.fmt-b", &write_format_b(&t));
    let a = try_write_format_a(&t).expect("one-bit integers fit format A");
    write(dir, "toggle.fmt-a", &a);
    let c = try_write_format_c(&t).expect("one-bit integers on variables 0, 1 fit format C");
    write(dir, "toggle.fmt-c", &c);
}
