//! The `pitroom` package is its two executables (`src/main.rs`, `src/bin/pitroom-guard.rs`);
//! this library is empty on purpose. It exists so that the package's own tests can depend on
//! the package with the `test-fakes` feature (the `[dev-dependencies]` entry `pitroom = { path =
//! ".", features = ["test-fakes"] }`), which builds the test-only fake worker
//! (`testing/fake_worker.rs`) for `cargo test` and for nothing else. Cargo ignores a dependency
//! on a package without a library target (rust-lang/cargo#14406), so without this one the
//! feature would reach the tests only through a cargo bug.
