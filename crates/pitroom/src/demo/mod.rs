//! `pitroom demo`: the first run that works on a fresh machine, with no worker CLI and no model
//! key. A sample project carried in the binary is laid out in a temporary directory and walked
//! through the real pipeline — every stage runs the real `pitroom` commands as child processes,
//! with a state dir of their own — while the worker is [`worker`], this binary replaying a fixed
//! script in OpenCode's stream format.

pub mod worker;

/// `println!` that never panics: a reader that went away (`pitroom demo | head`) must not stop
/// the demo before it cleans up.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pitroom_core::home::supervisor_alive;
use pitroom_core::{exit, Home};
use serde_json::{json, Value};

use crate::cli::DemoArgs;
use crate::output;
use worker::{Action, Case, Script, Step, Tool, WriteFile};

const CALC: &str = include_str!("sample/calc.py");
const TESTS: &str = include_str!("sample/test_calc.py");
const README: &str = include_str!("sample/README.md");

/// The model name the records show: there is no model.
const MODEL: &str = "pitroom/scripted";
/// How long one child command may take before it is stopped.
const LIMIT: Duration = Duration::from_secs(60);
/// `watch` has a `--timeout 60` of its own; this bound is only the backstop.
const WATCH_LIMIT: Duration = Duration::from_secs(75);
const STAGES: usize = 5;
const WHAT: &str = "worker: scripted, not a model";

/// The user's own uncommitted edit, which no worker patch may contain.
const OWN_EDIT: &str = "\nMy notes (uncommitted): check divide() before the release.\n";

/// Set by SIGINT, SIGTERM or SIGHUP: the running command is stopped and the demo cleans up.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

pub fn demo(args: DemoArgs) -> i32 {
    let started = Instant::now();
    // SAFETY: installed at start-up; the handler only stores to an atomic (async-signal-safe).
    // Child processes start with default dispositions (the standard library resets SIGPIPE).
    unsafe {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(
                signal,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let mut demo = match Demo::set_up() {
        Ok(d) => d,
        Err(why) => {
            output::error(format!("demo: {why}"));
            return exit::REFUSED;
        }
    };
    demo.intro();
    let outcome = demo.stages();
    let code = match &outcome {
        Ok(()) => {
            what_next();
            exit::OK
        }
        Err(why) => {
            output::error(format!("demo: {why}"));
            if INTERRUPTED.load(Ordering::SeqCst) {
                130
            } else {
                1
            }
        }
    };
    if args.keep {
        demo.kept();
    } else {
        demo.clean_up();
    }
    let took = started.elapsed().as_secs_f64();
    match outcome {
        Ok(()) => say!("\npitroom demo: done in {took:.1}s"),
        Err(_) => say!("\npitroom demo: stopped after {took:.1}s"),
    }
    code
}

/// The demo's temporary world.
struct Demo {
    root: PathBuf,
    project: PathBuf,
    state: PathBuf,
    scripts: PathBuf,
    logs: PathBuf,
    config: PathBuf,
    gitconfig: PathBuf,
    worker: PathBuf,
    exe: PathBuf,
    commands: usize,
    stage: String,
}

impl Demo {
    /// Makes the temporary directories, the worker link, and the sample repository.
    fn set_up() -> Result<Demo, String> {
        let exe = std::env::current_exe().map_err(|e| {
            format!("could not find the pitroom binary itself ({e}); run it by its full path")
        })?;
        let root = fresh_dir()?;
        let demo = Demo {
            project: root.join("calc"),
            state: root.join("state"),
            scripts: root.join("scripts"),
            logs: root.join("logs"),
            config: root.join("config.toml"),
            gitconfig: root.join("gitconfig"),
            worker: root.join("bin").join(worker::WORKER_NAME),
            root,
            exe,
            commands: 0,
            stage: String::new(),
        };
        if let Err(why) = demo.lay_out() {
            if let Err(e) = std::fs::remove_dir_all(&demo.root) {
                output::warning(format!("could not remove {}: {e}", demo.root.display()));
            }
            return Err(why);
        }
        Ok(demo)
    }

    fn lay_out(&self) -> Result<(), String> {
        for dir in [&self.project, &self.state, &self.scripts, &self.logs] {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        }
        if let Some(bin) = self.worker.parent() {
            std::fs::create_dir_all(bin)
                .map_err(|e| format!("could not create {}: {e}", bin.display()))?;
        }
        std::os::unix::fs::symlink(&self.exe, &self.worker).map_err(|e| {
            format!(
                "could not link the scripted worker {} to {}: {e}",
                self.worker.display(),
                self.exe.display()
            )
        })?;
        write(
            &self.config,
            "# pitroom demo: an empty config of its own, so yours is not used.\n",
        )?;
        write(&self.gitconfig, "")?;
        write(&self.project.join("calc.py"), CALC)?;
        write(&self.project.join("test_calc.py"), TESTS)?;
        write(&self.project.join("README.md"), README)?;
        self.git(&["init", "-q"])?;
        self.git(&["add", "-A"])?;
        self.git(&["commit", "-q", "-m", "calc: the sample project"])?;
        write(
            &self.project.join("README.md"),
            &format!("{README}{OWN_EDIT}"),
        )
    }

    /// Runs git in the sample project, with no user or system config.
    fn git(&self, args: &[&str]) -> Result<(), String> {
        let mut cmd = Command::new("git");
        cmd.args([
            "-c",
            "user.name=pitroom-demo",
            "-c",
            "user.email=demo@pitroom.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(&self.project);
        self.hermetic(&mut cmd);
        let log = self.logs.join("git.log");
        let (status, text) = bounded(cmd, &log, LIMIT).map_err(|e| match e {
            Bounded::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => {
                "git was not found on PATH; the demo needs git (install it, e.g. apt install git)"
                    .to_string()
            }
            other => format!("git {}: {}", args.join(" "), other.describe()),
        })?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "git {} failed ({status}): {}",
                args.join(" "),
                text.trim()
            ))
        }
    }

    /// Keeps the user's own settings out: git's global and system config and every `GIT_*`
    /// variable (but where git's helpers live), every `PITROOM_*`.
    fn hermetic(&self, cmd: &mut Command) {
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("PITROOM_") || (k.starts_with("GIT_") && k != "GIT_EXEC_PATH") {
                cmd.env_remove(&key);
            }
        }
        cmd.env("GIT_CONFIG_GLOBAL", &self.gitconfig)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1");
    }

    /// The environment of a `pitroom` command: the demo's state dir, config and worker.
    fn env(&self, cmd: &mut Command, script: Option<&Path>) {
        self.hermetic(cmd);
        cmd.env("PITROOM_HOME", &self.state)
            .env("PITROOM_CONFIG", &self.config)
            .env("PITROOM_OPENCODE_BIN", &self.worker);
        if let Some(script) = script {
            cmd.env(worker::SCRIPT_ENV, script);
        }
    }

    fn intro(&self) {
        let name = worker::WORKER_NAME;
        say!(
            "pitroom demo: the real pitroom commands on a sample project, with a scripted worker."
        );
        say!("Only the worker is a stand-in: this binary, started as {name}, replays");
        say!("a fixed script in OpenCode's stream format. No model, no key, nothing leaves this machine.");
        say!();
        say!("  sample project  {}", self.project.display());
        say!(
            "                  (a git repository; README.md has an uncommitted edit of \"yours\")"
        );
        say!(
            "  state dir       PITROOM_HOME={}  (your own runs are not touched)",
            self.state.display()
        );
        say!(
            "  worker          PITROOM_OPENCODE_BIN={}",
            self.worker.display()
        );
        say!("  config          PITROOM_CONFIG={}", self.config.display());
    }

    fn stages(&mut self) -> Result<(), String> {
        let dir = self.project.display().to_string();
        let target = ["-W", "opencode", "-m", MODEL, "-d", dir.as_str()];

        self.header(
            1,
            "read",
            "the answer cites calc.py twice; one citation is wrong, and Pitroom checks every path:line",
        );
        let script = self.script("1-read", Script::Actions(read_script()))?;
        self.pitroom(
            &[&target[..], &["Where can divide fail?"]].concat(),
            Some(&script),
            LIMIT,
        )?;
        let script = self.script("1-follow-up", Script::Actions(follow_up_script()))?;
        self.pitroom(
            &[
                "run",
                "--continue",
                "last",
                "Does mean() fail the same way?",
            ],
            Some(&script),
            LIMIT,
        )?;

        self.header(
            2,
            "isolate + apply",
            "the worker edits a private copy; its patch holds only its own edit, not your README.md",
        );
        let script = self.script("2-isolate", Script::Actions(isolate_script()))?;
        self.pitroom(
            &[&["-i"], &target[..], &["Add a zero check to divide()"]].concat(),
            Some(&script),
            LIMIT,
        )?;
        self.pitroom(&["show", "--patch"], None, LIMIT)?;
        self.pitroom(&["apply"], None, LIMIT)?;

        self.header(
            3,
            "write + revert",
            "the worker edits the project in place; revert undoes exactly its edits",
        );
        let script = self.script("3-write", Script::Actions(write_script()))?;
        self.pitroom(
            &[&["-w"], &target[..], &["Add a docstring to divide()"]].concat(),
            Some(&script),
            LIMIT,
        )?;
        self.pitroom(&["revert"], None, LIMIT)?;

        self.header(
            4,
            "crew + watch",
            "three read runs in the background as group demo, followed as NDJSON",
        );
        let script = self.script("4-crew", crew_script())?;
        let mut crew = vec!["crew", "-g", "demo"];
        crew.extend(target);
        crew.extend(CREW_TASKS.iter().map(|(task, _)| *task));
        self.pitroom(&crew, Some(&script), LIMIT)?;
        self.pitroom(
            &["watch", "-g", "demo", "--json", "--timeout", "60"],
            None,
            WATCH_LIMIT,
        )?;

        self.header(
            5,
            "savings",
            "what the runs above would have saved, from their scripted token counts",
        );
        self.pitroom(&["savings"], None, LIMIT)?;
        Ok(())
    }

    fn header(&mut self, n: usize, name: &str, about: &str) {
        self.stage = format!("stage {n}/{STAGES} ({name})");
        say!();
        say!("▶ stage {n}/{STAGES} · {name} · {WHAT}");
        say!("  {about}");
    }

    /// Writes a script for the worker and returns its path.
    fn script(&self, name: &str, script: Script) -> Result<PathBuf, String> {
        let path = self.scripts.join(format!("{name}.json"));
        let text = serde_json::to_string_pretty(&script)
            .map_err(|e| format!("could not encode the {name} script: {e}"))?;
        write(&path, &text)?;
        Ok(path)
    }

    /// Runs `pitroom ARGS` in the sample project with the demo's environment, prints the
    /// command line and its output (indented); a non-zero exit fails the stage.
    fn pitroom(
        &mut self,
        args: &[&str],
        script: Option<&Path>,
        limit: Duration,
    ) -> Result<(), String> {
        let shown = shell_line(args);
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(format!("{}: interrupted before `{shown}`", self.stage));
        }
        say!("  $ {shown}");
        self.commands += 1;
        let log = self.logs.join(format!("{:02}.log", self.commands));
        let mut cmd = Command::new(&self.exe);
        cmd.args(args).current_dir(&self.project);
        self.env(&mut cmd, script);
        let result = bounded(cmd, &log, limit);
        let (status, text) = match result {
            Ok(done) => done,
            Err(Bounded::Interrupted(text)) => {
                indent(&text);
                return Err(format!("{}: interrupted during `{shown}`", self.stage));
            }
            Err(Bounded::TimedOut(text)) => {
                indent(&text);
                return Err(format!(
                    "{}: `{shown}` did not finish within {}s and was stopped; run `pitroom demo --keep` and look at the runs in its state dir",
                    self.stage,
                    limit.as_secs()
                ));
            }
            Err(other) => return Err(format!("{}: `{shown}`: {}", self.stage, other.describe())),
        };
        indent(&text);
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "{}: `{shown}` failed ({status}); its output is above",
                self.stage
            ))
        }
    }

    fn kept(&mut self) {
        self.settle();
        say!();
        say!("Kept (--keep):");
        say!("  sample project  {}", self.project.display());
        say!("  state dir       PITROOM_HOME={}", self.state.display());
        say!("Look around with:");
        say!("  PITROOM_HOME={} pitroom ls", self.state.display());
        say!(
            "  PITROOM_HOME={} pitroom show last --full",
            self.state.display()
        );
        say!("Remove it all with: rm -rf {}", self.root.display());
    }

    /// Waits (at most a few seconds) until no run's supervisor is alive, so nothing writes into
    /// the state dir while it is removed; a run still going then is stopped.
    fn settle(&mut self) {
        let state = self.state.display().to_string();
        let home = Home::locate(&|k: &str| (k == "PITROOM_HOME").then(|| state.clone()));
        let alive = |home: &Home| -> Vec<String> {
            home.run_ids()
                .into_iter()
                .filter(|id| home.load(id).is_ok_and(|r| supervisor_alive(&r)))
                .collect()
        };
        let wait = |limit: Duration| {
            let deadline = Instant::now() + limit;
            loop {
                let left = alive(&home);
                if left.is_empty() || Instant::now() >= deadline {
                    return left;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let left = wait(Duration::from_secs(5));
        if left.is_empty() {
            return;
        }
        for id in &left {
            self.commands += 1;
            let log = self.logs.join(format!("{:02}-stop.log", self.commands));
            let mut cmd = Command::new(&self.exe);
            cmd.args(["stop", id.as_str()]).current_dir(&self.project);
            self.env(&mut cmd, None);
            let _ = bounded(cmd, &log, Duration::from_secs(10));
        }
        wait(Duration::from_secs(3));
    }

    fn clean_up(&mut self) {
        self.settle();
        if let Err(e) = std::fs::remove_dir_all(&self.root) {
            output::warning(format!(
                "could not remove the demo's directory {}: {e}; remove it by hand",
                self.root.display()
            ));
        }
    }
}

fn what_next() {
    say!();
    say!("What next: a real worker on your own code");
    say!("  npm i -g opencode-ai            # OpenCode, the default worker; its free models need no key");
    say!("  pitroom doctor                  # checks git, the state dir, the worker CLIs, the safety layers");
    say!("  cd your-project && pitroom \"Where can divide fail?\"");
}

/// A new, empty directory under the system's temporary directory.
fn fresh_dir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let mut last = None;
    for attempt in 0..16u32 {
        let dir = base.join(format!(
            "pitroom-demo-{}-{:08x}",
            std::process::id(),
            nanos.wrapping_add(attempt.wrapping_mul(0x9e37_79b9))
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                return Err(format!(
                    "could not create a directory in {} ({e}); set TMPDIR to a writable directory",
                    base.display()
                ))
            }
        }
    }
    Err(format!(
        "could not create a fresh directory in {}: {}",
        base.display(),
        last.map(|e| e.to_string()).unwrap_or_default()
    ))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// Prints a command's output, indented under its command line.
fn indent(text: &str) {
    for line in text.trim_end().lines().map(str::trim_end) {
        if line.is_empty() {
            say!();
        } else {
            say!("    {line}");
        }
    }
}

/// The command line as a user would type it.
fn shell_line(args: &[&str]) -> String {
    let mut line = String::from("pitroom");
    for arg in args {
        line.push(' ');
        line.push_str(&quote(arg));
    }
    line
}

fn quote(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,#".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_string()
    } else if !arg.contains(['"', '$', '`', '\\', '!']) {
        format!("\"{arg}\"")
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Why a bounded child command did not give a result.
enum Bounded {
    Spawn(std::io::Error),
    Io(String),
    /// It ran past its limit and was stopped; carries what it printed.
    TimedOut(String),
    /// The demo was interrupted (Ctrl-C) and stopped it; carries what it printed.
    Interrupted(String),
}

impl Bounded {
    fn describe(&self) -> String {
        match self {
            Bounded::Spawn(e) => format!("could not start it: {e}"),
            Bounded::Io(why) => why.clone(),
            Bounded::TimedOut(_) => "it did not finish in time and was stopped".into(),
            Bounded::Interrupted(_) => "interrupted".into(),
        }
    }
}

/// Runs `cmd` with its stdout and stderr (interleaved, in order) in `log`, for at most `limit`:
/// past it the child gets SIGTERM, then SIGKILL. Files, not pipes, so a background process
/// that keeps a descriptor can never hold the demo up.
fn bounded(mut cmd: Command, log: &Path, limit: Duration) -> Result<(ExitStatus, String), Bounded> {
    let io = |what: &str, e: std::io::Error| Bounded::Io(format!("{what} {}: {e}", log.display()));
    let out = File::create(log).map_err(|e| io("could not create", e))?;
    let err = out.try_clone().map_err(|e| io("could not open", e))?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    let mut child = cmd.spawn().map_err(Bounded::Spawn)?;
    let deadline = Instant::now() + limit;
    let mut timed_out = false;
    let mut interrupted = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(Bounded::Io(format!("waiting for the command failed: {e}"))),
        }
        if !timed_out && !interrupted {
            if INTERRUPTED.load(Ordering::SeqCst) {
                interrupted = true;
                stop(&mut child);
                continue;
            }
            if Instant::now() >= deadline {
                timed_out = true;
                stop(&mut child);
                continue;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = std::fs::read(log)
        .map(|raw| String::from_utf8_lossy(&raw).into_owned())
        .map_err(|e| io("could not read", e))?;
    if interrupted {
        return Err(Bounded::Interrupted(text));
    }
    if timed_out {
        return Err(Bounded::TimedOut(text));
    }
    Ok((status, text))
}

/// SIGTERM (pitroom then stops its worker and keeps what it did), then SIGKILL after 3 s.
fn stop(child: &mut std::process::Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: signalling our own child, which has not been reaped yet.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let grace = Instant::now() + Duration::from_secs(3);
    while Instant::now() < grace {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
}

// ---- the scripts ----

/// calc.py after the isolated run's zero check.
fn checked() -> String {
    CALC.replace(
        "def divide(a, b):\n    return a / b\n",
        "def divide(a, b):\n    if b == 0:\n        raise ValueError(\"divide: b must not be 0\")\n    return a / b\n",
    )
}

/// calc.py after the write run's docstring.
fn documented() -> String {
    checked().replace(
        "def divide(a, b):\n",
        "def divide(a, b):\n    \"\"\"Return a / b; raise ValueError when b is 0.\"\"\"\n",
    )
}

/// The 1-based number of the first line of `text` that contains `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map_or(1, |i| i + 1)
}

fn text(s: String) -> Action {
    Action::Text(s)
}

fn tool(name: &str, input: Value, output: &str) -> Action {
    Action::Tool(Tool {
        name: name.into(),
        input,
        status: "completed".into(),
        output: output.into(),
    })
}

fn step(input: u64, output: u64) -> Action {
    Action::Step(Step {
        input,
        output,
        cost: 0.0,
    })
}

fn write_file(path: &str, content: String) -> Action {
    Action::Write(WriteFile {
        path: path.into(),
        content,
    })
}

fn read_script() -> Vec<Action> {
    let ret = line_of(CALC, "return a / b");
    let lines = CALC.lines().count();
    vec![
        tool("read", json!({"filePath": "calc.py"}), CALC),
        step(2140, 64),
        tool("grep", json!({"pattern": "divide("}), "calc.py\ntest_calc.py"),
        step(2630, 52),
        text(format!(
            "SUMMARY: divide() fails when b is 0: it returns a / b with no zero check (calc.py:{ret}), so Python raises ZeroDivisionError.\n\
             DETAILS: mean() hands len(xs) to divide(), so mean([]) fails the same way (calc.py:{}).\n\
             FILES CHANGED: none\n\
             VERIFICATION: read calc.py and test_calc.py; no test divides by zero.\n\
             OPEN ISSUES: none",
            lines + 29
        )),
        step(2810, 118),
    ]
}

fn follow_up_script() -> Vec<Action> {
    let def = line_of(CALC, "def mean");
    let ret = line_of(CALC, "return divide(sum(xs)");
    vec![
        step(3020, 40),
        text(format!(
            "SUMMARY: yes: mean([]) calls divide(0, 0) (calc.py:{ret}), which raises ZeroDivisionError.\n\
             DETAILS: mean() is defined at calc.py:{def}; nothing checks for an empty list before the division.\n\
             FILES CHANGED: none\n\
             VERIFICATION: read calc.py.\n\
             OPEN ISSUES: none"
        )),
        step(3105, 84),
    ]
}

fn isolate_script() -> Vec<Action> {
    let after = checked();
    let check = line_of(&after, "if b == 0");
    vec![
        tool("read", json!({"filePath": "calc.py"}), CALC),
        step(2200, 71),
        write_file("calc.py", after),
        tool(
            "edit",
            json!({"filePath": "calc.py", "oldString": "    return a / b",
                "newString": "    if b == 0:\n        raise ValueError(\"divide: b must not be 0\")\n    return a / b"}),
            "Edit applied successfully.",
        ),
        step(2460, 96),
        text(format!(
            "SUMMARY: divide() now raises ValueError when b is 0 (calc.py:{check}).\n\
             DETAILS: the check comes before the division, so mean([]) raises ValueError too.\n\
             FILES CHANGED: calc.py\n\
             VERIFICATION: not run (python3 -m unittest would check it).\n\
             OPEN ISSUES: no test covers b == 0 yet."
        )),
        step(2590, 88),
    ]
}

fn write_script() -> Vec<Action> {
    let after = documented();
    let doc = line_of(&after, "\"\"\"Return a / b");
    vec![
        tool("read", json!({"filePath": "calc.py"}), &checked()),
        step(2230, 58),
        write_file("calc.py", after),
        tool(
            "edit",
            json!({"filePath": "calc.py", "oldString": "def divide(a, b):\n",
                "newString": "def divide(a, b):\n    \"\"\"Return a / b; raise ValueError when b is 0.\"\"\"\n"}),
            "Edit applied successfully.",
        ),
        step(2390, 77),
        text(format!(
            "SUMMARY: divide() has a docstring now (calc.py:{doc}).\n\
             DETAILS: one line, saying what it returns and when it raises.\n\
             FILES CHANGED: calc.py\n\
             VERIFICATION: none needed: a docstring changes no behaviour.\n\
             OPEN ISSUES: none"
        )),
        step(2470, 63),
    ]
}

/// The crew's tasks, each with the text of its prompt that selects its actions.
const CREW_TASKS: [(&str, &str); 3] = [
    ("List calc.py's public functions", "public functions"),
    ("Which tests cover mean()?", "tests cover mean"),
    ("Find unchecked inputs in calc.py", "unchecked inputs"),
];

fn crew_script() -> Script {
    // The crew reads the tree as it is now: with the applied zero check, without the docstring.
    let now = checked();
    let add = line_of(&now, "def add");
    let divide = line_of(&now, "def divide");
    let mean = line_of(&now, "def mean");
    let check = line_of(&now, "if b == 0");
    let test_mean = line_of(TESTS, "def test_mean");
    let answers = [
        format!(
            "SUMMARY: three public functions: add (calc.py:{add}), divide (calc.py:{divide}) and mean (calc.py:{mean}).\n\
             FILES CHANGED: none"
        ),
        format!(
            "SUMMARY: one test: test_mean (test_calc.py:{test_mean}) checks mean([1, 2, 3]); nothing checks mean([]).\n\
             FILES CHANGED: none"
        ),
        format!(
            "SUMMARY: mean([]) still fails: len(xs) is 0, and divide() raises ValueError for it (calc.py:{check}).\n\
             FILES CHANGED: none"
        ),
    ];
    Script::ByPrompt {
        by_prompt: CREW_TASKS
            .iter()
            .zip(answers)
            .map(|((_, key), answer)| Case {
                contains: (*key).to_string(),
                actions: vec![
                    tool("read", json!({"filePath": "calc.py"}), &now),
                    step(1980, 45),
                    text(answer),
                    step(2150, 70),
                ],
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edits_change_the_sample() {
        assert_ne!(checked(), CALC);
        assert_ne!(documented(), checked());
        assert!(CALC.lines().any(|l| l.contains("return a / b")));
        assert!(CALC.lines().any(|l| l.contains("def mean")));
        assert!(CALC.lines().any(|l| l.contains("return divide(sum(xs)")));
        assert!(TESTS.lines().any(|l| l.contains("def test_mean")));
        assert_eq!(line_of(CALC, "return a / b"), 9);
    }

    #[test]
    fn a_command_past_its_limit_is_stopped() {
        let dir = fresh_dir().expect("temp dir");
        let started = Instant::now();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo before; exec sleep 30"]);
        let result = bounded(cmd, &dir.join("log"), Duration::from_millis(300));
        let took = started.elapsed();
        let _ = std::fs::remove_dir_all(&dir);
        match result {
            Err(Bounded::TimedOut(text)) => assert_eq!(text.trim(), "before"),
            Err(other) => panic!("{}", other.describe()),
            Ok((status, _)) => panic!("finished: {status}"),
        }
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_command_s_output_and_exit_status_come_back() {
        let dir = fresh_dir().expect("temp dir");
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let result = bounded(cmd, &dir.join("log"), LIMIT);
        let _ = std::fs::remove_dir_all(&dir);
        match result {
            Ok((status, text)) => {
                assert_eq!(status.code(), Some(3));
                assert_eq!(text, "out\nerr\n");
            }
            Err(other) => panic!("{}", other.describe()),
        }
    }

    #[test]
    fn command_lines_are_quoted_as_a_shell_would_need() {
        assert_eq!(
            shell_line(&["-d", "/tmp/x", "Where can divide fail?", "it's"]),
            "pitroom -d /tmp/x \"Where can divide fail?\" \"it's\""
        );
        assert_eq!(shell_line(&["say \"$x\""]), "pitroom 'say \"$x\"'");
    }
}
