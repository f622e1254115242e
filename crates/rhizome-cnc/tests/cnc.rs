//! The CnC suite (`tests/cnc_suite`) on the local transport: the checked Cholesky and
//! Smith-Waterman graphs, double puts, gets never satisfied, panicking steps, and a
//! stress graph of many small steps across PEs, on 1, 2 and 4 PEs, with one worker per
//! PE (steps only cross PEs) and with two (steps are also stolen inside a PE).

mod cnc_suite;
mod support;

/// A test that runs the whole suite on `$pes` PEs of `$workers` workers.
macro_rules! suite_test {
    ($name:ident, $pes:expr, $workers:expr) => {
        #[test]
        fn $name() {
            support::suite_on(cnc_suite::TESTS, $pes, $workers);
        }
    };
}

suite_test!(suite_on_1_pe_of_2_workers, 1, 2);
suite_test!(suite_on_2_pes_of_1_worker, 2, 1);
suite_test!(suite_on_2_pes_of_2_workers, 2, 2);
suite_test!(suite_on_4_pes_of_1_worker, 4, 1);
