//! Where the shared BEEM model files are: the directory `build.rs` found at build time
//! (`$RHIZOME_MODELS`, else `../shared/models` beside the checkout), which also set
//! `cfg(has_models)`. Shared by the model-file tests of `rhizome-mc` and of the command,
//! which include this file by path.
//!
//! A test that needs the files carries
//! `#[cfg_attr(not(has_models), ignore = "needs the BEEM model files (RHIZOME_MODELS or ../shared/models)")]`,
//! so the runner reports it as ignored, with that reason, when they are absent.

use std::path::PathBuf;

/// The models directory, if the build found one.
pub fn models_dir() -> Option<PathBuf> {
    option_env!("RHIZOME_MODELS_DIR").map(PathBuf::from)
}

/// The models directory, for a test that is ignored without it.
#[allow(dead_code)] // not every including test file needs it
pub fn required_models_dir() -> PathBuf {
    models_dir().expect(
        "no BEEM model files: mark this test \
         #[cfg_attr(not(has_models), ignore = \"...\")] so that it is reported as ignored",
    )
}
