//! The kernels at small sizes, on two PEs of the local transport, against their
//! sequential versions and known results.

use rhizome::World;
use rhizome::pool::Pool;
use rhizome::tasks::Tasks;
use rhizome_kernels::comm;
use rhizome_kernels::fib::{fib, fib_seq};
use rhizome_kernels::tasks::{Instance, Kernel, register};

/// Runs `instance` on the tasks layer of `pes` PEs x 2 workers; PE 0's outcome.
fn run_parallel(instance: &Instance, pes: usize) -> u64 {
    let out = World::builder()
        .pes(pes)
        .workers(2)
        .run(|ctx| {
            let tasks = Tasks::new(ctx);
            register(&tasks);
            tasks.run(ctx, |t| {
                (t.my_pe() == 0).then(|| instance.run_parallel(t).result)
            })
        })
        .expect("the run succeeds");
    out[0].expect("PE 0 ran the kernel")
}

#[test]
fn fork_join_fib_matches_the_definition() {
    let pool = Pool::new(2);
    assert_eq!(pool.run(|w| fib(w, 20)), 6765);
    assert_eq!(fib_seq(20), 6765);
}

#[test]
fn every_task_kernel_agrees_with_its_sequential_code_and_known_result() {
    let cases = [
        (Kernel::Fib, Some(18), Some(8)),
        (Kernel::Nqueens, Some(7), Some(2)),
        (Kernel::Qsort, Some(5000), Some(100)),
        (Kernel::Matmul, Some(24), Some(4)),
        (Kernel::Lu, Some(64), Some(16)),
    ];
    for (kernel, n, cutoff) in cases {
        let instance = Instance::new(kernel, n, cutoff, "").expect("valid parameters");
        let seq = instance.run_sequential().expect("has a sequential version");
        if let Some(known) = instance.expected() {
            assert_eq!(seq.result, known, "{}", instance.label());
        }
        assert_eq!(
            run_parallel(&instance, 2),
            seq.result,
            "{} on 2 PEs",
            instance.label()
        );
    }
    assert_eq!(
        Instance::new(Kernel::Fib, Some(18), Some(8), "")
            .unwrap()
            .run_sequential()
            .unwrap()
            .result,
        2584
    );
}

#[test]
fn uts_t1_counts_its_published_size_on_two_pes() {
    let instance = Instance::new(Kernel::Uts, None, None, "T1").expect("T1 is a sample tree");
    assert_eq!(instance.expected(), Some(4_130_071));
    assert_eq!(run_parallel(&instance, 2), 4_130_071);
}

#[test]
fn pingpong_gets_every_answer_back() {
    let instance = Instance::new(Kernel::Pingpong, Some(50), None, "").unwrap();
    assert!(instance.run_sequential().is_none());
    assert_eq!(run_parallel(&instance, 2), 50);
}

#[test]
fn bad_parameters_are_refused_with_a_reason() {
    let e = Instance::new(Kernel::Lu, Some(100), Some(30), "")
        .err()
        .unwrap();
    assert!(e.contains("multiple of the tile size"), "{e}");
    let e = Instance::new(Kernel::Uts, None, None, "T9").err().unwrap();
    assert!(e.contains("unknown UTS tree"), "{e}");
    assert!(Instance::new(Kernel::Nqueens, Some(17), None, "").is_err());
}

#[test]
fn the_comm_benchmark_reports_every_figure_on_every_pe() {
    let rows = World::builder()
        .pes(2)
        .run(|ctx| comm::measure(ctx, 1, 50, 2000))
        .expect("the run succeeds");
    assert_eq!(rows[0], rows[1], "every PE reports the same figures");
    let names: Vec<&str> = rows[0].iter().map(|r| r.name.as_str()).collect();
    for want in [
        "get 8 B latency",
        "put 128 B latency",
        "compare-exchange latency",
        "AM call round trip",
        "aggregated 8 B messages (histogram)",
        "allreduce u64 latency",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(rows[0].iter().all(|r| r.value.is_finite() && r.value > 0.0));
    assert!(
        rows[0].iter().all(|r| r.baseline.is_none()),
        "no raw-MPI baseline on the local transport"
    );
}

#[test]
fn bale_kernels_give_the_checked_result_every_way() {
    use rhizome_kernels::bale::{Impl, Kernel, Options};
    for pes in [1, 2, 4] {
        // Buffers of 3 items force refusals and many flushes; `None` is the default size.
        for buffer in [Some(3), None] {
            let opts = Options {
                updates: 3000,
                table: 37,
                buffer,
                seed: pes as u64,
                ..Options::default()
            };
            let out = World::builder()
                .pes(pes)
                .run(|ctx| {
                    let mut all = Vec::new();
                    for kernel in [Kernel::Histogram, Kernel::IndexGather] {
                        for imp in Impl::ALL {
                            all.push(kernel.run(ctx, imp, &opts).map(|o| o.updates));
                        }
                    }
                    all
                })
                .expect("the run succeeds");
            for results in out {
                for r in results {
                    assert_eq!(r, Ok(3000 * pes as u64), "{pes} PEs, buffer {buffer:?}");
                }
            }
        }
    }
}

#[test]
fn bale_matrix_kernels_give_the_checked_result_every_way() {
    use rhizome_kernels::bale::{Impl, Kernel, Options};
    let kernels = [
        Kernel::Permute,
        Kernel::Randperm,
        Kernel::Transpose,
        Kernel::Triangles,
        Kernel::Toposort,
    ];
    for pes in [1, 2, 4] {
        // Buffers of 3 items force refusals and many flushes; `None` is the default size.
        for buffer in [Some(3), None] {
            let opts = Options {
                updates: 60,
                buffer,
                seed: 10 + pes as u64,
                nonzeros: 5,
                scale: 8,
                ..Options::default()
            };
            let out = World::builder()
                .pes(pes)
                .run(|ctx| {
                    let mut all = Vec::new();
                    for kernel in kernels {
                        for imp in Impl::ALL {
                            if kernel.supports(imp).is_ok() {
                                all.push((kernel, imp, kernel.run(ctx, imp, &opts)));
                            }
                        }
                    }
                    all
                })
                .expect("the run succeeds");
            for results in out {
                // Agp, Conveyor and Selector for all five, Context for permute.
                assert_eq!(results.len(), 16);
                for (kernel, imp, r) in results {
                    let what = format!("{kernel:?} {imp:?} on {pes} PEs, buffer {buffer:?}");
                    let o = r.unwrap_or_else(|e| panic!("{what}: {e}"));
                    let want = match kernel {
                        Kernel::Randperm | Kernel::Toposort => Some(60 * pes as u64),
                        _ => None,
                    };
                    if let Some(w) = want {
                        assert_eq!(o.updates, w, "{what}");
                    }
                    assert!(o.updates > 0 && o.seconds >= 0.0, "{what}");
                }
            }
        }
    }
}

#[test]
fn bale_triangles_on_kronecker_graphs_match_the_closed_form_every_way() {
    use rhizome_kernels::bale::{Impl, Kernel, Options};
    // Modes 1 (hub loops: many triangles), 2 (leaf loops: few) and 0 (none).
    let graphs = ["1:2x3x4", "2:3x2x2x3", "0:3x4"];
    for pes in [1, 2, 4] {
        for buffer in [Some(3), None] {
            let out = World::builder()
                .pes(pes)
                .run(|ctx| {
                    let mut all = Vec::new();
                    for g in graphs {
                        let opts = Options {
                            buffer,
                            kronecker: Some(g.parse().unwrap()),
                            ..Options::default()
                        };
                        for imp in [Impl::Agp, Impl::Conveyor, Impl::Selector] {
                            all.push((g, imp, Kernel::Triangles.run(ctx, imp, &opts)));
                        }
                    }
                    all
                })
                .expect("the run succeeds");
            for results in out {
                for (g, imp, r) in results {
                    let what = format!("{g} {imp:?} on {pes} PEs, buffer {buffer:?}");
                    let o = r.unwrap_or_else(|e| panic!("{what}: {e}"));
                    // Every edge of the product once, less the diagonal: the one loop
                    // of mode 1 (vertex 0, all hubs), the one of mode 2 (the last).
                    let want = match g {
                        "1:2x3x4" => (5 * 7 * 9 - 1) / 2,
                        "2:3x2x2x3" => (7 * 5 * 5 * 7 - 1) / 2,
                        _ => 6 * 8 / 2,
                    };
                    assert_eq!(o.updates, want, "{what}");
                }
            }
        }
    }
}

#[test]
fn bale_kernels_without_a_context_version_refuse_it_with_the_reason() {
    use rhizome_kernels::bale::{Impl, Kernel, Options};
    let out = World::builder()
        .pes(2)
        .run(|ctx| {
            [
                Kernel::Randperm,
                Kernel::Transpose,
                Kernel::Triangles,
                Kernel::Toposort,
            ]
            .map(|k| k.run(ctx, Impl::Context, &Options::default()))
        })
        .expect("the run succeeds");
    for r in &out[0] {
        let e = r.as_ref().expect_err("no context version");
        assert!(e.contains("has no context version"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    assert!(Kernel::Permute.supports(Impl::Context).is_ok());
}
