// The model-file lookup of the tests, shared with rhizome-mc: sets `cfg(has_models)` and
// `RHIZOME_MODELS_DIR` when the BEEM model files are there.
include!("../rhizome-mc/build.rs");
