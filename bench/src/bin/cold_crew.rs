//! `cargo run --release -p pitroom-bench --bin cold_crew [-- FILES RUNS…]`: issue 15's first
//! rows. For each crew size RUNS (default 20 and 30): a crew of RUNS read runs of a 2-second fake
//! worker on a generated repository of FILES (default 10,000) files with a dirty tree, on a fresh
//! state directory (no read copy yet), from `crew` to `wait -g` done — against the same RUNS fakes
//! started in parallel by a shell, the physical limit, in the same run. Three times: with the
//! read view Pitroom chooses (in place where the kernel allows it), with the copy forced
//! (`PITROOM_READ_VIEW=copy`), each on its own fresh state directory, and — on the copy-forced
//! state dir, after one file of the tree changed — the same crew again (the idle copy is
//! recycled: one file rewritten, not a new checkout). Prints figures; asserts nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pitroom_bench::{generate_repo, release_binaries, run_ok};

fn main() {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let mut sizes: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![20, 30];
    }
    let (pitroom, worker) = release_binaries();
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    generate_repo(&repo, files, 20);
    for runs in sizes {
        cold_crew(&pitroom, &worker, &repo, tmp.path(), files, runs);
    }
}

/// One crew size's rows.
fn cold_crew(
    pitroom: &std::path::Path,
    worker: &std::path::Path,
    repo: &std::path::Path,
    tmp: &std::path::Path,
    files: usize,
    runs: usize,
) {
    let script =
        r#"[{"sleep_ms": 2000}, {"text": "SUMMARY: done"}, {"step": {"input": 10, "output": 1}}]"#;

    let limit = {
        let t = Instant::now();
        let mut children: Vec<_> = (0..runs)
            .map(|_| {
                Command::new(worker)
                    .env("PITROOM_FAKE_SCRIPT", script)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .current_dir(repo)
                    .spawn()
                    .expect("fake worker starts")
            })
            .collect();
        for child in &mut children {
            child.wait().expect("fake worker ends");
        }
        t.elapsed()
    };

    let crew_of = |view: &str, state_name: &str| {
        let state = tmp.join(format!("state-{runs}-{state_name}"));
        let pitroom_cmd = |args: &[&str]| {
            let mut c = Command::new(pitroom);
            c.args(args)
                .current_dir(repo)
                .env(pitroom_core::run::READ_VIEW_ENV, view)
                .env("PITROOM_HOME", &state)
                .env("PITROOM_CONFIG", tmp.join("none.toml"))
                .env("PITROOM_OPENCODE_BIN", worker)
                .env("PITROOM_FAKE_SCRIPT", script)
                .env("PITROOM_MAX_PARALLEL", "30")
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            c
        };
        let tasks: Vec<String> = (0..runs).map(|i| format!("question {i}")).collect();
        let t = Instant::now();
        let mut crew = pitroom_cmd(&["crew", "-g", "cold"]);
        crew.args(&tasks);
        run_ok(&mut crew);
        run_ok(&mut pitroom_cmd(&[
            "wait",
            "-g",
            "cold",
            "--timeout",
            "600",
        ]));
        let crew_time = t.elapsed();
        let copies = std::fs::read_dir(state.join("snapshots"))
            .map(|d| {
                d.flatten()
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .count()
            })
            .unwrap_or(0);
        let shown = pitroom_cmd(&["show", "--json"])
            .stdout(Stdio::piped())
            .output()
            .ok()
            .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
            .and_then(|r| r["view"].as_str().map(str::to_string))
            .unwrap_or_else(|| "?".into());
        (crew_time, copies, shown)
    };
    let (in_place, in_place_copies, in_place_view) = crew_of("auto", "auto");
    let (copied, copy_copies, copy_view) = crew_of("copy", "copy");
    // The user edits one file; the same crew again on the same state dir.
    let edited = repo.join("src/mod000/file00000.rs");
    std::fs::write(&edited, format!("// edited before crew {runs}\n")).expect("edit");
    let (changed, changed_copies, changed_view) = crew_of("copy", "copy");

    println!("cold crew ({runs} read runs of a 2 s worker, {files} files, fresh state dir)");
    println!("| What | Time | vs the parallel fakes |");
    println!("|---|---:|---:|");
    println!(
        "| {runs} fakes started in parallel (the limit) | {:.2} s | 1.00× |",
        secs(limit)
    );
    for (label, time, view, copies) in [
        ("read view chosen", in_place, in_place_view, in_place_copies),
        ("copy forced", copied, copy_view, copy_copies),
        (
            "copy forced, again after one file changed",
            changed,
            changed_view,
            changed_copies,
        ),
    ] {
        println!(
            "| `crew` → `wait -g` done, {label} (view: {view}; read copies left: {copies}) | {:.2} s | {:.2}× |",
            secs(time),
            secs(time) / secs(limit)
        );
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
