//! Streams recorded from the real CLIs (`tests/fixtures/<cli>/`), and how each CLI's contract
//! module reads them: a fixture is `<name>.jsonl` (stdout), with `<name>.stderr.txt` and an
//! `<name>.exit` code when the recording kept them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use pitroom_workers::{
    override_var, parse_stream, Adapter, FailureEvidence, FailureKind, InvocationRequest, Mode,
    StateDirs, ToolOutcome, Usage, WorkerEvent,
};

/// One CLI's recordings; its adapter is the one its row of the CLI table builds.
pub struct Recorded {
    /// The folder under `tests/fixtures/`: the CLI's backend id.
    pub dir: &'static str,
    /// A line the CLI really prints on stdout among its events that is not JSON.
    pub banner: &'static str,
    /// An event line of a type the adapter does not know (a newer CLI's), which must yield
    /// nothing.
    pub inert_event: &'static str,
}

impl Recorded {
    /// A fresh adapter of this CLI, built by its row.
    pub fn adapter(&self) -> Box<dyn Adapter> {
        let row = pitroom_workers::facts(self.dir)
            .unwrap_or_else(|| panic!("{}: recordings of a CLI with no row", self.dir));
        (row.adapter)()
    }

    fn path(&self, file: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(self.dir)
            .join(file)
    }

    /// Every recording of this CLI, by name, sorted.
    pub fn names(&self) -> Vec<String> {
        let dir = self.path("");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|entry| {
                let name = entry.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".jsonl").map(str::to_string)
            })
            .collect();
        names.sort();
        assert!(!names.is_empty(), "no recordings in {}", dir.display());
        names
    }

    /// The recorded stdout. A run the engine stopped before the CLI wrote any event has only
    /// its stderr; its stdout is then empty.
    pub fn events(&self, name: &str) -> String {
        let events = self.path(&format!("{name}.jsonl"));
        match std::fs::read_to_string(&events) {
            Ok(text) => text,
            Err(_) if self.path(&format!("{name}.stderr.txt")).exists() => String::new(),
            Err(e) => panic!("{}: {e}", events.display()),
        }
    }

    /// The recorded stderr (empty when none was kept).
    pub fn stderr(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(&format!("{name}.stderr.txt"))).unwrap_or_default()
    }

    /// `(stdout, stderr)` of a recording.
    pub fn fixture(&self, name: &str) -> (String, String) {
        (self.events(name), self.stderr(name))
    }

    /// The recorded exit code; 1 (a failure) when the recording kept none.
    pub fn exit_code(&self, name: &str) -> Option<i32> {
        std::fs::read_to_string(self.path(&format!("{name}.exit")))
            .ok()
            .and_then(|c| c.trim().parse().ok())
            .or(Some(1))
    }

    /// What the recorded stdout of `name` adds up to.
    pub fn summary(&self, name: &str) -> Summary {
        summarize(&self.parse(&self.events(name)))
    }

    /// The events of `stream`, read by a fresh parser of this CLI's adapter.
    pub fn parse(&self, stream: &str) -> Vec<WorkerEvent> {
        parse_stream(self.adapter().as_ref(), stream)
    }

    /// A request for an invocation in `mode`, everything under `root`: the work dir, the state
    /// dirs, the user's home; the CLI found at `/bin/true`; no model, effort or session.
    pub fn request(&self, mode: Mode, root: &Path) -> InvocationRequest {
        InvocationRequest {
            mode,
            model: None,
            effort: None,
            web: false,
            workdir: root.join("work"),
            dirs: StateDirs {
                shared: root.join("shared"),
                scratch: root.join("scratch"),
            },
            resume_session: None,
            title: "t".into(),
            prompt_file: root.join("prompt.md"),
            env: vec![
                (override_var(self.dir), "/bin/true".into()),
                ("HOME".into(), root.display().to_string()),
            ],
        }
    }

    /// The failed model calls the adapter reads in the recording's stderr, in order.
    pub fn retry_signals(&self, name: &str) -> Vec<String> {
        let adapter = self.adapter();
        self.stderr(name)
            .lines()
            .filter_map(|l| adapter.retry_signal(l))
            .collect()
    }

    /// Asserts that the recording `name` is an error, never an answer (no text at all), and
    /// that the adapter classifies it as `kind`; returns its summary for the CLI's own checks.
    #[track_caller]
    pub fn assert_failed_without_answer(&self, name: &str, kind: FailureKind) -> Summary {
        let s = self.summary(name);
        assert!(
            s.texts.is_empty(),
            "{name}: an error is not an answer: {s:?}"
        );
        assert_eq!(self.classify(name), kind, "{name}");
        s
    }

    /// Asserts that the recording `name` carries no cited answer (no text with `SUMMARY`).
    #[track_caller]
    pub fn assert_no_cited_answer(&self, name: &str) {
        let s = self.summary(name);
        assert!(s.texts.iter().all(|t| !t.contains("SUMMARY")), "{s:?}");
    }

    /// A request in `mode` under `root` (as [`Recorded::request`]) with `model` pinned and
    /// effort `high`.
    pub fn pinned_request(&self, mode: Mode, root: &Path, model: &str) -> InvocationRequest {
        InvocationRequest {
            model: Some(model.into()),
            effort: Some("high".into()),
            ..self.request(mode, root)
        }
    }

    /// The arguments of the adapter's invocation of a [`Recorded::pinned_request`], in a
    /// scratch dir.
    pub fn pinned_args(&self, mode: Mode, model: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let inv = self
            .adapter()
            .invocation(&self.pinned_request(mode, dir.path(), model))
            .expect("invocation");
        strings(&inv.args)
    }

    /// The arguments of the pinned read and write invocations (see [`Recorded::pinned_args`]),
    /// after asserting that they differ and that neither holds any of the words of `banned`
    /// (separated by spaces).
    #[track_caller]
    pub fn distinct_args_without(&self, model: &str, banned: &str) -> [Vec<String>; 2] {
        let read = self.pinned_args(Mode::Read, model);
        let write = self.pinned_args(Mode::Write, model);
        assert_ne!(read, write);
        for a in [&read, &write] {
            let line = a.join(" ");
            for word in banned.split_whitespace() {
                assert!(!line.contains(word), "{word} in {line}");
            }
        }
        [read, write]
    }

    /// How the adapter classifies the recording as a failed run.
    pub fn classify(&self, name: &str) -> FailureKind {
        let (events, stderr) = self.fixture(name);
        let parsed = self.parse(&events);
        self.adapter().classify(&FailureEvidence {
            events: &parsed,
            stderr_tail: &stderr,
            exit_code: self.exit_code(name),
        })
    }
}

/// An invocation's arguments (or any OS strings) as text.
pub fn strings(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// Writes the user's login file `file` (`{}`) into `dir` under `home`, and returns that dir.
pub fn user_login(home: &Path, dir: &str, file: &str) -> PathBuf {
    let user = home.join(dir);
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join(file), "{}").unwrap();
    user
}

/// An invocation's environment as text.
pub fn env_strings(env: &[(OsString, OsString)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// The usage the recording scripts of Gemini and Qwen Code give their read run (its model calls
/// summed, as the fake Gemini and chat-completions servers report them).
pub const FAKE_READ_USAGE: Usage = Usage {
    input: 1300,
    output: 80,
    reasoning: 0,
    cache_read: 1200,
    cache_write: 0,
};

/// What a run's events add up to.
#[derive(Debug, Default)]
pub struct Summary {
    pub session: Option<String>,
    pub model: Option<String>,
    pub steps: usize,
    /// Steps that ended without a finish reason (the endless-loop shape).
    pub empty_steps: usize,
    pub tools: Vec<(String, ToolOutcome)>,
    pub edited: Vec<String>,
    pub usage: Usage,
    pub texts: Vec<String>,
    pub errors: Vec<(String, Option<u16>)>,
}

impl Summary {
    /// The names of the tool calls that were denied, in order.
    pub fn denied(&self) -> Vec<&str> {
        self.tools
            .iter()
            .filter(|(_, o)| *o == ToolOutcome::Denied)
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// Asserts that a call of each of `tools` was denied (`what` names the recording in the
    /// failure message).
    #[track_caller]
    pub fn assert_denied(&self, what: &str, tools: &[&str]) {
        let denied = self.denied();
        for tool in tools {
            assert!(
                denied.contains(tool),
                "{what}: {tool} not denied: {:?}",
                self.tools
            );
        }
    }

    /// Asserts that `count` edits were reported, among them a file ending in each of `suffixes`
    /// (`what` names the recording in the failure message).
    #[track_caller]
    pub fn assert_edited(&self, what: &str, count: usize, suffixes: &[&str]) {
        assert_eq!(self.edited.len(), count, "{what}: {:?}", self.edited);
        for suffix in suffixes {
            assert!(
                self.edited.iter().any(|p| p.ends_with(suffix)),
                "{what}: {suffix} not among {:?}",
                self.edited
            );
        }
    }

    /// Asserts the read run of a CLI whose init event names its model: a session, `model`, one
    /// call of `tool` that succeeded, `usage` in all, and no error.
    #[track_caller]
    pub fn assert_read_run(&self, model: &str, tool: &str, usage: Usage) {
        assert!(self.session.is_some(), "{self:?}");
        assert_eq!(
            self.model.as_deref(),
            Some(model),
            "the init event names it"
        );
        assert_eq!(self.tools, vec![(tool.to_string(), ToolOutcome::Ok)]);
        assert_eq!(self.usage, usage);
        assert!(self.errors.is_empty(), "{self:?}");
    }
}

pub fn summarize(events: &[WorkerEvent]) -> Summary {
    let mut s = Summary::default();
    for e in events {
        match e {
            WorkerEvent::Session { id } => s.session = Some(id.clone()),
            WorkerEvent::Model { name } => s.model = Some(name.clone()),
            WorkerEvent::StepFinished { usage, .. } => {
                s.steps += 1;
                if e.is_empty_step() {
                    s.empty_steps += 1;
                }
                if let Some(u) = usage {
                    s.usage.add(u);
                }
            }
            WorkerEvent::ToolCall {
                name,
                outcome,
                edited,
                ..
            } => {
                s.tools.push((name.clone(), *outcome));
                s.edited.extend(edited.clone());
            }
            WorkerEvent::Text { text, .. } => s.texts.push(text.clone()),
            WorkerEvent::Error {
                message, status, ..
            } => s.errors.push((message.clone(), *status)),
            WorkerEvent::StepStarted => {}
        }
    }
    s
}

/// The usage each finished step reported.
pub fn usages(events: &[WorkerEvent]) -> Vec<Usage> {
    events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::StepFinished { usage, .. } => *usage,
            _ => None,
        })
        .collect()
}

/// Each tool call: its name and outcome.
pub fn tools(events: &[WorkerEvent]) -> Vec<(String, ToolOutcome)> {
    summarize(events).tools
}

/// Each tool call: its name, outcome, summary and the file it edited.
pub fn tool_calls(events: &[WorkerEvent]) -> Vec<(&str, ToolOutcome, &str, Option<&str>)> {
    events
        .iter()
        .filter_map(|e| match e {
            WorkerEvent::ToolCall {
                name,
                outcome,
                summary,
                edited,
                ..
            } => Some((name.as_str(), *outcome, summary.as_str(), edited.as_deref())),
            _ => None,
        })
        .collect()
}

/// Each tool call: its name, outcome and the file it edited.
pub fn tool_edits(events: &[WorkerEvent]) -> Vec<(String, ToolOutcome, Option<String>)> {
    tool_calls(events)
        .into_iter()
        .map(|(name, outcome, _, edited)| (name.to_string(), outcome, edited.map(str::to_string)))
        .collect()
}

/// The texts of the assistant's messages.
pub fn texts(events: &[WorkerEvent]) -> Vec<String> {
    summarize(events).texts
}

/// The errors: message and HTTP status.
pub fn errors(events: &[WorkerEvent]) -> Vec<(String, Option<u16>)> {
    summarize(events).errors
}
