//! `cargo build --release -p pitroom && cargo run --release -p pitroom-bench --bin guard`: the
//! guard loop alone (the main bench prints the same rows after its own), quick to repeat while
//! working on the guard's start. N× `git rev-parse HEAD` and N× `git status` direct, through
//! `pitroom-guard` and through `pitroom` as the guard, per call; `pitroom --version` beside
//! `/bin/true`. Asserts nothing.
//!
//! Arguments are more guard executables to compare, each behind links of its own, e.g. a
//! static relink: `cargo rustc --release -p pitroom --bin pitroom-guard -- -C
//! target-feature=+crt-static -C relocation-model=static` (static relocations: the package's
//! executables link non-PIE), copied aside before `cargo build` relinks the usual one.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the benchmark failing, with its message"
)]

fn main() {
    let pitroom = pitroom_bench::release_pitroom();
    let tmp = tempfile::tempdir().expect("temp dir");
    let others: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    let rows = pitroom_bench::guard::guard_loop(&pitroom, &others, tmp.path());
    let version = pitroom_bench::guard::version_loop(&pitroom);
    pitroom_bench::guard::print_rows(&rows, &version);
}
