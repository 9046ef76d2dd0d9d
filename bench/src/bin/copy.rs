//! `cargo run --release -p pitroom-bench --bin copy [-- FILES ROUNDS]`: creating an isolated
//! copy of a FILES-file repository (default 30,000) against `git worktree add --detach` of the
//! same commit, and against the way copies were checked out before, in the same run (medians of
//! ROUNDS, default 7). The same figure as the last section of the main bench, alone. Prints;
//! asserts nothing.

fn main() {
    let mut args = std::env::args().skip(1);
    let files = args.next().and_then(|a| a.parse().ok()).unwrap_or(30_000);
    let rounds = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    pitroom_bench::isolated_copy_vs_worktree(files, rounds);
}
