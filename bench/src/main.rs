//! `cargo run --release -p pitroom-bench [-- FILES [LARGE_FILES [COPY_FILES]]]`: on a generated repository
//! (10,000 files by default) with a dirty tree, measures Pitroom's own overhead around a no-op
//! worker and the cost of one snapshot, each as a ratio to `git status` on the same tree in the
//! same run, and Pitroom's peak memory while it supervises a run. Then the snapshot, read and
//! write rows again on a tree ten times larger (100,000 files by default; `0` skips it), with
//! the cost per file of both, so the growth shows. Last, an isolated copy against `git worktree
//! add` on a tree of 30,000 files (COPY_FILES; `0` skips it). Prints medians; asserts nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::path::Path;
use std::process::{Command, Stdio};

use pitroom_bench::{generate_repo, release_binaries, run_ok};
use std::time::{Duration, Instant};

const ROUNDS: usize = 9;
/// Rounds on the large tree: each of its runs costs ten times more, and the tree is built once.
const LARGE_ROUNDS: usize = 5;

fn main() {
    let files: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let large_files: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10 * files);
    let copy_files: usize = std::env::args()
        .nth(3)
        .and_then(|a| a.parse().ok())
        .unwrap_or(30_000);
    let (pitroom, worker) = release_binaries();
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    let state = tmp.path().join("state");
    generate_repo(&repo, files, 50);

    let git_status = median(|| git_status_once(&repo));
    let snapshot = median(|| snapshot_once(&repo, tmp.path()));

    let script = serde_json::json!([{"text": "SUMMARY: nothing to do"}, {"step": {"input": 10, "output": 1}}]).to_string();
    let prompt = tmp.path().join("prompt.txt");
    std::fs::write(&prompt, "task").expect("prompt");
    let worker_alone = median(|| {
        let stdin = std::fs::File::open(&prompt).expect("prompt");
        run_ok(
            Command::new(&worker)
                .env("PITROOM_FAKE_SCRIPT", &script)
                .stdin(stdin)
                .stdout(Stdio::null())
                .current_dir(&repo),
        )
    });
    // `view`: the read view asked for (`copy`, or `auto`: in place where the kernel allows).
    let pitroom_in = |view: &str, state: &Path, args: &[&str]| {
        let mut c = Command::new(&pitroom);
        c.args(args)
            .current_dir(&repo)
            .env(pitroom_core::run::READ_VIEW_ENV, view)
            .env("PITROOM_HOME", state)
            .env("PITROOM_CONFIG", tmp.path().join("none.toml"))
            .env("PITROOM_OPENCODE_BIN", &worker)
            .env("PITROOM_FAKE_SCRIPT", &script)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let pitroom_cmd = |args: &[&str]| pitroom_in("copy", &state, args);
    let mut edit = 0;
    let mut read_rows = |view: &str, state: &Path| {
        let cold = time(&mut pitroom_in(view, state, &["read the code"]));
        let warm = median(|| run_ok(&mut pitroom_in(view, state, &["read the code"])));
        let after_edit = median(|| {
            // The primary agent edits a file between two read runs: a new tree (a recycled copy).
            edit += 1;
            std::fs::write(
                repo.join("src/mod099/file00099.rs"),
                format!("// edit {edit}\n"),
            )
            .expect("edit");
            run_ok(&mut pitroom_in(view, state, &["read the code"]))
        });
        (cold, warm, after_edit)
    };
    let (cold_read, read, read_after_edit) = read_rows("copy", &state);
    let in_place_state = tmp.path().join("state-in-place");
    let (cold_in_place, in_place, in_place_after_edit) = read_rows("auto", &in_place_state);
    let in_place_view = last_record_field(&pitroom, &in_place_state, tmp.path(), "view");
    // What reading in place adds per run: the walk that lists the secret-looking files to hide.
    let secrets_walk = median(|| secrets_walk_once(&repo));
    let write = median(|| run_ok(&mut pitroom_cmd(&["-w", "change nothing"])));
    let mut writes = 0;
    let write_one = median(|| {
        writes += 1;
        let mut run = pitroom_cmd(&["-w", "change one file"]);
        run.env("PITROOM_FAKE_SCRIPT", one_file_script(writes));
        run_ok(&mut run)
    });
    let peak_kb = last_record_peak(&pitroom, &state, tmp.path());
    let paired = Paired {
        snapshot: paired_ratio(&repo, ROUNDS, Duration::ZERO, &mut || {
            snapshot_once(&repo, tmp.path())
        }),
        read: paired_ratio(&repo, ROUNDS, worker_alone, &mut || {
            run_ok(&mut pitroom_in("auto", &in_place_state, &["read the code"]))
        }),
        write: paired_ratio(&repo, ROUNDS, worker_alone, &mut || {
            run_ok(&mut pitroom_cmd(&["-w", "change nothing"]))
        }),
        write_one: paired_ratio(&repo, ROUNDS, worker_alone, &mut || {
            writes += 1;
            let mut run = pitroom_cmd(&["-w", "change one file"]);
            run.env("PITROOM_FAKE_SCRIPT", one_file_script(writes));
            run_ok(&mut run)
        }),
    };

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let over = |d: Duration| d.saturating_sub(worker_alone);
    println!(
        "repository: {files} files, dirty (50 modified, 50 untracked); medians of {ROUNDS} runs"
    );
    println!(
        "git status --porcelain            {:8.1} ms   (baseline 1.00×)",
        ms(git_status)
    );
    row(
        "one snapshot (throwaway index)    ",
        snapshot,
        git_status,
        "",
    );
    println!(
        "no-op worker alone                {:8.1} ms",
        ms(worker_alone)
    );
    row(
        "read run overhead, warm copy      ",
        over(read),
        git_status,
        "  (PITROOM_READ_VIEW=copy)",
    );
    row(
        "read run overhead, first run      ",
        over(cold_read),
        git_status,
        "  (builds the shared read copy)",
    );
    row(
        "read run overhead, after an edit  ",
        over(read_after_edit),
        git_status,
        "  (recycles an idle copy)",
    );
    row(
        "read run in place, first run      ",
        over(cold_in_place),
        git_status,
        &format!("  (view: {})", in_place_view.as_deref().unwrap_or("?")),
    );
    row(
        "read run in place, warm           ",
        over(in_place),
        git_status,
        "",
    );
    row(
        "read run in place, after an edit  ",
        over(in_place_after_edit),
        git_status,
        "",
    );
    walk_and_write_rows(secrets_walk, over(write), over(write_one), git_status);
    match peak_kb {
        Some(kb) => println!(
            "pitroom peak memory during a run  {:8.1} MiB (supervisor VmHWM)",
            kb as f64 / 1024.0
        ),
        None => println!("pitroom peak memory during a run  n/a"),
    }
    paired.print();
    println!();
    pitroom_bench::guard::print_rows(
        &pitroom_bench::guard::guard_loop(&pitroom, &[], tmp.path()),
        &pitroom_bench::guard::version_loop(&pitroom),
    );
    if copy_files > 0 {
        pitroom_bench::isolated_copy_vs_worktree(copy_files, 7);
    }
    let small = TreeCosts {
        files,
        git_status,
        snapshot,
        read: over(in_place),
        write: over(write),
        write_one: over(write_one),
    };
    if large_files > 0 {
        let large = large_tree_rows(&pitroom, &worker, &script, large_files);
        per_file_costs(&[small, large]);
    }
}

/// One row of a table: `label` (padded to its column), the time, and its ratio to `git status`
/// on the same tree, then `note`.
/// The rows both tree sizes end with: the secret-file walk and the two write runs' overheads.
fn walk_and_write_rows(walk: Duration, write: Duration, write_one: Duration, git_status: Duration) {
    row("  of which the secret-file walk   ", walk, git_status, "");
    row(
        "write run overhead                ",
        write,
        git_status,
        "  (the worker changes nothing)",
    );
    row(
        "write run overhead, one file      ",
        write_one,
        git_status,
        "  (the worker changes one file)",
    );
}

fn row(label: &str, time: Duration, git_status: Duration, note: &str) {
    let ms = time.as_secs_f64() * 1000.0;
    let ratio = ms / (git_status.as_secs_f64() * 1000.0);
    println!("{label}{ms:8.1} ms   {ratio:5.2}× git status{note}");
}

/// A fake worker's script that writes one file (new content each `round`, so every run's
/// "after" tree differs from its "before" one and the diff is taken).
fn one_file_script(round: usize) -> String {
    serde_json::json!([
        {"write": {"path": "src/mod098/file00098.rs", "content": format!("// write {round}\n")}},
        {"text": "SUMMARY: changed src/mod098/file00098.rs"},
        {"step": {"input": 10, "output": 1}}
    ])
    .to_string()
}

/// One `git status --porcelain` in `repo`.
fn git_status_once(repo: &Path) -> Duration {
    let mut status = Command::new("git");
    status
        .args(["status", "--porcelain"])
        .current_dir(repo)
        .stdout(Stdio::null());
    run_ok(&mut status)
}

/// One snapshot of `repo` seeded from its own index, as a write run's "before" snapshot is.
fn snapshot_once(repo: &Path, scratch: &Path) -> Duration {
    let t = Instant::now();
    pitroom_git::snapshot(
        &repo.join(".git"),
        repo,
        &repo.join(".git/index"),
        &scratch.join("snap.index"),
    )
    .expect("snapshot");
    t.elapsed()
}

/// The walk a read run in place does to find the secret-looking files it hides.
fn secrets_walk_once(repo: &Path) -> Duration {
    let t = Instant::now();
    pitroom_core::secrets::secret_files_under(repo, 4096);
    t.elapsed()
}

/// The load on a shared machine changes between rows measured one after another; measured
/// round by round right after a `git status`, the ratio is to a baseline under the same load.
/// Returns the median of the rounds' ratios (`base` is subtracted first: the worker's own time).
fn paired_ratio(
    repo: &Path,
    rounds: usize,
    base: Duration,
    f: &mut dyn FnMut() -> Duration,
) -> f64 {
    let _warm = f();
    let mut ratios: Vec<f64> = (0..rounds)
        .map(|_| {
            let status = git_status_once(repo);
            f().saturating_sub(base).as_secs_f64() / status.as_secs_f64()
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios[rounds / 2]
}

/// Ratios to `git status` measured round by round (see [`paired_ratio`]).
struct Paired {
    snapshot: f64,
    read: f64,
    write: f64,
    write_one: f64,
}

impl Paired {
    fn print(&self) {
        println!(
            "paired round by round with git status (median ratio): snapshot {:.2}×, read in place warm {:.2}×, write {:.2}×, write one file {:.2}×",
            self.snapshot, self.read, self.write, self.write_one
        );
    }
}

/// What one tree's rows cost, for the per-file comparison.
struct TreeCosts {
    files: usize,
    git_status: Duration,
    snapshot: Duration,
    /// A warm read run's overhead in place.
    read: Duration,
    /// A write run's overhead, its worker changing nothing.
    write: Duration,
    /// A write run's overhead, its worker changing one file.
    write_one: Duration,
}

/// The snapshot, read and write rows on a tree of `files` (generated once, in a temporary dir
/// of its own), with fewer rounds: the growth from the small tree is the point, not the noise.
fn large_tree_rows(pitroom: &Path, worker: &Path, script: &str, files: usize) -> TreeCosts {
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    let generating = Instant::now();
    generate_repo(&repo, files, 50);
    let generated = generating.elapsed();
    let rounds = |f: &mut dyn FnMut() -> Duration| {
        let _warm = f();
        pitroom_bench::median(LARGE_ROUNDS, f)
    };
    let git_status = rounds(&mut || git_status_once(&repo));
    let snapshot = rounds(&mut || snapshot_once(&repo, tmp.path()));
    let secrets_walk = rounds(&mut || secrets_walk_once(&repo));
    let prompt = tmp.path().join("prompt.txt");
    std::fs::write(&prompt, "task").expect("prompt");
    let worker_alone = rounds(&mut || {
        let stdin = std::fs::File::open(&prompt).expect("prompt");
        run_ok(
            Command::new(worker)
                .env("PITROOM_FAKE_SCRIPT", script)
                .stdin(stdin)
                .stdout(Stdio::null())
                .current_dir(&repo),
        )
    });
    let state = tmp.path().join("state");
    let pitroom_run = |args: &[&str]| {
        let mut c = Command::new(pitroom);
        c.args(args)
            .current_dir(&repo)
            .env("PITROOM_HOME", &state)
            .env("PITROOM_CONFIG", tmp.path().join("none.toml"))
            .env("PITROOM_OPENCODE_BIN", worker)
            .env("PITROOM_FAKE_SCRIPT", script)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let cold_read = run_ok(&mut pitroom_run(&["read the code"]));
    let read = rounds(&mut || run_ok(&mut pitroom_run(&["read the code"])));
    let view = last_record_field(pitroom, &state, tmp.path(), "view");
    let write = rounds(&mut || run_ok(&mut pitroom_run(&["-w", "change nothing"])));
    let mut writes = 0;
    let write_one = rounds(&mut || {
        writes += 1;
        let mut run = pitroom_run(&["-w", "change one file"]);
        run.env("PITROOM_FAKE_SCRIPT", one_file_script(writes));
        run_ok(&mut run)
    });
    let paired = Paired {
        snapshot: paired_ratio(&repo, LARGE_ROUNDS, Duration::ZERO, &mut || {
            snapshot_once(&repo, tmp.path())
        }),
        read: paired_ratio(&repo, LARGE_ROUNDS, worker_alone, &mut || {
            run_ok(&mut pitroom_run(&["read the code"]))
        }),
        write: paired_ratio(&repo, LARGE_ROUNDS, worker_alone, &mut || {
            run_ok(&mut pitroom_run(&["-w", "change nothing"]))
        }),
        write_one: paired_ratio(&repo, LARGE_ROUNDS, worker_alone, &mut || {
            writes += 1;
            let mut run = pitroom_run(&["-w", "change one file"]);
            run.env("PITROOM_FAKE_SCRIPT", one_file_script(writes));
            run_ok(&mut run)
        }),
    };

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let over = |d: Duration| d.saturating_sub(worker_alone);
    println!();
    println!(
        "repository: {files} files, dirty (50 modified, 50 untracked); medians of {LARGE_ROUNDS} runs (generated in {:.1} s)",
        generated.as_secs_f64()
    );
    println!(
        "git status --porcelain            {:8.1} ms   (baseline 1.00×)",
        ms(git_status)
    );
    row(
        "one snapshot (throwaway index)    ",
        snapshot,
        git_status,
        "",
    );
    row(
        "read run in place, first run      ",
        over(cold_read),
        git_status,
        &format!("  (view: {})", view.as_deref().unwrap_or("?")),
    );
    row(
        "read run in place, warm           ",
        over(read),
        git_status,
        "",
    );
    walk_and_write_rows(secrets_walk, over(write), over(write_one), git_status);
    paired.print();
    TreeCosts {
        files,
        git_status,
        snapshot,
        read: over(read),
        write: over(write),
        write_one: over(write_one),
    }
}

/// Microseconds per file of each measured cost, tree by tree: flat rows grow with the tree
/// like `git status` does; a falling row has a fixed part that the larger tree spreads out.
fn per_file_costs(trees: &[TreeCosts]) {
    let us = |d: Duration, files: usize| d.as_secs_f64() * 1e6 / files as f64;
    println!();
    println!(
        "cost per file (µs)      git status   snapshot   read in place   write   write, one file"
    );
    for t in trees {
        println!(
            "{:>7} files           {:8.2}   {:8.2}   {:13.2}   {:5.2}   {:15.2}",
            t.files,
            us(t.git_status, t.files),
            us(t.snapshot, t.files),
            us(t.read, t.files),
            us(t.write, t.files),
            us(t.write_one, t.files)
        );
    }
}

fn time(cmd: &mut Command) -> Duration {
    run_ok(cmd)
}

/// The median of ROUNDS timings after one warm-up.
fn median(mut f: impl FnMut() -> Duration) -> Duration {
    let _warm = f();
    pitroom_bench::median(ROUNDS, f)
}

/// A text field of the latest run's record in `state`.
fn last_record_field(pitroom: &Path, state: &Path, tmp: &Path, field: &str) -> Option<String> {
    let out = Command::new(pitroom)
        .args(["show", "--json"])
        .env("PITROOM_HOME", state)
        .env("PITROOM_CONFIG", tmp.join("none.toml"))
        .output()
        .ok()?;
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    record[field].as_str().map(str::to_string)
}

fn last_record_peak(pitroom: &Path, state: &Path, tmp: &Path) -> Option<u64> {
    let out = Command::new(pitroom)
        .args(["show", "--json"])
        .env("PITROOM_HOME", state)
        .env("PITROOM_CONFIG", tmp.join("none.toml"))
        .output()
        .ok()?;
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    record["supervisor_peak_kb"].as_u64()
}
