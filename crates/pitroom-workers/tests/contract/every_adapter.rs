//! One contract, run over every adapter Pitroom has: whatever a CLI's flags, the safety floor
//! and the plumbing hold the same way, for a CLI described in the config too. Adapters added
//! later are covered without a new test.

use std::path::{Path, PathBuf};

use super::recorded::strings;

use pitroom_workers::{
    adapter_for, is_state_dir_var, Adapter, AdapterError, Custom, Invocation, InvocationRequest,
    Mode, PromptInput, StateDirs, WorkerDef, KNOWN_BACKENDS,
};

/// Flags and settings that switch a CLI's own permission checks or sandbox off.
const BYPASSES: &[&str] = &[
    "--yolo",
    "--dangerously-skip-permissions",
    "--dangerously-bypass-approvals-and-sandbox",
    "--allow-dangerously-skip-permissions",
    "bypassPermissions",
    "danger-full-access",
    "--auto",
    "--force",
    "approval_policy=\"never\" sandbox_mode=\"danger-full-access\"",
];

/// Every built-in adapter, and a CLI described in the config (`[workers.mycli]`) as a user
/// would write one: the contract holds for both.
fn adapters() -> Vec<Box<dyn Adapter>> {
    // Every row of the CLI table yields an adapter: a row without an `adapter_for` arm would
    // otherwise leave the contract without a word.
    let mut found: Vec<Box<dyn Adapter>> = KNOWN_BACKENDS
        .iter()
        .map(|b| adapter_for(b).unwrap_or_else(|| panic!("{b}: a CLI row with no adapter")))
        .collect();
    found.push(Box::new(described_cli()));
    found
}

fn described_cli() -> Custom {
    let def = WorkerDef::from_value(
        "mycli",
        &serde_json::json!({
            "command": "/bin/true",
            "read": ["run", "--json", "--read-only"],
            "write": ["run", "--json"],
            "model": ["--model", "{model}"],
            "resume": ["--resume", "{session}"],
            "events": {"kind": "/type", "session": "/session", "text": "message", "text_field": "/content"}
        }),
    )
    .expect("a valid [workers.mycli]");
    Custom {
        name: "mycli".into(),
        def,
    }
}

fn request(backend: &str, mode: Mode, root: &Path) -> InvocationRequest {
    let bin = PathBuf::from("/bin/true");
    InvocationRequest {
        mode,
        model: Some("provider/some-model".into()),
        effort: None,
        web: false,
        workdir: root.join("work"),
        dirs: StateDirs {
            shared: root.join("state/shared"),
            scratch: root.join("state/scratch"),
        },
        resume_session: None,
        title: "pitroom read: a task title".into(),
        prompt_file: root.join("state/scratch/prompt.md"),
        env: vec![
            (
                format!("PITROOM_{}_BIN", backend.to_ascii_uppercase()),
                bin.display().to_string(),
            ),
            ("HOME".into(), root.join("home").display().to_string()),
            ("PATH".into(), "/usr/bin:/bin".into()),
        ],
    }
}

fn invocation(adapter: &dyn Adapter, mode: Mode, root: &Path) -> Option<Invocation> {
    match adapter.invocation(&request(adapter.id(), mode, root)) {
        Ok(inv) => Some(inv),
        // Refusing a mode the CLI cannot enforce is allowed, and must say why.
        // (Every CLI runs read mode: that one is never refused.)
        Err(AdapterError::ModeUnsupported { why, .. }) if mode != Mode::Read => {
            assert!(
                !why.trim().is_empty(),
                "{}: a refusal says why",
                adapter.id()
            );
            None
        }
        Err(e) => panic!("{}: {mode:?}: {e}", adapter.id()),
    }
}

fn words(inv: &Invocation) -> Vec<String> {
    let mut all = strings(&inv.args);
    all.extend(
        inv.env
            .iter()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy())),
    );
    all
}

#[test]
fn no_adapter_switches_its_clis_permission_checks_off_in_any_mode() {
    let root = tempfile::tempdir().unwrap();
    for adapter in adapters() {
        for mode in [Mode::Read, Mode::Write, Mode::Isolate] {
            let Some(inv) = invocation(adapter.as_ref(), mode, root.path()) else {
                continue;
            };
            for word in words(&inv) {
                for bypass in BYPASSES {
                    let hit = if bypass.starts_with("--") {
                        word == *bypass || word.starts_with(&format!("{bypass}="))
                    } else {
                        word.contains(bypass)
                    };
                    assert!(
                        !hit,
                        "{} {mode:?}: `{word}` bypasses the CLI's checks",
                        adapter.id()
                    );
                }
            }
        }
    }
}

#[test]
fn read_and_write_invocations_differ_for_every_adapter() {
    let root = tempfile::tempdir().unwrap();
    for adapter in adapters() {
        let read = invocation(adapter.as_ref(), Mode::Read, root.path());
        let write = invocation(adapter.as_ref(), Mode::Write, root.path());
        if let (Some(read), Some(write)) = (read, write) {
            assert_ne!(
                words(&read),
                words(&write),
                "{}: a read run must be launched with narrower permissions than a write run",
                adapter.id()
            );
        }
    }
}

#[test]
fn every_adapter_keeps_the_worker_out_of_the_users_home() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let state = root.path().join("state");
    for adapter in adapters() {
        for mode in [Mode::Read, Mode::Write] {
            let Some(inv) = invocation(adapter.as_ref(), mode, root.path()) else {
                continue;
            };
            for (key, value) in &inv.env {
                let key = key.to_string_lossy();
                let is_home_dir = is_state_dir_var(adapter.id(), &key) || names_a_home(&key);
                let value = PathBuf::from(value);
                if is_home_dir {
                    assert!(
                        value.starts_with(&state),
                        "{} sets {key}={} outside the run's state dirs",
                        adapter.id(),
                        value.display()
                    );
                }
                // A home the adapter points into the state dirs is one the engine's Landlock
                // layer lets the worker write: the CLI's row must name it.
                if names_a_home(&key) && value.starts_with(&state) {
                    assert!(
                        is_state_dir_var(adapter.id(), &key),
                        "{}: {key} points into the state dirs but is not in its row's home_vars",
                        adapter.id()
                    );
                }
            }
            // Links may make the user's credentials visible, but only inside the state dirs.
            for (link, _target) in &inv.links {
                assert!(
                    link.starts_with(&state) && !link.starts_with(&home),
                    "{}: link {} outside the state dirs",
                    adapter.id(),
                    link.display()
                );
            }
            // The settings files the engine writes for the CLI, too.
            for file in &inv.files {
                assert!(
                    file.path.starts_with(&state),
                    "{}: settings file {} outside the state dirs",
                    adapter.id(),
                    file.path.display()
                );
            }
        }
    }
}

/// Whether a variable's name says it names a CLI's home or state directory.
fn names_a_home(key: &str) -> bool {
    key == "HOME" || key == "TMPDIR" || key.ends_with("_HOME") || key.ends_with("_DIR")
}

#[test]
fn the_prompt_goes_on_stdin_except_for_a_cli_that_reads_it_nowhere_else() {
    // Antigravity takes its prompt only as `-p`'s argument; every other CLI reads stdin.
    const ARGUMENT_ONLY: &[&str] = &["antigravity"];
    let root = tempfile::tempdir().unwrap();
    for adapter in adapters() {
        for mode in [Mode::Read, Mode::Write] {
            let Some(inv) = invocation(adapter.as_ref(), mode, root.path()) else {
                continue;
            };
            match inv.prompt {
                PromptInput::Stdin => {
                    assert!(!ARGUMENT_ONLY.contains(&adapter.id()), "{}", adapter.id());
                    // Nor does argv point at the prompt's file (the engine places the prompt).
                    let file = root.path().join("state/scratch/prompt.md");
                    assert!(
                        !strings(&inv.args)
                            .iter()
                            .any(|a| a.contains(&*file.to_string_lossy())),
                        "{}: the prompt file in argv",
                        adapter.id()
                    );
                }
                PromptInput::Argument { index } => {
                    assert!(ARGUMENT_ONLY.contains(&adapter.id()), "{}", adapter.id());
                    assert!(index <= inv.args.len(), "{}: {index}", adapter.id());
                }
            }
        }
    }
}

#[test]
fn the_title_reaches_an_adapters_arguments_whole_or_not_at_all() {
    // The task itself never reaches an adapter: the engine writes it to the prompt file and
    // places it (stdin, or the one argument a CLI that reads it nowhere else declares:
    // `the_prompt_goes_on_stdin_except_for_a_cli_that_reads_it_nowhere_else`). The title is
    // the only task text an adapter sees, and at most as one argument: a session title.
    let root = tempfile::tempdir().unwrap();
    let title = "pitroom read: --model evil -- rm -rf";
    for adapter in adapters() {
        for mode in [Mode::Read, Mode::Write] {
            let mut req = request(adapter.id(), mode, root.path());
            req.title = title.into();
            let inv = match adapter.invocation(&req) {
                Ok(inv) => inv,
                Err(AdapterError::ModeUnsupported { .. }) => continue,
                Err(e) => panic!("{}: {mode:?}: {e}", adapter.id()),
            };
            let args = strings(&inv.args);
            for piece in ["--model evil", "evil", "rm", "-rf", "rm -rf"] {
                assert!(
                    !args.iter().any(|a| a == piece),
                    "{} {mode:?}: title text split into arguments: {args:?}",
                    adapter.id()
                );
            }
            let carrying: Vec<&String> = args.iter().filter(|a| a.contains("evil")).collect();
            assert!(
                carrying.iter().all(|a| a.contains(title)),
                "{} {mode:?}: the title only whole: {carrying:?}",
                adapter.id()
            );
            assert!(carrying.len() <= 1, "{} {mode:?}: {args:?}", adapter.id());
        }
    }
}

#[test]
fn every_adapters_recorded_fixtures_parse_and_survive_a_torn_last_line() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut checked = 0;
    for adapter in adapters() {
        let dir = fixtures.join(adapter.id());
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            // The CLI described in the config has no recordings; every built-in one has.
            Err(_) if adapter.id() == "custom" => continue,
            Err(e) => panic!("{}: {}: {e}", adapter.id(), dir.display()),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let mut parser = adapter.parser();
            let events: usize = lines.iter().map(|l| parser.parse_line(l).len()).sum();
            assert!(
                events > 0,
                "{}: no event in {}",
                adapter.id(),
                path.display()
            );
            if let Some(last) = lines.last() {
                // A stream cut mid-line (the CLI killed while writing) yields nothing for the
                // torn line, and never panics.
                for cut in [1, last.len() / 2, last.len().saturating_sub(1)] {
                    let torn = &last[..floor_char_boundary(last, cut)];
                    if serde_json::from_str::<serde_json::Value>(torn).is_err() {
                        assert!(
                            adapter.parser().parse_line(torn).is_empty(),
                            "{}: torn line of {} parsed as events",
                            adapter.id(),
                            path.display()
                        );
                    }
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} fixtures found");
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[test]
fn every_adapter_names_itself_and_lists_models_through_its_cli() {
    // Antigravity documents no model-list command; the CLI described here names none.
    const NO_MODEL_LIST: &[&str] = &["antigravity", "custom"];
    let root = tempfile::tempdir().unwrap();
    let mut printed_lists = 0;
    for adapter in adapters() {
        let id = adapter.id();
        // A built-in adapter is the one its row builds; the described CLI is the custom one.
        assert!(
            id == "custom" || adapter_for(id).is_some_and(|a| a.id() == id),
            "{id}: no row builds it"
        );
        let req = request(id, Mode::Read, root.path());
        match adapter.models_invocation(&req) {
            Ok(inv) => {
                assert!(
                    !NO_MODEL_LIST.contains(&id),
                    "{id} lists models: take it off NO_MODEL_LIST"
                );
                // The CLI itself, found through its `PITROOM_<CLI>_BIN`, or a shell around it
                // (some CLIs list models only interactively)...
                let through_cli = inv.program == Path::new("/bin/true")
                    || strings(&inv.args).iter().any(|a| a.contains("/bin/true"));
                if !through_cli {
                    // ...or, for a CLI with no list command, a fixed list a shell prints, which
                    // the adapter reads back as models.
                    assert_eq!(
                        inv.program,
                        Path::new("/bin/sh"),
                        "{id}: lists models through another program: {:?}",
                        inv.args
                    );
                    let out = std::process::Command::new(&inv.program)
                        .args(&inv.args)
                        .output()
                        .unwrap();
                    assert!(out.status.success(), "{id}: {out:?}");
                    let printed = String::from_utf8_lossy(&out.stdout);
                    let ids: Vec<String> = adapter
                        .parse_models(&printed)
                        .into_iter()
                        .map(|m| m.id)
                        .collect();
                    let lines: Vec<&str> = printed.lines().filter(|l| !l.is_empty()).collect();
                    assert_eq!(
                        ids, lines,
                        "{id}: its printed list reads back as other models"
                    );
                    printed_lists += usize::from(!ids.is_empty());
                }
            }
            // A CLI with no models command refuses, and says why; every other one lists.
            Err(AdapterError::Config(why)) if NO_MODEL_LIST.contains(&id) => {
                assert!(!why.trim().is_empty(), "{id}")
            }
            Err(e) => panic!("{id}: {e}"),
        }
    }
    // Gemini prints `auto` with nothing configured: the read-back above was exercised.
    assert!(printed_lists > 0, "no fixed list was printed and read back");
}
