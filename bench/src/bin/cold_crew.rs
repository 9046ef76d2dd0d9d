//! `cargo run --release -p pitroom-bench --bin cold_crew [-- FILES RUNS]`: issue 15's first row.
//! A crew of RUNS (default 20) read runs of a 2-second fake worker on a generated repository of
//! FILES (default 10,000) files with a dirty tree, on a fresh state directory (no read copy
//! yet), from `crew` to `wait -g` done — against the same RUNS fakes started in parallel by a
//! shell, the physical limit, in the same run. Prints figures; asserts nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release");
    let pitroom = target.join("pitroom");
    let worker = target.join("pitroom-fake-worker");
    if !pitroom.is_file() || !worker.is_file() {
        eprintln!("build first: cargo build --release -p pitroom -p pitroom-testkit");
        std::process::exit(2);
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    generate_repo(&repo, files);
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

fn generate_repo(repo: &Path, files: usize) {
    std::fs::create_dir_all(repo).expect("repo dir");
    run_ok(Command::new("git").args(["init", "-q"]).current_dir(repo));
    for i in 0..files {
        let dir = repo.join(format!("src/mod{:03}", i % 100));
        std::fs::create_dir_all(&dir).expect("dir");
        let body = format!("// file {i}\npub fn f{i}() -> usize {{\n    {i}\n}}\n").repeat(8);
        std::fs::write(dir.join(format!("file{i:05}.rs")), body).expect("file");
    }
    run_ok(Command::new("git").args(["add", "-A"]).current_dir(repo));
    run_ok(
        Command::new("git")
            .args([
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b",
                "commit",
                "-qm",
                "init",
            ])
            .current_dir(repo),
    );
    for i in 0..20 {
        let path = repo.join(format!("src/mod{:03}/file{:05}.rs", i % 100, i));
        std::fs::write(&path, format!("// edited {i}\n")).expect("edit");
        std::fs::write(repo.join(format!("src/untracked{i}.rs")), "// new\n").expect("new");
    }
}

fn run_ok(cmd: &mut Command) -> Duration {
    let t = Instant::now();
    let status = cmd.status().expect("command runs");
    assert!(status.success(), "{cmd:?} failed");
    t.elapsed()
}
