//! The guard loop: what the worker's `git` costs per call. N× `git rev-parse HEAD` and
//! N× `git status` on a small dirty repository, run by the real git directly and through the
//! guard's links in the same layout a worker gets (`install_links` + `guard_vars`, the
//! protected repository included): once through the small `pitroom-guard`, once through
//! `pitroom` itself (the fallback), and once through each other guard executable asked for
//! (e.g. a static relink of `pitroom-guard`). Beside it, `pitroom --version` against
//! `/bin/true`.
//!
//! Per-call figures are the median over rounds of each batch's mean; the variants take turns
//! inside every round so that a change in the machine's load hits all of them alike. Each is
//! given twice: wall time (what a worker waits for, scheduling delays included, so it grows
//! with the machine's load) and the children's CPU time, user + system (what the call costs the
//! machine; `getrusage(RUSAGE_CHILDREN)`, much steadier on a shared machine).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pitroom_core::guard_env::{guard_vars, install_links, GuardLinks};
use pitroom_core::home::Home;
use pitroom_guard::env as guard_env;

/// Calls per batch.
pub const CALLS: usize = 50;
/// Batches per variant; the median is reported.
pub const ROUNDS: usize = 11;

/// What one call of a command costs: wall time and the CPU time of its processes.
#[derive(Debug, Clone, Copy)]
pub struct PerCall {
    pub wall: Duration,
    pub cpu: Duration,
}

/// One row of the loop: per-call times of each variant of the same command.
#[derive(Debug, Clone)]
pub struct GuardRow {
    /// The git command, as a worker types it.
    pub command: &'static str,
    pub direct: PerCall,
    pub small_guard: PerCall,
    pub pitroom_guard: PerCall,
    /// Through each extra guard executable, in the order given.
    pub others: Vec<(PathBuf, PerCall)>,
}

/// `pitroom --version` beside a program that does nothing, per call.
#[derive(Debug, Clone)]
pub struct VersionRow {
    pub version: PerCall,
    pub bin_true: PerCall,
}

/// Where a git call goes: the real git by path, or `git` found on the guarded `PATH`.
struct Variant {
    program: PathBuf,
    env: Vec<(String, String)>,
}

/// The guard loop on a small dirty repository under `tmp`, for the release `pitroom` (with
/// `pitroom-guard` beside it) and the `other` guard executables.
pub fn guard_loop(pitroom: &Path, other: &[PathBuf], tmp: &Path) -> Vec<GuardRow> {
    let repo = tmp.join("guard-repo");
    crate::generate_repo(&repo, 200, 10);
    let small = guarded(
        &install_links(&home(tmp, "small"), pitroom).expect("links"),
        &repo,
    );
    assert!(
        small.link_target().ends_with(guard_env::GUARD_EXE),
        "build pitroom-guard: cargo build --release -p pitroom"
    );
    let big = guarded(&links_to(pitroom, &home(tmp, "big")), &repo);
    let others: Vec<Variant> = other
        .iter()
        .enumerate()
        .map(|(i, exe)| guarded(&links_to(exe, &home(tmp, &format!("other{i}"))), &repo))
        .collect();
    let real = small
        .env
        .iter()
        .find(|(k, _)| k == guard_env::REAL_GIT)
        .map(|(_, v)| PathBuf::from(v))
        .expect("the real git on PATH");
    let direct = Variant {
        program: real,
        env: small.env.clone(),
    };
    [
        ("git rev-parse HEAD", &["rev-parse", "HEAD"][..]),
        ("git status", &["status", "--porcelain"][..]),
    ]
    .into_iter()
    .map(|(command, args)| {
        let variants = [&direct, &small, &big].into_iter().chain(&others);
        let mut times = per_call(variants.map(|v| v.command(args, &repo)).collect()).into_iter();
        let mut next = || times.next().expect("one time per variant");
        GuardRow {
            command,
            direct: next(),
            small_guard: next(),
            pitroom_guard: next(),
            others: other.iter().map(|exe| (exe.clone(), next())).collect(),
        }
    })
    .collect()
}

/// `pitroom --version` and `/bin/true`, per call, taking turns.
pub fn version_loop(pitroom: &Path) -> VersionRow {
    let mut version = Command::new(pitroom);
    version.arg("--version");
    match per_call(vec![version, Command::new("/bin/true")])[..] {
        [version, bin_true] => VersionRow { version, bin_true },
        _ => unreachable!("one time per command"),
    }
}

/// Prints the loop's rows as the README reports them.
pub fn print_rows(rows: &[GuardRow], version: &VersionRow) {
    println!("the guard loop: {CALLS} calls per batch, median of {ROUNDS} batches, per call");
    for r in rows {
        for (what, pick) in [("wall", wall as fn(&PerCall) -> f64), ("cpu ", cpu)] {
            println!(
                "{:<20} {what} direct {:6.3} ms; pitroom-guard {:6.3} ms (+{:.3} ms); pitroom as the guard {:6.3} ms (+{:.3} ms)",
                r.command,
                pick(&r.direct),
                pick(&r.small_guard),
                pick(&r.small_guard) - pick(&r.direct),
                pick(&r.pitroom_guard),
                pick(&r.pitroom_guard) - pick(&r.direct),
            );
            for (exe, time) in &r.others {
                println!(
                    "{:<20} {what} through {}: {:6.3} ms (+{:.3} ms)",
                    "",
                    exe.display(),
                    pick(time),
                    pick(time) - pick(&r.direct)
                );
            }
        }
    }
    for (what, pick) in [("wall", wall as fn(&PerCall) -> f64), ("cpu ", cpu)] {
        println!(
            "{:<20} {what} {:6.3} ms; /bin/true {:6.3} ms (+{:.3} ms)",
            "pitroom --version",
            pick(&version.version),
            pick(&version.bin_true),
            pick(&version.version) - pick(&version.bin_true)
        );
    }
}

fn wall(c: &PerCall) -> f64 {
    c.wall.as_secs_f64() * 1000.0
}

fn cpu(c: &PerCall) -> f64 {
    c.cpu.as_secs_f64() * 1000.0
}

impl Variant {
    fn command(&self, args: &[&str], repo: &Path) -> Command {
        let mut c = Command::new(&self.program);
        c.args(args)
            .current_dir(repo)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// Where this variant's `git` link leads.
    fn link_target(&self) -> PathBuf {
        std::fs::read_link(&self.program).expect("the shim is a link")
    }
}

fn home(tmp: &Path, name: &str) -> Home {
    Home {
        root: tmp.join(format!("guard-home-{name}")),
    }
}

/// The worker's layout with every link to `exe` itself (what `install_links` does when no
/// `pitroom-guard` is beside it).
fn links_to(exe: &Path, home: &Home) -> GuardLinks {
    let links = GuardLinks {
        shim_dir: home.root.join("bin"),
        hooks_dir: home.root.join("hooks"),
        target: exe.to_path_buf(),
    };
    for dir in [&links.shim_dir, &links.hooks_dir] {
        std::fs::create_dir_all(dir).expect("link dir");
    }
    std::os::unix::fs::symlink(exe, links.shim_dir.join(guard_env::SHIM)).expect("git link");
    std::os::unix::fs::symlink(exe, links.hooks_dir.join(guard_env::HOOK)).expect("hook link");
    links
}

/// `git` through `links`, in the environment a worker guarding `repo` gets.
fn guarded(links: &GuardLinks, repo: &Path) -> Variant {
    let mut env: Vec<(String, String)> = ["PATH", "HOME", "LANG"]
        .iter()
        .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
        .collect();
    for (k, v) in guard_vars(&env, links, &[repo.join(".git")]) {
        env.retain(|(existing, _)| *existing != k);
        env.push((k, v));
    }
    Variant {
        program: links.shim_dir.join(guard_env::SHIM),
        env,
    }
}

/// The per-call cost of each command: each takes its turn at a batch of [`CALLS`] in every one
/// of [`ROUNDS`] rounds (after one warm-up call each), and the median batch counts (wall and
/// CPU medians taken apart).
fn per_call(mut commands: Vec<Command>) -> Vec<PerCall> {
    for c in commands.iter_mut() {
        c.stdout(Stdio::null());
        crate::run_ok(c);
    }
    let mut batches: Vec<Vec<PerCall>> = commands.iter().map(|_| Vec::new()).collect();
    for _ in 0..ROUNDS {
        for (c, times) in commands.iter_mut().zip(batches.iter_mut()) {
            let (t, cpu) = (Instant::now(), children_cpu());
            for _ in 0..CALLS {
                crate::run_ok(c);
            }
            times.push(PerCall {
                wall: t.elapsed() / CALLS as u32,
                cpu: children_cpu().saturating_sub(cpu) / CALLS as u32,
            });
        }
    }
    batches
        .into_iter()
        .map(|times| {
            let mut walls: Vec<Duration> = times.iter().map(|t| t.wall).collect();
            let mut cpus: Vec<Duration> = times.iter().map(|t| t.cpu).collect();
            walls.sort();
            cpus.sort();
            PerCall {
                wall: walls[ROUNDS / 2],
                cpu: cpus[ROUNDS / 2],
            }
        })
        .collect()
}

/// User + system time of every child this process has waited for so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given and keeps no pointer to it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}
