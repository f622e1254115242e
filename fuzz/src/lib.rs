//! What the fuzz target checks on one input, kept apart from the AFL entry point so that a
//! crash can be replayed without AFL (`fuzz/target/release/replay FILE`).
//!
//! The readers promise: any byte string gives either a model or an error, never a panic,
//! and never an allocation sized by an unchecked count. On top of not panicking, a model
//! that was read must satisfy the invariants the rest of `rhizome` relies on, load into a
//! BDD manager as `rhizome reach` loads it, and survive being written back and read again.

use rhizome_bdd::{Config, Manager};
use rhizome_mc::model::Model;
use rhizome_mc::model_file::{
    Format, StoredModel, detect_format, parse_model, try_write_format_a, try_write_format_b,
    try_write_format_c,
};

/// Runs every reader on `data`: the detected format, and each format forced. Panics (the
/// fuzzer's crash) if a reader panics or if a model it returns breaks a promise.
pub fn check(data: &[u8]) {
    let _ = detect_format(data);
    for forced in [None, Some(Format::A), Some(Format::B), Some(Format::C)] {
        match parse_model(data, "fuzz-input", forced) {
            Ok(model) => check_model(&model, forced),
            Err(e) => {
                // The error must say where: an offset inside the input, or none at all.
                if let Some(offset) = e.offset() {
                    assert!(
                        offset <= data.len() as u64,
                        "error offset {offset} beyond the {} input bytes: {e}",
                        data.len()
                    );
                }
                let _ = e.to_string();
            }
        }
    }
}

fn check_model(model: &StoredModel, forced: Option<Format>) {
    if let Err(e) = model.validate() {
        panic!("a reader ({forced:?}) returned a model that breaks an invariant: {e}");
    }
    // A small table: a model from a short input is small, and a table that fills is an
    // error (`OutOfNodes`), which is an acceptable answer, not a crash.
    let mut m = Manager::with_config(Config {
        workers: 1,
        initial_nodes: 1 << 12,
        max_nodes: 1 << 16,
        ..Config::default()
    });
    let _ = Model::from_stored(&mut m, "fuzz-input".into(), model);
    if model.format == Format::C {
        // Everything the format-C reader returns can be said in format C again, and the
        // reader keeps each node once: the rewrite reads back to as many nodes.
        let bytes = try_write_format_c(model)
            .unwrap_or_else(|e| panic!("a format-C model that cannot be written as C: {e}"));
        let back = parse_model(&bytes, "rewritten", Some(Format::C))
            .unwrap_or_else(|e| panic!("the format-C rewrite does not read back: {e}"));
        assert_eq!(back.nodes.len(), model.nodes.len(), "format-C rewrite");
    }
    // Format B fixes the variable numbering; a format-A model that numbers its variables
    // otherwise cannot be written as B, and must then round-trip through format A.
    let (bytes, format) = match try_write_format_b(model) {
        Ok(bytes) => (bytes, Format::B),
        Err(_) => match try_write_format_a(model) {
            Ok(bytes) => (bytes, Format::A),
            Err(e) => {
                assert_eq!(
                    model.format,
                    Format::A,
                    "a format-B model that cannot be written as B: {e}"
                );
                return;
            }
        },
    };
    let back = parse_model(&bytes, "rewritten", Some(format)).unwrap_or_else(|e| {
        panic!(
            "the format-{format:?} rewrite of a model read as {forced:?} does not read back: {e}"
        )
    });
    let again = match format {
        Format::B => try_write_format_b(&back),
        _ => try_write_format_a(&back),
    }
    .unwrap_or_else(|e| panic!("a model read back from its rewrite cannot be written again: {e}"));
    assert_eq!(
        again, bytes,
        "the format-{format:?} rewrite is not a fixpoint"
    );
}
