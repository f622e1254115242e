// Finds the BEEM model files the file-based tests need and tells the tests where they are.
//
// The model files are not in the repository (see `docs/model-files.md`). They are taken
// from `$RHIZOME_MODELS`, else from `../shared/models` beside the checkout (the CI layout).
// A directory counts only if one of its subdirectories holds a `.bdd` file, so an empty
// or unrelated directory does not enable the tests. When one is found this script sets
// `cfg(has_models)` and `RHIZOME_MODELS_DIR` for the crate and its tests; without it, the
// tests that need the files are marked ignored and the test runner lists them, with the
// reason, in its own summary instead of passing them silently.
//
// `rhizome-cli/build.rs` includes this script, since its tests
// share the lookup through `tests/support/models.rs`. Comments here are plain `//` because
// an included file cannot carry inner doc comments.

use std::path::{Path, PathBuf};

fn holds_model_files(dir: &Path) -> bool {
    let Ok(subdirs) = std::fs::read_dir(dir) else {
        return false;
    };
    subdirs.flatten().any(|sub| {
        std::fs::read_dir(sub.path()).is_ok_and(|files| {
            files
                .flatten()
                .any(|f| f.path().extension().is_some_and(|x| x == "bdd"))
        })
    })
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_models)");
    println!("cargo::rerun-if-env-changed=RHIZOME_MODELS");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let beside_checkout = manifest.join("../../../shared/models");
    let candidates = [
        std::env::var_os("RHIZOME_MODELS").map(PathBuf::from),
        Some(beside_checkout.clone()),
    ];
    let found = candidates
        .into_iter()
        .flatten()
        .find(|d| holds_model_files(d));
    if let Some(dir) = &found {
        // Watching the directory that was found notices it being emptied or removed. A
        // directory that appears later is not watched (cargo would rerun this script on
        // every build while a watched path is missing): set RHIZOME_MODELS, or touch this
        // file, to pick it up.
        println!("cargo::rerun-if-changed={}", dir.display());
        println!("cargo::rustc-cfg=has_models");
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        println!("cargo::rustc-env=RHIZOME_MODELS_DIR={}", dir.display());
    } else {
        // Without any rerun-if-changed line cargo would rerun this script whenever any
        // file of the package changes; this keeps it to the script itself.
        println!("cargo::rerun-if-changed=build.rs");
    }
}
