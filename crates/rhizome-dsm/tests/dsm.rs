//! The DSM suite (`tests/suite`) on local PEs: 1, 2 and 4 PEs with 1 and 2 application
//! threads each.

mod suite;

use rhizome::World;

fn run_suite(pes: usize, threads: usize) {
    for (name, test) in suite::TESTS {
        World::builder()
            .pes(pes)
            .run(|ctx| test(ctx, threads))
            .unwrap_or_else(|e| panic!("{name} on {pes} PEs x {threads} threads: {e}"));
    }
}

#[test]
fn one_pe_one_thread() {
    run_suite(1, 1);
}
#[test]
fn one_pe_two_threads() {
    run_suite(1, 2);
}
#[test]
fn two_pes_one_thread() {
    run_suite(2, 1);
}
#[test]
fn two_pes_two_threads() {
    run_suite(2, 2);
}
#[test]
fn four_pes_one_thread() {
    run_suite(4, 1);
}
#[test]
fn four_pes_two_threads() {
    run_suite(4, 2);
}
