//! The state directory (`$PITROOM_HOME`): one directory per run, read copies, locks, and the
//! per-backend state shared by runs. Nothing is ever written into the user's repository.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use pitroom_proc::{is_running, process_start_time};

use crate::record::{RunRecord, RunState};

#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error("no run matches `{0}`; see pitroom ls")]
    NoMatch(String),
    #[error("`{given}` matches several runs ({}); give more of the id", .candidates.join(", "))]
    Ambiguous {
        given: String,
        candidates: Vec<String>,
    },
    #[error("no runs yet; start one with: pitroom run \"task\"")]
    NoRuns,
    #[error("state directory {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl HomeError {
    /// How a command that met this error ends: naming no run, or several, is the request's
    /// fault (a usage error); a state directory that cannot be read is a set-up problem.
    pub fn exit(&self) -> crate::exit::Exit {
        use crate::exit::Exit;
        match self {
            HomeError::NoMatch(_) | HomeError::Ambiguous { .. } | HomeError::NoRuns => Exit::Usage,
            HomeError::Io { .. } => Exit::Refused,
        }
    }
}

/// The environment variable that moves the state directory.
pub const HOME_ENV: &str = pitroom_env::PITROOM_HOME;

/// How many ids [`Home::create_run_dir`] tries. Under a fixed clock every run of a state
/// directory takes one more attempt than the one before (each the next millisecond), so this
/// bounds the runs a test may start in one state directory.
const ID_ATTEMPTS: u32 = 1000;

/// The `attempt`th candidate id at `now`. Unseeded, the salt mixes the pid, the attempt and
/// the nanoseconds (the caller re-reads the clock for each attempt). Seeded, the salt is the
/// seed's and a collision moves to the next millisecond: under a fixed clock, consecutive runs
/// get distinct ids that still sort in the order they were made.
fn run_id(now: jiff::Timestamp, attempt: u32, seed: Option<u64>) -> String {
    let (when, salt) = match seed {
        None => (
            now,
            (std::process::id() + attempt * 7 + now.subsec_nanosecond() as u32) % 36,
        ),
        Some(seed) => (
            now.checked_add(jiff::SignedDuration::from_millis(i64::from(attempt)))
                .unwrap_or(now),
            (seed % 36) as u32,
        ),
    };
    let stamp = when.strftime("%Y%m%d-%H%M%S");
    let ms = when.subsec_millisecond();
    let c = std::char::from_digit(salt, 36).unwrap_or('0');
    format!("{stamp}-{ms:03}{c}")
}

/// The state directory.
#[derive(Debug, Clone)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    /// `$PITROOM_HOME`, else `$XDG_STATE_HOME/pitroom`, else `~/.local/state/pitroom`.
    pub fn locate(env: &dyn Fn(&str) -> Option<String>) -> Home {
        let root = env(HOME_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                env("XDG_STATE_HOME")
                    .filter(|v| !v.is_empty())
                    .map(|s| PathBuf::from(s).join("pitroom"))
            })
            .unwrap_or_else(|| {
                PathBuf::from(env("HOME").unwrap_or_else(|| "/tmp".into()))
                    .join(".local/state/pitroom")
            });
        Home { root }
    }

    pub fn runs(&self) -> PathBuf {
        self.root.join("runs")
    }

    pub fn run_dir(&self, id: &str) -> PathBuf {
        self.runs().join(id)
    }

    pub fn record_path(&self, id: &str) -> PathBuf {
        self.run_dir(id).join("record.json")
    }

    /// Isolated copies, one per isolate run.
    pub fn copies(&self) -> PathBuf {
        self.root.join("copies")
    }

    pub fn snapshots(&self) -> PathBuf {
        self.root.join("snapshots")
    }

    /// State a backend keeps across runs (its sessions, so `--continue` works): one dir per
    /// mode and directory. A worker may plant anything in its CLI's state (instructions,
    /// plugins, a git config, a helper binary the CLI runs), so a run only ever meets what runs
    /// of its own mode in its own directory left: a read run can plant nothing a write run
    /// executes, and a run in one project nothing a run in another executes. A follow-up keeps
    /// its parent's mode and directory, so it finds its session.
    pub fn worker_state(&self, backend: &str, mode: &str, dir: &Path) -> PathBuf {
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        self.root.join("workers").join(backend).join(format!(
            "{mode}-{:016x}",
            fnv1a(dir.as_os_str().as_encoded_bytes())
        ))
    }

    fn io(&self, path: &Path) -> impl Fn(std::io::Error) -> HomeError + '_ {
        let path = path.display().to_string();
        move |source| HomeError::Io {
            path: path.clone(),
            source,
        }
    }

    /// Creates a new run directory with an id that sorts by start time:
    /// `YYYYMMDD-HHMMSS-mmmX` (UTC, milliseconds, one random character against collisions).
    /// The time is [`crate::clock::now`] and the character comes from
    /// [`crate::clock::seed`] when one is set, so a test gets the same ids on every run.
    pub fn create_run_dir(&self) -> Result<String, HomeError> {
        self.create_run_dir_with(&crate::clock::now, crate::clock::seed())
    }

    fn create_run_dir_with(
        &self,
        clock: &dyn Fn() -> jiff::Timestamp,
        seed: Option<u64>,
    ) -> Result<String, HomeError> {
        let runs = self.runs();
        std::fs::create_dir_all(&runs).map_err(self.io(&runs))?;
        for attempt in 0..ID_ATTEMPTS {
            let id = run_id(clock(), attempt, seed);
            match std::fs::create_dir(runs.join(&id)) {
                Ok(()) => return Ok(id),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(self.io(&runs)(e)),
            }
        }
        Err(self.io(&runs)(std::io::Error::other(
            "could not create a unique run id",
        )))
    }

    /// Where group membership is indexed: one file per group, one run id per line.
    pub fn groups(&self) -> PathBuf {
        self.root.join("groups")
    }

    /// Adds a run to a group's index (an append of one short line, atomic under `O_APPEND`).
    pub fn join_group(&self, group: &str, id: &str) -> Result<(), HomeError> {
        use std::io::Write;
        let dir = self.groups();
        std::fs::create_dir_all(&dir).map_err(self.io(&dir))?;
        let path = dir.join(group);
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(self.io(&path))?;
        file.write_all(format!("{id}\n").as_bytes())
            .map_err(self.io(&path))
    }

    /// The runs of a group, oldest first; empty when the group does not exist.
    pub fn group_ids(&self, group: &str) -> Vec<String> {
        let text = std::fs::read_to_string(self.groups().join(group)).unwrap_or_default();
        let mut ids: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && self.record_path(l).is_file())
            .map(str::to_string)
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Every run id, oldest first.
    pub fn run_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(self.runs())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().join("record.json").is_file())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        ids.sort();
        ids
    }

    /// Resolves a run reference: an id, a unique prefix, `last`, or nothing (the latest run).
    pub fn resolve(&self, given: Option<&str>) -> Result<String, HomeError> {
        let ids = self.run_ids();
        match given {
            None | Some("last") => ids.last().cloned().ok_or(HomeError::NoRuns),
            Some(g) => {
                if ids.iter().any(|i| i == g) {
                    return Ok(g.to_string());
                }
                let matches: Vec<String> =
                    ids.iter().filter(|i| i.starts_with(g)).cloned().collect();
                match matches.len() {
                    0 => Err(HomeError::NoMatch(g.to_string())),
                    1 => Ok(matches[0].clone()),
                    _ => Err(HomeError::Ambiguous {
                        given: g.to_string(),
                        candidates: matches,
                    }),
                }
            }
        }
    }

    pub fn load(&self, id: &str) -> Result<RunRecord, HomeError> {
        let path = self.record_path(id);
        RunRecord::read(&path).map_err(self.io(&path))
    }

    /// Loads a record and settles a run whose supervisor died: an active record whose process
    /// is gone is re-read once (it may just have finished), then marked failed.
    pub fn load_settled(&self, id: &str) -> Result<RunRecord, HomeError> {
        let record = self.load(id)?;
        if !record.state.is_active() || supervisor_alive(self, &record) {
            return Ok(record);
        }
        let mut record = self.load(id)?;
        if record.state.is_active() && !supervisor_alive(self, &record) {
            record.state = RunState::Failed;
            let mut error =
                "the supervising pitroom process exited unexpectedly; the run did not finish"
                    .to_string();
            let swept = self.sweep_orphans_of(id);
            if swept > 0 {
                error.push_str(&format!(
                    "; {swept} worker process(es) it left were ended now"
                ));
            }
            record.error = Some(error);
            record.ended_at = Some(crate::clock::now());
            let path = self.record_path(id);
            record.write(&path).map_err(self.io(&path))?;
        }
        Ok(record)
    }
}

impl Home {
    /// Where only the keeper's sweep held a run's worker tree (no PID namespace) and its
    /// supervisor and keeper died together, the tree's processes live on, marked: ends them by
    /// the mark the keeper recorded. Returns how many it ended.
    fn sweep_orphans_of(&self, id: &str) -> usize {
        let report = self.run_dir(id).join("containment.json");
        pitroom_proc::ContainmentReport::read(&report)
            .and_then(|r| r.tree_mark)
            .map_or(0, |mark| pitroom_proc::sweep_marked_orphans(&mark))
    }
}

/// Checks a group name: it names a file in the state dir, so letters, digits, `.`, `_`, `-`.
pub fn check_group_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "group name `{name}`: use up to 64 letters, digits, `.`, `_` or `-` (not starting with `.`)"
        ))
    }
}

/// Bytes available to an unprivileged user. The counts are `u64` on Linux and narrower on
/// macOS: widened, never truncated.
#[allow(clippy::useless_conversion)]
fn free_bytes(s: &nix::sys::statvfs::Statvfs) -> u64 {
    u64::from(s.blocks_available()).saturating_mul(u64::from(s.fragment_size()))
}

/// One line for a failed write of Pitroom's state: the path, the error, the space left on that
/// file system, and what to do.
pub fn storage_problem(path: &Path, error: &std::io::Error) -> String {
    let free = path
        .ancestors()
        .find_map(|dir| nix::sys::statvfs::statvfs(dir).ok())
        .map(|s| free_bytes(&s));
    let space = match free {
        Some(bytes) => format!("{} free there", human_bytes(bytes)),
        None => "free space unknown".into(),
    };
    format!(
        "could not write {}: {error} ({space}); free some space or point {HOME_ENV} at a writable disk",
        path.display()
    )
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Whether the record's supervising process is still the live process that started the run.
pub fn supervisor_alive(home: &Home, record: &RunRecord) -> bool {
    let Some(pid) = record.pid else {
        // Not yet claimed by a supervisor: a fresh queued record; give it the benefit.
        return record.state == RunState::Queued && fresh(&home.record_path(&record.id));
    };
    let pid = pid as i32;
    match (process_start_time(pid), record.pid_start) {
        (Some(now), Some(then)) => now == then && is_running(pid),
        (Some(_), None) => is_running(pid),
        (None, _) => false,
    }
}

/// Whether a record was written less than 30 s ago. A staleness check, so real time: the file's
/// modification time against the wall clock, not the record's `created_at`, which a fixed
/// clock (`PITROOM_TIMESTAMP`) would make look months old (or never old).
fn fresh(record_path: &Path) -> bool {
    let Ok(written) = std::fs::metadata(record_path).and_then(|m| m.modified()) else {
        return false;
    };
    // A record written "in the future" (the wall clock stepped back) is as fresh as one just
    // written.
    std::time::SystemTime::now()
        .duration_since(written)
        .map_or(true, |age| age < std::time::Duration::from_secs(30))
}

/// The per-repository writer lock: an `flock` the kernel releases when its holder dies, so a
/// crash never leaves a stale lock.
pub struct WriterLock {
    _file: File,
}

impl WriterLock {
    /// Takes the lock for `repo` without waiting; `Ok(None)` when another run holds it.
    pub fn try_acquire(home: &Home, repo: &Path) -> std::io::Result<Option<WriterLock>> {
        let dir = home.root.join("locks");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!(
            "write-{:016x}.lock",
            fnv1a(repo.as_os_str().as_encoded_bytes())
        ));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        // SAFETY: flock on a descriptor we own; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(Some(WriterLock { _file: file }));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(err)
        }
    }
}

/// FNV-1a: a stable hash for lock file names (stable across builds, unlike `DefaultHasher`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl WriterLock {
    /// Adopts a lock descriptor handed down by the process that took the lock.
    ///
    /// # Safety
    /// `fd` must be an open descriptor holding the lock, owned by nobody else in this process.
    pub unsafe fn from_raw_fd(fd: std::os::fd::RawFd) -> WriterLock {
        use std::os::fd::FromRawFd;
        // Keep it from leaking into the worker's processes.
        libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        WriterLock {
            _file: File::from_raw_fd(fd),
        }
    }
}

impl std::os::fd::AsRawFd for WriterLock {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self._file.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> (tempfile::TempDir, Home) {
        let d = tempfile::tempdir().unwrap();
        let h = Home {
            root: d.path().to_path_buf(),
        };
        (d, h)
    }

    fn add(h: &Home, id: &str) {
        std::fs::create_dir_all(h.run_dir(id)).unwrap();
        std::fs::write(h.record_path(id), "{}").unwrap();
    }

    #[test]
    fn run_ids_sort_by_creation_time() {
        let (_d, h) = home();
        let a = h.create_run_dir().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3));
        let b = h.create_run_dir().unwrap();
        assert!(a < b, "{a} < {b}");
        assert_eq!(a.len(), "20260930-003902-327a".len());
    }

    fn fixed() -> jiff::Timestamp {
        "2026-01-02T03:04:05Z".parse().unwrap()
    }

    #[test]
    fn a_seed_under_a_fixed_clock_gives_the_same_ids_every_time() {
        let made = || {
            let (_d, h) = home();
            (0..3)
                .map(|_| h.create_run_dir_with(&fixed, Some(7)).unwrap())
                .collect::<Vec<_>>()
        };
        let first = made();
        assert_eq!(
            first,
            [
                "20260102-030405-0007",
                "20260102-030405-0017",
                "20260102-030405-0027"
            ]
        );
        assert_eq!(made(), first);
    }

    #[test]
    fn runs_colliding_on_a_fixed_stamp_stay_distinct_and_the_newest_is_last() {
        let (_d, h) = home();
        let ids: Vec<String> = (0..40)
            .map(|_| {
                let id = h.create_run_dir_with(&fixed, Some(0)).unwrap();
                std::fs::write(h.record_path(&id), "{}").unwrap();
                id
            })
            .collect();
        assert_eq!(h.run_ids(), ids, "made in order, listed in order");
        assert_eq!(h.resolve(Some("last")).unwrap(), ids[39]);
        assert_eq!(h.resolve(None).unwrap(), ids[39]);
    }

    #[test]
    fn a_record_no_supervisor_claimed_is_fresh_by_real_time_whatever_its_stamp() {
        let (_d, h) = home();
        add(&h, "20260101-000000-0001");
        // Stamped years ago (as a fixed clock may stamp it), written just now.
        let spec = crate::record::RunSpec::new("t", pitroom_workers::Mode::Read, "opencode", "/");
        let record = RunRecord::new(
            "20260101-000000-0001".into(),
            spec,
            "2020-01-01T00:00:00Z".parse().expect("a stamp"),
        );
        assert_eq!(record.state, RunState::Queued);
        assert!(supervisor_alive(&h, &record), "just written: still fresh");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(h.record_path(&record.id))
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert!(
            !supervisor_alive(&h, &record),
            "written a minute ago: stale"
        );
    }

    #[test]
    fn resolve_accepts_ids_prefixes_and_last() {
        let (_d, h) = home();
        add(&h, "20260101-000000-0001");
        add(&h, "20260102-000000-0001");
        add(&h, "20260102-000001-0001");
        assert_eq!(h.resolve(None).unwrap(), "20260102-000001-0001");
        assert_eq!(h.resolve(Some("last")).unwrap(), "20260102-000001-0001");
        assert_eq!(h.resolve(Some("20260101")).unwrap(), "20260101-000000-0001");
        assert!(matches!(
            h.resolve(Some("20260102")),
            Err(HomeError::Ambiguous { .. })
        ));
        assert!(matches!(
            h.resolve(Some("1999")),
            Err(HomeError::NoMatch(_))
        ));
    }

    #[test]
    fn no_runs_is_its_own_error() {
        let (_d, h) = home();
        assert!(matches!(h.resolve(None), Err(HomeError::NoRuns)));
    }

    #[test]
    fn writer_lock_is_exclusive_and_freed_on_drop() {
        let (_d, h) = home();
        let repo = Path::new("/some/repo");
        let first = WriterLock::try_acquire(&h, repo).unwrap();
        assert!(first.is_some());
        // flock locks are per open file description: a second open in-process conflicts.
        assert!(WriterLock::try_acquire(&h, repo).unwrap().is_none());
        drop(first);
        assert!(WriterLock::try_acquire(&h, repo).unwrap().is_some());
        assert!(WriterLock::try_acquire(&h, Path::new("/other"))
            .unwrap()
            .is_some());
    }

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn a_storage_problem_names_the_path_the_error_the_free_space_and_the_way_out() {
        let (_d, h) = home();
        let path = h.record_path("r1");
        let error = std::io::Error::from_raw_os_error(libc_enospc());
        let line = storage_problem(&path, &error);
        assert!(
            line.starts_with(&format!("could not write {}: ", path.display())),
            "{line}"
        );
        assert!(line.contains("No space left on device"), "{line}");
        assert!(line.contains(" free there)"), "{line}");
        assert!(
            line.ends_with(&format!("point {HOME_ENV} at a writable disk")),
            "{line}"
        );
        assert!(!line.contains('\n'), "one line: {line}");
    }

    fn libc_enospc() -> i32 {
        nix::errno::Errno::ENOSPC as i32
    }

    #[test]
    fn byte_counts_read_in_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 * 1024 * 1024 * 1024), "5.0 GiB");
    }
}
