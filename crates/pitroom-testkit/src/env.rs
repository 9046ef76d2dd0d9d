//! A hermetic environment for running the `pitroom` binary in tests: its own state dir, home,
//! XDG dirs (config, data, state, cache), `TMPDIR`, git config and `PATH` (links to a fixed list
//! of programs), so no test sees the developer's settings or tools or leaves anything behind;
//! and a fixed clock and run-id seed, so ids, times, reports and `--json` are the same on every
//! run (the snapshot tests rely on it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The variable that fixes Pitroom's stamping clock (`pitroom_core::clock::TIMESTAMP_ENV`; the
/// test kit depends on no crate of the engine, and the `pitroom` suite checks the two names
/// agree).
pub const TIMESTAMP_VAR: &str = "PITROOM_TIMESTAMP";

/// The variable that seeds a run id's salt (`pitroom_core::clock::RANDOMNESS_SEED_ENV`).
pub const RANDOMNESS_SEED_VAR: &str = "PITROOM_RANDOMNESS_SEED";

/// The time every command of a [`TestEnv`] stamps its records and ids with.
pub const FIXED_TIMESTAMP: &str = "2026-01-02T03:04:05Z";

/// The run-id seed every command of a [`TestEnv`] gets.
pub const RANDOMNESS_SEED: &str = "0";

/// The programs a test's commands find on `PATH`, and nothing else: the shell and the tools
/// scripts and workers call (git, coreutils, text tools, process tools), the interpreters the
/// worker CLIs and MCP clients run on (node, npm, python3), and the programs the attack tests
/// try (`su`, `sudo`, `mount`, `mknod`…), so an attack fails on the sandbox, not for want of
/// its program. Each is found once on the developer's `PATH`; one that is not installed is left
/// out. A test that needs more sets `PATH` itself.
#[rustfmt::skip]
pub const PATH_TOOLS: &[&str] = &[
    // Shells and the environment.
    "sh", "bash", "dash", "env", "printenv",
    // Version control.
    "git",
    // Files.
    "cat", "ls", "cp", "mv", "rm", "mkdir", "rmdir", "touch", "chmod", "chown", "ln", "readlink",
    "realpath", "dirname", "basename", "stat", "du", "df", "mktemp", "find", "tee", "install",
    "truncate", "dd", "sync", "mknod", "mkfifo", "tar", "gzip",
    // Text.
    "echo", "printf", "head", "tail", "wc", "sort", "uniq", "tr", "cut", "paste", "sed", "grep",
    "egrep", "awk", "xargs", "diff", "cmp", "od", "base64", "sha256sum", "md5sum", "seq", "yes",
    "expr", "rg", "jq",
    // Processes and the system.
    "sleep", "true", "false", "test", "[", "date", "id", "whoami", "kill", "ps", "pgrep", "pkill",
    "pwd", "timeout", "setsid", "nohup", "nice", "flock", "nproc", "uname", "hostname", "tty",
    "mount", "umount", "unshare", "su", "sudo", "script", "tmux", "ssh",
    // Interpreters.
    "node", "npm", "npx", "python3",
];

/// Where each of [`PATH_TOOLS`] is on the developer's `PATH`, looked up once per test process.
fn found_tools() -> &'static [(&'static str, PathBuf)] {
    static FOUND: OnceLock<Vec<(&'static str, PathBuf)>> = OnceLock::new();
    FOUND.get_or_init(|| {
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
        let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
        PATH_TOOLS
            .iter()
            .filter_map(|&tool| {
                let found: Vec<PathBuf> = dirs
                    .iter()
                    .map(|dir| dir.join(tool))
                    .filter(|at| mode_of(at).is_some_and(|m| m & 0o111 != 0))
                    .collect();
                // The first copy every user can run: the unprivileged tests run their commands
                // as `nobody`, who cannot reach (say) a shim under root's home that comes first
                // on root's PATH.
                let at = found
                    .iter()
                    .find(|at| runs_for_anyone(at))
                    .or(found.first())?;
                Some((tool, at.clone()))
            })
            .collect()
    })
}

/// The permission bits of the file `path` leads to.
fn mode_of(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| meta.permissions().mode())
}

/// Whether any user may run `path`: executable by others, in directories all searchable by
/// others.
fn runs_for_anyone(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let searchable =
        |dir: &Path| std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 != 0);
    mode_of(path).is_some_and(|m| m & 0o001 != 0) && path.ancestors().skip(1).all(searchable)
}

/// A temporary world for one test.
pub struct TestEnv {
    _root: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub state: PathBuf,
    pub bin: PathBuf,
    extra: Vec<(String, String)>,
    /// Variables removed from every command (after the defaults are set).
    removed: Vec<String>,
    fixed_clock: bool,
    /// Every command runs as this uid and gid (an ordinary user) when set.
    user: Option<u32>,
}

/// The ordinary user the unprivileged variants of the safety tests run as: `nobody`.
pub const UNPRIVILEGED_UID: u32 = 65534;

impl TestEnv {
    /// A new environment for the `pitroom` executable at `bin`.
    pub fn new(bin: &Path) -> TestEnv {
        let root = tempfile::Builder::new()
            .prefix("pitroom-test-")
            .tempdir()
            .expect("temp dir");
        let base = root.path().to_path_buf();
        let home = base.join("home");
        let state = base.join("state");
        for d in [
            &home,
            &state,
            &base.join("xdg-config"),
            &base.join("xdg-data"),
            &base.join("xdg-state"),
            &base.join("xdg-cache"),
            &base.join("tmp"),
            &base.join("path"),
        ] {
            std::fs::create_dir_all(d).expect("test dirs");
        }
        for (tool, at) in found_tools() {
            std::os::unix::fs::symlink(at, base.join("path").join(tool)).expect("link a tool");
        }
        let gitconfig = base.join("gitconfig");
        std::fs::write(
            &gitconfig,
            "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
        )
        .expect("gitconfig");
        TestEnv {
            _root: root,
            root: base,
            home,
            state,
            bin: bin.to_path_buf(),
            extra: Vec::new(),
            removed: Vec::new(),
            fixed_clock: true,
            user: None,
        }
    }

    /// Sets a variable for every command this environment builds.
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        self.extra.retain(|(k, _)| k != key);
        self.extra.push((key.to_string(), value.into()));
    }

    /// Removes a variable (one of the defaults, e.g. `GIT_CONFIG_GLOBAL`) from every command.
    pub fn unset(&mut self, key: &str) {
        self.extra.retain(|(k, _)| k != key);
        self.removed.push(key.to_string());
    }

    /// Lets commands stamp records and ids with the wall clock and a random salt, for a test
    /// that compares stamps with real time (how long a run lived, what a `--since` window of
    /// records made elsewhere holds).
    pub fn real_clock(&mut self) {
        self.fixed_clock = false;
    }

    /// Runs every command of this environment (pitroom, git, anything [`TestEnv::apply`]
    /// touches) as the ordinary user [`UNPRIVILEGED_UID`], with the environment's files handed
    /// to that user before each command: the safety floor must hold for the usual user, not
    /// only for root. Only root can do this; `bin` and the executables it needs beside it (the
    /// guard, the fake worker) must be reachable by that user ([`reachable_by_others`]).
    pub fn run_unprivileged(&mut self, bin: PathBuf) {
        assert!(
            effective_uid() == 0,
            "only root can run a test's commands as another user"
        );
        self.bin = bin;
        self.user = Some(UNPRIVILEGED_UID);
    }

    /// The uid commands run as when [`TestEnv::run_unprivileged`] was called.
    pub fn user(&self) -> Option<u32> {
        self.user
    }

    /// A command for `pitroom ARGS` in `dir`, with a clean environment.
    pub fn pitroom(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args).current_dir(dir);
        self.apply(&mut cmd);
        cmd
    }

    /// The `PATH` every command of this environment gets: one directory of links to
    /// [`PATH_TOOLS`] (a test that needs more prepends its own directory to this).
    pub fn path(&self) -> PathBuf {
        self.root.join("path")
    }

    /// Applies the hermetic environment to any command (git, a fake server…).
    pub fn apply(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", self.path())
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.root.join("xdg-config"))
            .env("XDG_DATA_HOME", self.root.join("xdg-data"))
            .env("XDG_STATE_HOME", self.root.join("xdg-state"))
            .env("XDG_CACHE_HOME", self.root.join("xdg-cache"))
            .env("TMPDIR", self.root.join("tmp"))
            .env("PITROOM_HOME", &self.state)
            .env("PITROOM_CONFIG", self.root.join("pitroom.toml"))
            .env("GIT_CONFIG_GLOBAL", self.root.join("gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .env("LANG", "C.UTF-8");
        // The portable pass (`.ci/portable`) sets PITROOM_PORTABLE for the whole test binary:
        // every command a test starts runs portable too (a test's own `set`/`remove` still wins).
        if let Some(portable) = std::env::var_os("PITROOM_PORTABLE") {
            cmd.env("PITROOM_PORTABLE", portable);
        }
        if self.fixed_clock {
            cmd.env(TIMESTAMP_VAR, FIXED_TIMESTAMP)
                .env(RANDOMNESS_SEED_VAR, RANDOMNESS_SEED);
        }
        for (k, v) in &self.extra {
            cmd.env(k, v);
        }
        for k in &self.removed {
            cmd.env_remove(k);
        }
        if let Some(uid) = self.user {
            use std::os::unix::process::CommandExt;
            // Files the test made since the last command (as root) become the user's too.
            hand_over(&self.root, uid);
            cmd.uid(uid).gid(uid);
        }
    }

    /// Runs `pitroom ARGS` in `dir` and returns its output.
    pub fn run(&self, dir: &Path, args: &[&str]) -> Output {
        self.pitroom(dir, args).output().expect("pitroom runs")
    }

    /// Runs `pitroom ARGS` in `dir` and asserts it exits with `code`; returns its output.
    #[track_caller]
    pub fn run_expecting(&self, dir: &Path, args: &[&str], code: i32) -> Output {
        let out = self.run(dir, args);
        assert_exit(&out, code);
        out
    }

    /// Runs `pitroom ARGS` in `dir`, asserts it succeeds and returns its stdout as JSON.
    #[track_caller]
    pub fn run_json(&self, dir: &Path, args: &[&str]) -> serde_json::Value {
        json_stdout(&self.run_expecting(dir, args, 0))
    }

    /// Runs git in `dir` with this environment; panics on failure.
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        cmd.args(args).current_dir(dir);
        self.apply(&mut cmd);
        let out = cmd.output().expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A fresh directory inside this environment.
    pub fn dir(&self, name: &str) -> PathBuf {
        let d = self.root.join(name);
        std::fs::create_dir_all(&d).expect("dir");
        d
    }
}

/// The effective uid of the test process.
fn effective_uid() -> u32 {
    // SAFETY: geteuid has no failure mode and touches no memory.
    unsafe { libc::geteuid() }
}

/// Gives every file beneath `root` (and `root`) to `uid`, links themselves not followed.
fn hand_over(root: &Path, uid: u32) {
    std::os::unix::fs::lchown(root, Some(uid), Some(uid)).expect("chown the test dir");
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            hand_over(&path, uid);
        } else {
            std::os::unix::fs::lchown(&path, Some(uid), Some(uid)).expect("chown a test file");
        }
    }
}

/// The executables `files`, hard-linked (or copied) into one directory every user can reach
/// (`/tmp/pitroom-test-bin-<pid>/`), so a command run as another user can execute them even
/// when the build lies under a private home. Names are kept: a binary that looks for its
/// siblings beside itself finds them.
pub fn reachable_by_others(files: &[&Path]) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = std::env::temp_dir();
    remove_stale_bin_dirs(&tmp);
    let dir = tmp.join(format!("{BIN_DIR_PREFIX}{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("shared bin dir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    files
        .iter()
        .map(|file| {
            let name = file.file_name().expect("a file name");
            let at = dir.join(name);
            if !at.exists() && std::fs::hard_link(file, &at).is_err() {
                std::fs::copy(file, &at).expect("copy the executable");
            }
            at
        })
        .collect()
}

const BIN_DIR_PREFIX: &str = "pitroom-test-bin-";

/// Removes the shared bin dirs of test processes that are gone (their links hold whole builds).
fn remove_stale_bin_dirs(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(BIN_DIR_PREFIX) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            // Another test process may race us to it; whoever loses has nothing left to do.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Stdout of an output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stderr of an output as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code of an output; -1 when a signal ended it.
pub fn exit_code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

/// Both streams of an output, labelled: what a failed assertion shows.
pub fn transcript(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts an output's exit code, showing both streams when it is another.
#[track_caller]
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(exit_code(out), code, "{}", transcript(out));
}

/// Asserts an output's stderr contains `needle`, showing both streams when it does not.
#[track_caller]
pub fn assert_stderr_has(out: &Output, needle: &str) {
    assert_stream_has(out, "stderr", &stderr(out), needle);
}

/// Asserts an output's stdout contains `needle`, showing both streams when it does not.
#[track_caller]
pub fn assert_stdout_has(out: &Output, needle: &str) {
    assert_stream_has(out, "stdout", &stdout(out), needle);
}

/// Asserts `text`, the output's stream `name`, contains `needle`, showing both streams when it
/// does not.
#[track_caller]
fn assert_stream_has(out: &Output, name: &str, text: &str, needle: &str) {
    assert!(
        text.contains(needle),
        "{needle:?} not in {name}:\n{}",
        transcript(out)
    );
}

/// An output's stdout parsed as JSON; panics with both streams when it is not JSON.
#[track_caller]
pub fn json_stdout(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", transcript(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_find_only_the_linked_tools_and_keep_their_dirs_under_the_root() {
        let env = TestEnv::new(Path::new("/bin/true"));
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo \"$PATH|$TMPDIR|$XDG_STATE_HOME|$XDG_CACHE_HOME\"; command -v git",
        ]);
        env.apply(&mut cmd);
        let out = cmd.output().expect("the linked sh runs");
        let text = stdout(&out);
        let mut lines = text.lines();
        let root = env.root.display();
        assert_eq!(
            lines.next(),
            Some(format!("{root}/path|{root}/tmp|{root}/xdg-state|{root}/xdg-cache").as_str())
        );
        assert_eq!(lines.next(), Some(format!("{root}/path/git").as_str()));
        let linked: Vec<String> = std::fs::read_dir(env.path())
            .expect("the link dir")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert!(
            linked
                .iter()
                .all(|name| PATH_TOOLS.contains(&name.as_str())),
            "only the listed tools are linked: {linked:?}"
        );
    }
}
