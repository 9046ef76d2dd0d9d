//! `cargo run --release -p pitroom-bench --bin stop [-- FILES ROUNDS]`: how long a stop takes in
//! each phase of a run (issue 15, item 5), on a generated repository of FILES (default 10,000)
//! files. Each round parks a background run in one phase — queued behind a run holding the only
//! slot; checking out its read copy (`PITROOM_READ_VIEW=copy`, fresh state dir); the worker (a
//! fake that hangs); `--verify` (a `sleep`); recording its changes (a `git` first on `PATH` that
//! parks in the "after" snapshot) — then times `pitroom stop` (until the record says the run
//! ended) and until no process of the state dir is left, beside `pitroom --version` in the same
//! run. Medians and maxima of ROUNDS (default 5). Prints figures; asserts nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pitroom_bench::{generate_repo, median, release_binaries, run_ok};

/// How long a run may take to reach the phase it is parked in before the bench gives up.
const PARK_LIMIT: Duration = Duration::from_secs(120);

#[derive(Clone, Copy, Debug)]
enum Phase {
    SlotWait,
    Tree,
    Worker,
    Verify,
    Finishing,
}

impl Phase {
    fn label(self) -> &'static str {
        match self {
            Phase::SlotWait => "slot wait (queued behind a run holding the only slot)",
            Phase::Tree => "tree preparation (read copy checked out, fresh state dir)",
            Phase::Worker => "worker (a fake worker that hangs)",
            Phase::Verify => "--verify (a sleep)",
            Phase::Finishing => "finishing (git parked in the after snapshot)",
        }
    }
}

struct World {
    pitroom: PathBuf,
    worker: PathBuf,
    repo: PathBuf,
    tmp: PathBuf,
    /// A directory with a `git` that parks in the "after" snapshot, for the finishing phase.
    parking_git: PathBuf,
}

impl World {
    fn command(&self, state: &Path, script: &str, extra_env: &[(&str, String)]) -> Command {
        let mut c = Command::new(&self.pitroom);
        c.current_dir(&self.repo)
            .env("PITROOM_HOME", state)
            .env("PITROOM_CONFIG", self.tmp.join("none.toml"))
            .env("PITROOM_OPENCODE_BIN", &self.worker)
            .env("PITROOM_FAKE_SCRIPT", script)
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in extra_env {
            c.env(k, v);
        }
        c
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let (pitroom, worker) = release_binaries();
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    generate_repo(&repo, files, 20);
    let world = World {
        parking_git: parking_git(tmp.path()),
        pitroom,
        worker,
        repo,
        tmp: tmp.path().to_path_buf(),
    };
    let version = median(9, || {
        run_ok(
            Command::new(&world.pitroom)
                .arg("--version")
                .stdout(Stdio::null()),
        )
    });
    println!("stop latency per phase ({files} files; medians and maxima of {rounds} rounds)");
    println!("`pitroom --version` in the same run: {:.1} ms", ms(version));
    println!("| Phase the stop lands in | `pitroom stop` returns | last process of the run gone |");
    println!("|---|---:|---:|");
    for phase in [
        Phase::SlotWait,
        Phase::Tree,
        Phase::Worker,
        Phase::Verify,
        Phase::Finishing,
    ] {
        let mut stops = Vec::new();
        let mut gones = Vec::new();
        for round in 0..rounds {
            let (stop, gone) = stop_in(&world, phase, round);
            stops.push(stop);
            gones.push(gone);
        }
        stops.sort();
        gones.sort();
        println!(
            "| {} | {:.0} ms (max {:.0}) | {:.0} ms (max {:.0}) |",
            phase.label(),
            ms(stops[rounds / 2]),
            ms(stops[rounds - 1]),
            ms(gones[rounds / 2]),
            ms(gones[rounds - 1])
        );
    }
}

/// Parks one run in `phase` on a fresh state dir, stops it, and returns how long `pitroom stop`
/// took and how long until no process of the state dir was left (both from the stop's start).
fn stop_in(world: &World, phase: Phase, round: usize) -> (Duration, Duration) {
    let state = world.tmp.join(format!("state-{phase:?}-{round}"));
    let hang = r#"[{"step": {"input": 5, "output": 1}}, {"sleep_ms": 600000}]"#;
    let quick = r#"[{"text": "SUMMARY: done"}, {"step": {"reason": "stop"}}]"#;
    let path = std::env::var("PATH").unwrap_or_default();
    let (script, args, env): (&str, Vec<String>, Vec<(&str, String)>) = match phase {
        Phase::SlotWait => (hang, vec![], vec![("PITROOM_MAX_PARALLEL", "1".into())]),
        Phase::Tree => (quick, vec![], vec![("PITROOM_READ_VIEW", "copy".into())]),
        Phase::Worker => (hang, vec![], vec![]),
        Phase::Verify => (quick, vec!["--verify".into(), "sleep 600".into()], vec![]),
        Phase::Finishing => (
            quick,
            vec!["-w".into()],
            vec![("PATH", format!("{}:{path}", world.parking_git.display()))],
        ),
    };
    let start = |task: &str| {
        let mut crew = world.command(&state, script, &env);
        crew.args(["crew", "-g", "bench"]).args(&args).arg(task);
        let out = crew.output().expect("crew");
        assert!(out.status.success(), "crew failed");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let holder = matches!(phase, Phase::SlotWait).then(|| {
        let id = start("hold the slot");
        park_until(&state, &id, |r| r["tally"]["steps"] == 1);
        id
    });
    let id = start("the run to stop");
    match phase {
        Phase::SlotWait => park_until(&state, &id, |r| r["phase"] == "queued"),
        Phase::Tree => {
            park_until(&state, &id, |r| r["phase"] == "tree");
            // Into the checkout itself: the copy's temporary directory exists.
            park_until_exists(&state.join("snapshots"), ".tmp-");
        }
        Phase::Worker => park_until(&state, &id, |r| r["tally"]["steps"] == 1),
        Phase::Verify => park_until(&state, &id, |r| r["phase"] == "verify"),
        Phase::Finishing => park_until(&state, &id, |r| r["phase"] == "finishing"),
    }
    let t = Instant::now();
    let mut stop = world.command(&state, script, &env);
    stop.args(["stop", &id]).stdout(Stdio::null());
    let stopped = stop.status().expect("stop");
    let stop_time = t.elapsed();
    assert!(stopped.success(), "stop failed in {phase:?}");
    let holder_pids: Vec<i32> = match &holder {
        Some(holder_id) => record(&state, holder_id)["pid"]
            .as_i64()
            .map(|p| vec![p as i32])
            .unwrap_or_default(),
        None => Vec::new(),
    };
    // The holder's own processes stay (it still runs): count only the stopped run's.
    let marker = state.display().to_string();
    while processes_with_env(&marker)
        .iter()
        .any(|pid| !holder_pids.contains(pid) && !descends_from(*pid, &holder_pids))
    {
        std::thread::sleep(Duration::from_millis(2));
    }
    let gone = t.elapsed();
    if let Some(holder_id) = holder {
        let mut stop = world.command(&state, script, &env);
        stop.args(["stop", &holder_id]).stdout(Stdio::null());
        run_ok(&mut stop);
    }
    let _ = std::fs::remove_dir_all(&state);
    (stop_time, gone)
}

/// A directory holding a `git` that parks (as a long `sleep`) in the "after" snapshot and runs
/// the real git otherwise.
fn parking_git(tmp: &Path) -> PathBuf {
    let real = Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .expect("git on PATH");
    let dir = tmp.join("parking-git");
    std::fs::create_dir_all(&dir).expect("dir");
    let git = dir.join("git");
    std::fs::write(
        &git,
        format!(
            "#!/bin/sh\ncase \"$GIT_INDEX_FILE\" in */after.index) exec sleep 600 ;; esac\nexec '{real}' \"$@\"\n"
        ),
    )
    .expect("fake git");
    std::fs::set_permissions(&git, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    dir
}

fn record(state: &Path, id: &str) -> serde_json::Value {
    std::fs::read(state.join("runs").join(id).join("record.json"))
        .ok()
        .and_then(|raw| serde_json::from_slice(&raw).ok())
        .unwrap_or(serde_json::Value::Null)
}

fn park_until(state: &Path, id: &str, reached: impl Fn(&serde_json::Value) -> bool) {
    let deadline = Instant::now() + PARK_LIMIT;
    while !reached(&record(state, id)) {
        assert!(Instant::now() < deadline, "run {id} never parked");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn park_until_exists(dir: &Path, prefix: &str) {
    let deadline = Instant::now() + PARK_LIMIT;
    loop {
        let found = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(prefix));
        if found {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {prefix} in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Live processes whose environment mentions `needle` (the state dir).
fn processes_with_env(needle: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|raw| String::from_utf8_lossy(&raw).contains(needle))
        })
        .filter(|pid| {
            // A zombie is gone for our purpose: it runs nothing.
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| {
                    !s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
                .unwrap_or(false)
        })
        .collect()
}

/// Whether `pid` descends from one of `roots`.
fn descends_from(pid: i32, roots: &[i32]) -> bool {
    let mut current = pid;
    for _ in 0..64 {
        let Some(parent) = std::fs::read_to_string(format!("/proc/{current}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .and_then(|rest| rest.split_whitespace().nth(1))
                    .and_then(|p| p.parse::<i32>().ok())
            })
        else {
            return false;
        };
        if roots.contains(&parent) {
            return true;
        }
        if parent <= 1 {
            return false;
        }
        current = parent;
    }
    false
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
