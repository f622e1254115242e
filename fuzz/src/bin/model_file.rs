//! The AFL target: every reader of `rhizome_mc::model_file` on the fuzzer's input.
//! Build and run with `cargo afl` (see `fuzz/README.md`).

fn main() {
    afl::fuzz!(|data: &[u8]| {
        rhizome_fuzz::check(data);
    });
}
