//! The CnC suite (`tests/cnc_suite`) on the local transport, on 1, 2 and 4 PEs with 2
//! workers each: the checked Cholesky and Smith-Waterman graphs, double puts, gets never
//! satisfied, panicking steps, and a stress graph of many small steps across PEs.

mod cnc_suite;
#[macro_use]
mod support;

local_suite_tests!(cnc_suite::TESTS);
