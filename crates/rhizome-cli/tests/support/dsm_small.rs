//! `rhizome bench dsm all` at sizes small enough for a test, shared by the local and the
//! MPI end-to-end tests, and the application names its records carry, in order.

/// Arguments after `bench dsm all`: every application at a test's size.
pub const SMALL: &[&str] = &[
    "--sor-n",
    "64",
    "--sor-iters",
    "2",
    "--bodies",
    "128",
    "--steps",
    "2",
    "--molecules",
    "64",
    "--water-steps",
    "2",
    "--lu-n",
    "64",
    "--lu-block",
    "16",
    "--cities",
    "9",
    "--tsp-split",
    "3",
    "--keys",
    "4000",
];

/// The applications of `all`, in the order of their records.
pub const APPS: [&str; 7] = ["sor", "lu", "water", "tsp", "radix", "nbody", "nbodyw"];
