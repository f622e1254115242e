//! Symbolic model checking on `rhizome-bdd`: model files, built-in models, reachability
//! strategies and their reports.
//!
//! ```
//! use rhizome_bdd::Manager;
//! use rhizome_mc::{builtin, reach::{reach, ReachOptions, Strategy}};
//! let mut m = Manager::new(2);
//! let model = builtin::build(&mut m, "philosophers:3").unwrap();
//! let opts = ReachOptions { deadlocks: true, ..Default::default() };
//! let report = reach(&mut m, &model, Strategy::Bfs, &opts, &mut |_, _| {}).unwrap();
//! // the one deadlock: every philosopher holds a left fork
//! assert_eq!(report.deadlocks.unwrap().count, 1u32.into());
//! ```

pub mod builtin;
pub mod model;
pub mod model_file;
pub mod reach;
pub mod relations;
