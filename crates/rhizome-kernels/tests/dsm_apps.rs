//! The DSM applications on 1, 2 and 4 local PEs with 1 and 2 application threads each
//! give the bits of their sequential runs (Water's locks decide the order of its sums).

use rhizome::World;
use rhizome_kernels::dsm::{App, run_dsm, run_sequential};

fn matches_sequential(app: App) {
    let want = run_sequential(&app).checksum;
    for pes in [1, 2, 4] {
        for threads in [1, 2] {
            let got = World::builder()
                .pes(pes)
                .run(|ctx| run_dsm(ctx, &app, threads))
                .unwrap_or_else(|e| panic!("{app:?} on {pes} PEs x {threads}: {e}"));
            for o in got {
                assert_eq!(o.checksum, want, "{app:?} on {pes} PEs x {threads} threads");
                assert!(
                    pes == 1 || o.stats.page_fetches > 0,
                    "pages moved between PEs"
                );
            }
        }
    }
}

#[test]
fn sor_gives_the_sequential_result() {
    matches_sequential(App::Sor { n: 100, iters: 5 });
}

#[test]
fn nbody_gives_the_sequential_result() {
    matches_sequential(App::Nbody {
        bodies: 200,
        steps: 3,
    });
}

#[test]
fn water_gives_the_sequential_result() {
    matches_sequential(App::Water {
        molecules: 96,
        steps: 2,
    });
}
