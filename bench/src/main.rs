//! `cargo run --release -p pitroom-bench [-- FILES]`: on a generated repository (10,000 files by
//! default) with a dirty tree, measures Pitroom's own overhead around a no-op worker and the
//! cost of one snapshot, each as a ratio to `git status` on the same tree in the same run, and
//! Pitroom's peak memory while it supervises a run. Prints medians; asserts nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::path::Path;
use std::process::{Command, Stdio};

use pitroom_bench::{generate_repo, release_binaries, run_ok};
use pitroom_git::guard::env as guard_env;
use std::time::{Duration, Instant};

const ROUNDS: usize = 9;

fn main() {
    let files: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let (pitroom, worker) = release_binaries();
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    let state = tmp.path().join("state");
    generate_repo(&repo, files, 50);

    let git_status = median(|| {
        let mut status = Command::new("git");
        status
            .args(["status", "--porcelain"])
            .current_dir(&repo)
            .stdout(Stdio::null());
        run_ok(&mut status)
    });

    let index = repo.join(".git/index");
    let snap_index = tmp.path().join("snap.index");
    let snapshot = median(|| {
        let t = Instant::now();
        pitroom_git::snapshot(&repo.join(".git"), &repo, &index, &snap_index).expect("snapshot");
        t.elapsed()
    });

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
    let secrets_walk = median(|| {
        let t = Instant::now();
        pitroom_core::secrets::secret_files_under(&repo, 4096);
        t.elapsed()
    });
    let write = median(|| run_ok(&mut pitroom_cmd(&["-w", "change nothing"])));
    let version = median(|| {
        run_ok(
            Command::new(&pitroom)
                .arg("--version")
                .stdout(Stdio::null()),
        )
    });
    let peak_kb = last_record_peak(&pitroom, &state, tmp.path());

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let ratio = |d: Duration| ms(d) / ms(git_status);
    let over = |d: Duration| d.saturating_sub(worker_alone);
    println!(
        "repository: {files} files, dirty (50 modified, 50 untracked); medians of {ROUNDS} runs"
    );
    println!(
        "git status --porcelain            {:8.1} ms   (baseline 1.00×)",
        ms(git_status)
    );
    println!(
        "one snapshot (throwaway index)    {:8.1} ms   {:5.2}× git status",
        ms(snapshot),
        ratio(snapshot)
    );
    println!(
        "no-op worker alone                {:8.1} ms",
        ms(worker_alone)
    );
    println!(
        "read run overhead, warm copy      {:8.1} ms   {:5.2}× git status  (PITROOM_READ_VIEW=copy)",
        ms(over(read)),
        ratio(over(read))
    );
    println!("read run overhead, first run      {:8.1} ms   {:5.2}× git status  (builds the shared read copy)", ms(over(cold_read)), ratio(over(cold_read)));
    println!(
        "read run overhead, after an edit  {:8.1} ms   {:5.2}× git status  (recycles an idle copy)",
        ms(over(read_after_edit)),
        ratio(over(read_after_edit))
    );
    println!(
        "read run in place, first run      {:8.1} ms   {:5.2}× git status  (view: {})",
        ms(over(cold_in_place)),
        ratio(over(cold_in_place)),
        in_place_view.as_deref().unwrap_or("?")
    );
    println!(
        "read run in place, warm           {:8.1} ms   {:5.2}× git status",
        ms(over(in_place)),
        ratio(over(in_place))
    );
    println!(
        "read run in place, after an edit  {:8.1} ms   {:5.2}× git status",
        ms(over(in_place_after_edit)),
        ratio(over(in_place_after_edit))
    );
    println!(
        "  of which the secret-file walk   {:8.1} ms   {:5.2}× git status",
        ms(secrets_walk),
        ratio(secrets_walk)
    );
    println!(
        "write run overhead                {:8.1} ms   {:5.2}× git status",
        ms(over(write)),
        ratio(over(write))
    );
    println!("pitroom --version                 {:8.1} ms", ms(version));
    match peak_kb {
        Some(kb) => println!(
            "pitroom peak memory during a run  {:8.1} MiB (supervisor VmHWM)",
            kb as f64 / 1024.0
        ),
        None => println!("pitroom peak memory during a run  n/a"),
    }
    guard_overhead(&pitroom, &repo, tmp.path());
    pitroom_bench::isolated_copy_vs_worktree(30_000, 7);
}

/// What the `git` shim adds to one git call: `git rev-parse HEAD` directly and through a link
/// named `git` to the pitroom binary, guarding the repository (medians of 51).
fn guard_overhead(pitroom: &Path, repo: &Path, tmp: &Path) {
    let shim_dir = tmp.join("shim");
    std::fs::create_dir_all(&shim_dir).expect("shim dir");
    let _ = std::os::unix::fs::symlink(pitroom, shim_dir.join("git"));
    let real = Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .expect("git on PATH");
    let time_of = |program: &Path| {
        let mut samples: Vec<Duration> = (0..51)
            .map(|_| {
                let mut c = Command::new(program);
                c.args(["rev-parse", "HEAD"])
                    .current_dir(repo)
                    .env(guard_env::REAL_GIT, &real)
                    .env(guard_env::PROTECTED, repo.join(".git"))
                    .stdout(Stdio::null());
                run_ok(&mut c)
            })
            .collect();
        samples.sort();
        samples[25]
    };
    let direct = time_of(Path::new(&real));
    let shimmed = time_of(&shim_dir.join("git"));
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "git rev-parse HEAD, direct          {:8.2} ms; through the guard {:8.2} ms (+{:.2} ms)",
        ms(direct),
        ms(shimmed),
        ms(shimmed) - ms(direct)
    );
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
