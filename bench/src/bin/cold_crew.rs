//! `cargo run --release -p pitroom-bench --bin cold_crew [-- FILES RUNS]`: issue 15's first row.
//! A crew of RUNS (default 20) read runs of a 2-second fake worker on a generated repository of
//! FILES (default 10,000) files with a dirty tree, on a fresh state directory (no read copy
//! yet), from `crew` to `wait -g` done — against the same RUNS fakes started in parallel by a
//! shell, the physical limit, in the same run. Prints figures; asserts nothing.

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
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let (pitroom, worker) = release_binaries();
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    generate_repo(&repo, files, 20);
    let script =
        r#"[{"sleep_ms": 2000}, {"text": "SUMMARY: done"}, {"step": {"input": 10, "output": 1}}]"#;

    let limit = {
        let t = Instant::now();
        let mut children: Vec<_> = (0..runs)
            .map(|_| {
                Command::new(&worker)
                    .env("PITROOM_FAKE_SCRIPT", script)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .current_dir(&repo)
                    .spawn()
                    .expect("fake worker starts")
            })
            .collect();
        for child in &mut children {
            child.wait().expect("fake worker ends");
        }
        t.elapsed()
    };

    let state = tmp.path().join("state");
    let pitroom_cmd = |args: &[&str]| {
        let mut c = Command::new(&pitroom);
        c.args(args)
            .current_dir(&repo)
            .env("PITROOM_HOME", &state)
            .env("PITROOM_CONFIG", tmp.path().join("none.toml"))
            .env("PITROOM_OPENCODE_BIN", &worker)
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

    println!("cold crew ({runs} read runs of a 2 s worker, {files} files, fresh state dir)");
    println!("| What | Time | vs the parallel fakes |");
    println!("|---|---:|---:|");
    println!(
        "| {runs} fakes started in parallel (the limit) | {:.2} s | 1.00× |",
        secs(limit)
    );
    println!(
        "| `crew` → `wait -g` done | {:.2} s | {:.2}× |",
        secs(crew_time),
        secs(crew_time) / secs(limit)
    );
    println!("read copies left in the state dir: {copies}");
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}
