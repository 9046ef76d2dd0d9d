//! Running git with the user's output- and program-changing config neutralised.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A failed git call, with what git said.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("could not run git: {0}; is git installed and on PATH?")]
    Spawn(#[source] std::io::Error),
    #[error("`git {args}` failed (exit {code}): {stderr}")]
    Failed {
        args: String,
        code: i32,
        stderr: String,
    },
    #[error("`git {args}` did not finish within {secs} s and was stopped")]
    TimedOut { args: String, secs: u64 },
    /// The process was asked to stop (a flag given to [`interrupt_when`] was set): the call's
    /// process group was killed, or the call never started.
    #[error("`{args}` was interrupted: the run was stopped")]
    Interrupted { args: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("unexpected git output: {0}")]
    Parse(String),
}

/// Config that would change git's output or make it run programs, switched off for our calls.
const NEUTRAL_CONFIG: &[&str] = &[
    "color.ui=never",
    "core.quotePath=false",
    "core.pager=cat",
    "core.fsmonitor=false",
    "core.safecrlf=false",
    "diff.external=",
    "diff.renames=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "apply.whitespace=nowarn",
    "advice.addEmbeddedRepo=false",
];

/// Inherited variables that would point our calls at another repository or index.
const SCRUBBED_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG_PARAMETERS",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
];

/// How long one git call may take before it is stopped.
const GIT_TIMEOUT: Duration = Duration::from_secs(600);

/// How often a waiting call looks at the interrupt flags: the bound on how late a stop is seen.
const INTERRUPT_POLL: Duration = Duration::from_millis(20);

/// How long a killed process group may take to be reaped before the call returns anyway.
const REAP_LIMIT: Duration = Duration::from_secs(1);

/// The flags that interrupt every git call (and every helper run through [`output_of`]) of
/// this process once any is set. Process-wide on purpose: a stop is a signal to the process,
/// and a supervisor carries out exactly one run.
static INTERRUPTS: Mutex<Vec<Arc<AtomicBool>>> = Mutex::new(Vec::new());

/// While the returned guard lives, `flag` set interrupts this process's git calls: a running
/// one has its process group killed and returns [`GitError::Interrupted`]; a new one does not
/// start.
#[must_use = "the flag stops interrupting git calls when the guard is dropped"]
pub fn interrupt_when(flag: Arc<AtomicBool>) -> Interrupting {
    flags().push(Arc::clone(&flag));
    Interrupting { flag }
}

/// Keeps a flag interrupting git calls; dropped, it no longer does (so a run's flags never
/// interrupt the next run of the same process).
#[derive(Debug)]
pub struct Interrupting {
    flag: Arc<AtomicBool>,
}

impl Drop for Interrupting {
    fn drop(&mut self) {
        flags().retain(|known| !Arc::ptr_eq(known, &self.flag));
    }
}

fn flags() -> std::sync::MutexGuard<'static, Vec<Arc<AtomicBool>>> {
    INTERRUPTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether a flag given to [`interrupt_when`] is set.
pub fn interrupted() -> bool {
    flags().iter().any(|flag| flag.load(Ordering::SeqCst))
}

/// A git invocation context: which repository, work tree and index.
#[derive(Debug, Clone, Default)]
pub struct Git {
    pub git_dir: Option<PathBuf>,
    pub work_tree: Option<PathBuf>,
    pub index: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    /// Extra environment for this call (set after the inherited variables are scrubbed).
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// Extra `-c` settings for this call, after the neutral ones.
    pub config: Vec<&'static str>,
}

impl Git {
    pub fn in_dir(dir: &Path) -> Git {
        Git {
            cwd: Some(dir.to_path_buf()),
            ..Git::default()
        }
    }

    pub fn for_repo(git_dir: &Path, work_tree: &Path) -> Git {
        Git {
            git_dir: Some(git_dir.to_path_buf()),
            work_tree: Some(work_tree.to_path_buf()),
            cwd: Some(work_tree.to_path_buf()),
            index: None,
            env: Vec::new(),
            config: Vec::new(),
        }
    }

    /// Lets this call also read the objects under `objects` (another repository's).
    pub fn with_alternate_objects(mut self, objects: &Path) -> Git {
        self.env.push((
            "GIT_ALTERNATE_OBJECT_DIRECTORIES".into(),
            objects.as_os_str().to_owned(),
        ));
        self
    }

    pub fn with_index(mut self, index: &Path) -> Git {
        self.index = Some(index.to_path_buf());
        self
    }

    fn command<I, S>(&self, args: I) -> (Command, String)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new("git");
        for setting in NEUTRAL_CONFIG.iter().chain(&self.config) {
            cmd.arg("-c").arg(setting);
        }
        if let Some(dir) = &self.git_dir {
            cmd.arg("--git-dir").arg(dir);
        }
        if let Some(tree) = &self.work_tree {
            cmd.arg("--work-tree").arg(tree);
        }
        let mut shown = Vec::new();
        for a in args {
            shown.push(a.as_ref().to_string_lossy().into_owned());
            cmd.arg(a);
        }
        for var in SCRUBBED_ENV {
            cmd.env_remove(var);
        }
        cmd.env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PAGER", "cat")
            .env("GIT_EDITOR", "true")
            .env("LC_ALL", "C");
        if let Some(index) = &self.index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        (cmd, shown.join(" "))
    }

    /// Runs git and returns its stdout; a non-zero exit is an error carrying stderr.
    pub fn run<I, S>(&self, args: I) -> Result<Vec<u8>, GitError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = self.output(args, None)?;
        if out.code == 0 {
            Ok(out.stdout)
        } else {
            Err(out.into_error())
        }
    }

    /// Runs git with `input` on stdin and returns the full outcome, whatever the exit code.
    pub fn output<I, S>(&self, args: I, input: Option<&[u8]>) -> Result<Output, GitError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let (mut cmd, shown) = self.command(args);
        output_of(&mut cmd, &format!("git {shown}"), input).map(|out| Output { args: shown, ..out })
    }
}

/// Runs a helper program (git, `cp`) in its own process group with `input` on stdin, waiting
/// for it with the interrupt flags watched: a stop, or the time limit of one call, kills the
/// whole group at once. `shown` names the call in errors.
pub fn output_of(cmd: &mut Command, shown: &str, input: Option<&[u8]>) -> Result<Output, GitError> {
    if interrupted() {
        return Err(GitError::Interrupted {
            args: shown.to_string(),
        });
    }
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let mut child = cmd.spawn().map_err(GitError::Spawn)?;
    if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
        let data = data.to_vec();
        // A helper that exits early closes its stdin: the broken pipe is its answer, not ours.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&data);
        });
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait_watched(child, shown)?;
    Ok(Output {
        args: shown.to_string(),
        code: status.code().unwrap_or(128),
        stdout: stdout.join().unwrap_or_default(),
        stderr: String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned(),
    })
}

/// Waits for `child` (the leader of its own process group) while watching the interrupt flags
/// and [`GIT_TIMEOUT`]; either kills the group and returns the matching error.
fn wait_watched(mut child: Child, shown: &str) -> Result<ExitStatus, GitError> {
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let started = Instant::now();
    loop {
        match rx.recv_timeout(INTERRUPT_POLL) {
            Ok(status) => return Ok(status?),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(GitError::Io(std::io::Error::other(format!(
                    "lost track of `{shown}`"
                ))))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let error = if interrupted() {
            GitError::Interrupted {
                args: shown.to_string(),
            }
        } else if started.elapsed() >= GIT_TIMEOUT {
            GitError::TimedOut {
                args: shown.trim_start_matches("git ").to_string(),
                secs: GIT_TIMEOUT.as_secs(),
            }
        } else {
            continue;
        };
        // The group goes at once: what a stopped call leaves half-done is thrown away anyway.
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        // Reaped by the waiting thread (bounded: a process in uninterruptible sleep may linger).
        let _ = rx.recv_timeout(REAP_LIMIT);
        return Err(error);
    }
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

/// The outcome of one git call.
#[derive(Debug)]
pub struct Output {
    pub args: String,
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Output {
    pub fn into_error(self) -> GitError {
        GitError::Failed {
            args: self.args,
            code: self.code,
            stderr: self.stderr.trim().to_string(),
        }
    }
}

/// Trims git's trailing newline from a one-line answer.
pub(crate) fn line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim_end().to_string()
}
