//! Where the shared BEEM model files are: `$RHIZOME_MODELS`, else `../shared/models`
//! beside the repository (the CI layout). Shared by the model-file tests of `rhizome-mc`
//! and of the command, which include this file by path.

use std::path::PathBuf;

/// The models directory, if there is one.
pub fn models_dir() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("RHIZOME_MODELS").map(PathBuf::from),
        Some(PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/models"
        ))),
    ];
    candidates.into_iter().flatten().find(|p| p.is_dir())
}
