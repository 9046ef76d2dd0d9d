//! `cargo run --release -p pitroom-bench --bin soak [-- RUNS]`: a soak of the run engine.
//!
//! Pushes RUNS (default 200) fake-worker runs through crews of 30. Every worker draws its fate
//! from `/dev/urandom`: most answer after a short random pause, some crash (SIGKILL of the
//! worker itself), some hang into the crew's 3 s timeout, and about half leave a background
//! process in a session of its own behind. While each crew runs, the soak stops random runs
//! (`pitroom stop`) and SIGKILLs the supervisors of others. Then it checks what Pitroom
//! promises:
//!
//! - no process of any run is left (nothing with the soak's state dir in its environment);
//! - no run shows `running` or `queued`, and every record parses;
//! - every scheduler slot is free (its `flock` can be taken);
//! - the history database holds exactly the runs in the run directories.
//!
//! Prints the figures and how long it ran; exits 1 if a check fails.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test support: a failed expectation is the test or benchmark failing, with its message"
)]

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pitroom_core::home::Home;
use pitroom_core::record::{RunRecord, RunState};
use serde_json::{json, Value};

const CREW: usize = 30;

/// The worker's fate, drawn from one random byte: 16 % crash, 12 % hang into the timeout,
/// the rest answer after up to 0.9 s; about half leave `sleep 307` behind in its own session.
const FATE: &str = r#"r=$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')
if [ $((r % 2)) -eq 0 ]; then setsid sleep 307 >/dev/null 2>&1 & fi
if [ "$r" -lt 40 ]; then kill -9 "$PPID"; sleep 5
elif [ "$r" -lt 70 ]; then sleep 30
else sleep "0.$((r % 10))"; fi"#;

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let (pitroom, worker) = pitroom_bench::release_binaries();
    let tmp = tempfile::tempdir().expect("temp dir");
    let soak = Soak {
        pitroom,
        worker,
        state: tmp.path().join("state"),
        work: tmp.path().join("work"),
    };
    std::fs::create_dir_all(&soak.work).expect("work dir");
    let started = Instant::now();
    let mut rng = Rng(0x005e_ed0f_50a6);
    let mut interventions = BTreeMap::new();
    let mut launched = 0;
    let mut crew_no = 0;
    while launched < runs {
        let size = CREW.min(runs - launched);
        let ids = soak.crew(crew_no, size);
        launched += ids.len();
        soak.disturb(&ids, &mut rng, &mut interventions);
        soak.wait(crew_no);
        crew_no += 1;
    }
    let ran = started.elapsed();
    let settle = Instant::now();
    let left = soak.leftovers_after(Duration::from_secs(10));
    let settled_in = settle.elapsed();
    let report = soak.check(left);
    println!(
        "soak: {launched} runs in {crew_no} crews of up to {CREW}, {:.1} s (+{:.2} s until no process was left)",
        ran.as_secs_f64(),
        settled_in.as_secs_f64()
    );
    println!(
        "  interventions: {} stopped, {} supervisors SIGKILLed",
        interventions.get("stopped").unwrap_or(&0),
        interventions.get("killed").unwrap_or(&0)
    );
    println!("  final states: {}", report.states_line());
    for (check, failures) in &report.checks {
        let verdict = if failures.is_empty() {
            "ok".to_string()
        } else {
            format!("FAILED: {}", failures.join("; "))
        };
        println!("  {check}: {verdict}");
    }
    if report.checks.iter().any(|(_, f)| !f.is_empty()) {
        std::process::exit(1);
    }
}

struct Soak {
    pitroom: PathBuf,
    worker: PathBuf,
    state: PathBuf,
    work: PathBuf,
}

impl Soak {
    fn cmd(&self) -> Command {
        let script = json!([
            {"sh": FATE},
            {"text": "SUMMARY: survived"},
            {"step": {"input": 10, "output": 2, "reason": "stop"}}
        ]);
        let mut c = Command::new(&self.pitroom);
        c.current_dir(&self.work)
            .env("PITROOM_HOME", &self.state)
            .env("PITROOM_OPENCODE_BIN", &self.worker)
            .env("PITROOM_FAKE_SCRIPT", script.to_string())
            .env("PITROOM_MAX_PARALLEL", CREW.to_string())
            .env_remove("PITROOM_ACTIVE")
            .stdin(Stdio::null());
        c
    }

    fn crew(&self, no: usize, size: usize) -> Vec<String> {
        let tasks: Vec<String> = (0..size).map(|i| format!("soak task {no}.{i}")).collect();
        let out = self
            .cmd()
            .args([
                "crew",
                "-g",
                &format!("soak{no}"),
                "-t",
                "3s",
                "--no-fallback",
            ])
            .args(&tasks)
            .stderr(Stdio::inherit())
            .output()
            .expect("crew starts");
        assert!(out.status.success(), "crew {no} failed to start");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Stops about one run in ten and SIGKILLs the supervisor of about one in ten, each at a
    /// random moment of the crew's first two seconds.
    fn disturb(&self, ids: &[String], rng: &mut Rng, done: &mut BTreeMap<&'static str, usize>) {
        let mut plan: Vec<(u64, &String, &'static str)> = ids
            .iter()
            .filter_map(|id| match rng.below(10) {
                0 => Some((rng.below(2000), id, "stopped")),
                1 => Some((rng.below(2000), id, "killed")),
                _ => None,
            })
            .collect();
        plan.sort();
        let t0 = Instant::now();
        for (at_ms, id, what) in plan {
            let at = Duration::from_millis(at_ms);
            if let Some(rest) = at.checked_sub(t0.elapsed()) {
                std::thread::sleep(rest);
            }
            let acted = match what {
                "stopped" => self
                    .cmd()
                    .args(["stop", id])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success()),
                _ => self.kill_supervisor(id),
            };
            if acted {
                *done.entry(what).or_default() += 1;
            }
        }
    }

    fn kill_supervisor(&self, id: &str) -> bool {
        let record = self.show(id);
        match record["pid"].as_i64() {
            Some(pid) if record["state"] == "running" || record["state"] == "queued" => {
                Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status()
                    .is_ok_and(|s| s.success())
            }
            _ => false,
        }
    }

    fn show(&self, id: &str) -> Value {
        let out = self
            .cmd()
            .args(["show", id, "--json"])
            .output()
            .expect("show runs");
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    fn wait(&self, no: usize) {
        // Exit codes say how runs ended (some fail on purpose); only the wait itself matters.
        let _ = self
            .cmd()
            .args([
                "wait",
                "-g",
                &format!("soak{no}"),
                "--brief",
                "--timeout",
                "120",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("wait runs");
    }

    /// The pids still carrying the state dir in their environment once `limit` has passed or
    /// none is left.
    fn leftovers_after(&self, limit: Duration) -> Vec<i32> {
        let needle = self.state.display().to_string();
        let deadline = Instant::now() + limit;
        loop {
            let left = processes_with_env(&needle);
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn check(&self, left: Vec<i32>) -> Report {
        let mut report = Report::default();
        report.checks.push((
            "no process of any run left",
            left.iter()
                .map(|pid| format!("pid {pid} {}", cmdline(*pid)))
                .collect(),
        ));
        // `ls` marks runs whose supervisor is gone as failed, as every reader does.
        let _ = self.cmd().args(["ls", "-n", "1000"]).output();
        let home = Home {
            root: self.state.clone(),
        };
        let mut bad_records = Vec::new();
        let mut unfinished = Vec::new();
        let mut dirs = HashSet::new();
        for entry in std::fs::read_dir(home.runs()).expect("runs dir").flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(entry.path().join("record.json"));
            match text.map(|t| serde_json::from_str::<RunRecord>(&t)) {
                Ok(Ok(record)) => {
                    *report
                        .states
                        .entry(format!("{:?}", record.state))
                        .or_default() += 1;
                    if matches!(record.state, RunState::Running | RunState::Queued) {
                        unfinished.push(id.clone());
                    }
                }
                Ok(Err(e)) => bad_records.push(format!("{id}: {e}")),
                Err(e) => bad_records.push(format!("{id}: {e}")),
            }
            dirs.insert(id);
        }
        report.checks.push(("every record parses", bad_records));
        report.checks.push(("no run running or queued", unfinished));
        report
            .checks
            .push(("every slot free", self.busy_slots(&home)));
        report.checks.push((
            "history database matches the run dirs",
            self.history_mismatch(&home, &dirs),
        ));
        report
    }

    fn busy_slots(&self, home: &Home) -> Vec<String> {
        let slots = home.root.join("slots");
        std::fs::read_dir(&slots)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                // `flock -n` fails while another process holds the slot.
                !Command::new("flock")
                    .args(["-n", "-E", "75"])
                    .arg(e.path())
                    .arg("true")
                    .status()
                    .is_ok_and(|s| s.success())
            })
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }

    fn history_mismatch(&self, home: &Home, dirs: &HashSet<String>) -> Vec<String> {
        // Reading the history brings the database up to date with the run dirs, as any
        // `history` command does; then the two must hold the same runs.
        let _ = self.cmd().args(["history", "-n", "1"]).output();
        let store = match pitroom_store::Store::open(&pitroom_store::db_path(home)) {
            Ok(store) => store,
            Err(e) => return vec![format!("cannot open the database: {e}")],
        };
        let ids = match store.ids() {
            Ok(ids) => ids,
            Err(e) => return vec![format!("cannot read the database: {e}")],
        };
        let mut mismatch: Vec<String> = dirs
            .difference(&ids)
            .map(|id| format!("{id} has a dir but no row"))
            .chain(
                ids.difference(dirs)
                    .map(|id| format!("{id} has a row but no dir")),
            )
            .collect();
        mismatch.sort();
        mismatch
    }
}

#[derive(Default)]
struct Report {
    states: BTreeMap<String, usize>,
    checks: Vec<(&'static str, Vec<String>)>,
}

impl Report {
    fn states_line(&self) -> String {
        self.states
            .iter()
            .map(|(state, n)| format!("{n} {}", state.to_lowercase()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A small deterministic generator (xorshift), so every soak disturbs the same way.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

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
                .is_ok_and(|env| String::from_utf8_lossy(&env).contains(needle))
        })
        .filter(|pid| !is_zombie(*pid))
        .collect()
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|i| stat.get(i + 2..i + 3))
            .is_some_and(|state| state == "Z")
    })
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .unwrap_or_default()
}
