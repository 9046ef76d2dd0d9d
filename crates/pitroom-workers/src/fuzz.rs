//! Fuzzing every adapter's stream parser (issue 16, item 7), as property tests: arbitrary bytes,
//! arbitrary JSON built from the field names the real streams use, and structure-aware
//! mutations of the recorded streams in `tests/fixtures` (the corpus, read at test time):
//! lines torn at any byte, lines of one CLI fed to another, fields flipped to another JSON type,
//! huge numbers, deep nesting, odd text. Each stream goes to a fresh adapter, as a run does.
//!
//! Beyond "no panic", the properties are the ones the adapter contract states:
//! - a line that is not JSON (a torn last line, a banner) yields nothing (`Adapter::parse_line`);
//! - parsing is pure: the same lines give the same events (the crate's contract);
//! - a tool call names an edited file only when it succeeded (`WorkerEvent::ToolCall::edited`);
//! - a tool call's summary is a single line (`WorkerEvent::ToolCall::summary`).
//!
//! Cases default to a few hundred per property so `cargo test` stays quick; `PROPTEST_CASES`
//! raises them (`.ci/run` does).

use std::path::Path;
use std::sync::LazyLock;

use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use serde_json::{json, Map, Value};

use crate::adapter::{Adapter, FailureEvidence};
use crate::custom::{Custom, WorkerDef};
use crate::events::{ToolOutcome, WorkerEvent};
use crate::KNOWN_BACKENDS;

/// `cases` unless `PROPTEST_CASES` says otherwise.
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    config
}

/// For properties that write files per case: a tenth of `PROPTEST_CASES` when it is set (at
/// least `cases`), so a long fuzz run spends its time on the parsers.
fn costly_config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    config.cases = match std::env::var_os("PROPTEST_CASES") {
        Some(_) => (config.cases / 10).max(cases),
        None => cases,
    };
    config
}

/// The recorded streams: every line of every `*.jsonl` fixture, and every stderr line.
struct Corpus {
    lines: Vec<String>,
    stderr: Vec<String>,
    /// Every object key the recorded lines use, to build JSON the parsers look into.
    keys: Vec<String>,
    /// Every string value of a `type`, `subtype`, `event` or `step_type` key.
    kinds: Vec<String>,
}

static CORPUS: LazyLock<Corpus> = LazyLock::new(|| {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/fixtures")
        .flatten()
        .flat_map(|dir| {
            std::fs::read_dir(dir.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut corpus = Corpus {
        lines: CUSTOM_LINES.iter().map(|l| l.to_string()).collect(),
        stderr: Vec::new(),
        keys: Vec::new(),
        kinds: Vec::new(),
    };
    for file in files {
        let name = file.to_string_lossy().into_owned();
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let lines = text.lines().filter(|l| !l.trim().is_empty());
        if name.ends_with(".jsonl") {
            corpus.lines.extend(lines.map(str::to_string));
        } else if name.ends_with(".stderr.txt") {
            corpus.stderr.extend(lines.map(str::to_string));
        }
    }
    for line in &corpus.lines {
        if let Ok(value) = serde_json::from_str::<Value>(line) {
            collect_names(&value, &mut corpus.keys, &mut corpus.kinds);
        }
    }
    for list in [&mut corpus.keys, &mut corpus.kinds] {
        list.sort();
        list.dedup();
    }
    assert!(
        corpus.lines.len() > 100 && !corpus.stderr.is_empty(),
        "the recorded streams are the corpus"
    );
    corpus
});

fn collect_names(value: &Value, keys: &mut Vec<String>, kinds: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                keys.push(k.clone());
                if matches!(k.as_str(), "type" | "subtype" | "event" | "step_type") {
                    if let Some(s) = v.as_str() {
                        kinds.push(s.to_string());
                    }
                }
                collect_names(v, keys, kinds);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_names(v, keys, kinds)),
        _ => {}
    }
}

/// Lines of the stream of [`crate::custom::example_def`]'s CLI.
const CUSTOM_LINES: &[&str] = &[
    r#"{"type":"message","session":"s1","content":"hello"}"#,
    r#"{"type":"tool","name":"edit","input":{"path":"a.rs"},"status":"ok"}"#,
    r#"{"type":"tool","name":"bash","input":{"path":"x\ny"},"status":"denied"}"#,
    r#"{"type":"usage","in":120,"out":30,"usd":0.002}"#,
    r#"{"type":"error","message":"slow down","code":429}"#,
];

/// A fresh adapter for every backend, and the custom one: (name, adapter).
fn fresh_adapters() -> Vec<(String, Box<dyn Adapter>)> {
    let mut out: Vec<(String, Box<dyn Adapter>)> = crate::CLIS
        .iter()
        .map(|cli| (cli.backend.to_string(), (cli.adapter)()))
        .collect();
    let def = WorkerDef::from_value("mycli", &crate::custom::example_def())
        .expect("a valid custom worker");
    out.push((
        "custom".into(),
        Box::new(Custom {
            name: "mycli".into(),
            def,
        }),
    ));
    out
}

/// A corpus line: one of the recorded ones.
fn recorded_line() -> impl Strategy<Value = String> {
    (0..CORPUS.lines.len()).prop_map(|i| CORPUS.lines[i].clone())
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0..CORPUS.keys.len()).prop_map(|i| CORPUS.keys[i].clone()),
        1 => ".{0,8}",
    ]
}

/// Text the parsers search: recorded kinds, denial and error phrases, non-ASCII, long text.
fn odd_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (0..CORPUS.kinds.len()).prop_map(|i| CORPUS.kinds[i].clone()),
        2 => ".{0,40}",
        1 => Just(String::new()),
        1 => prop::sample::select(vec![
            "permission denied",
            "The user has specified a rule which prevents you",
            "[API Error: 429 Rate limit reached]",
            "Please try again in 1.5ms.",
            "Please try again in 99999999999999999999999s.",
            "retry after 99999999999999999999s",
            "last status: 4",
            "last status: 42",
            "unexpected status \u{e9}\u{e9}",
            "/bin/bash -c \"",
            "bash -c '",
            "\"code\": 99999999",
            "\u{2028}line\r\nbreak\u{85}",
            "ß\u{130}İ\u{1F600}\u{0}",
            "a__b__c",
        ])
        .prop_map(str::to_string),
        1 => (1usize..3000).prop_map(|n| "é x\n".repeat(n)),
    ]
}

/// A JSON value of any type, with awkward numbers.
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::sample::select(vec![
            u64::MAX as f64,
            -1.0,
            1e308,
            -1e308,
            f64::MIN_POSITIVE,
            0.5,
            65536.0,
            429.0
        ])
        .prop_map(Value::from),
        Just(json!(u64::MAX)),
        Just(json!(i64::MIN)),
        odd_text().prop_map(Value::from),
    ]
}

/// Arbitrary JSON whose keys are mostly the ones the real streams use.
fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// `depth` nested arrays or objects around `inner`.
fn nested(depth: usize, objects: bool, inner: Value) -> Value {
    (0..depth).fold(inner, |v, _| {
        if objects {
            json!({ "content": v })
        } else {
            json!([v])
        }
    })
}

/// One edit of a parsed line.
#[derive(Debug, Clone)]
enum Edit {
    /// Replace the n-th node (pre-order, wrapping) with this value.
    Replace(prop::sample::Index, Value),
    /// Wrap the n-th node in deep nesting.
    Nest(prop::sample::Index, usize, bool),
    /// Set the line's kind to a kind of any CLI.
    Kind(String, String),
    /// Drop the n-th key of an object node.
    Drop(prop::sample::Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<prop::sample::Index>(), leaf()).prop_map(|(i, v)| Edit::Replace(i, v)),
        2 => (any::<prop::sample::Index>(), json_value()).prop_map(|(i, v)| Edit::Replace(i, v)),
        1 => (any::<prop::sample::Index>(), 1usize..140, any::<bool>())
            .prop_map(|(i, d, o)| Edit::Nest(i, d, o)),
        2 => (
            prop::sample::select(vec!["type", "subtype", "event", "step_type", "status"]),
            (0..CORPUS.kinds.len()).prop_map(|i| CORPUS.kinds[i].clone()),
        )
            .prop_map(|(k, v)| Edit::Kind(k.to_string(), v)),
        1 => any::<prop::sample::Index>().prop_map(Edit::Drop),
    ]
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(items) => items.iter().map(count_nodes).sum(),
        Value::Object(map) => map.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// The n-th node of `v` in pre-order.
fn node_mut(v: &mut Value, n: usize) -> Option<&mut Value> {
    if n == 0 {
        return Some(v);
    }
    let mut rest = n - 1;
    let children: Vec<&mut Value> = match v {
        Value::Array(items) => items.iter_mut().collect(),
        Value::Object(map) => map.values_mut().collect(),
        _ => return None,
    };
    for child in children {
        let size = count_nodes(child);
        if rest < size {
            return node_mut(child, rest);
        }
        rest -= size;
    }
    None
}

fn apply_edit(v: &mut Value, edit: &Edit) {
    let size = count_nodes(v);
    match edit {
        Edit::Replace(i, new) => {
            if let Some(node) = node_mut(v, i.index(size)) {
                *node = new.clone();
            }
        }
        Edit::Nest(i, depth, objects) => {
            if let Some(node) = node_mut(v, i.index(size)) {
                *node = nested(*depth, *objects, node.take());
            }
        }
        Edit::Kind(key, kind) => {
            if let Value::Object(map) = v {
                map.insert(key.clone(), Value::from(kind.as_str()));
            }
        }
        Edit::Drop(i) => {
            if let Some(Value::Object(map)) = node_mut(v, i.index(size)) {
                if !map.is_empty() {
                    let k = map.keys().nth(i.index(map.len())).cloned();
                    if let Some(k) = k {
                        map.remove(&k);
                    }
                }
            }
        }
    }
}

/// The longest prefix of `s` of at most `at` bytes that ends on a char boundary.
fn prefix(s: &str, at: usize) -> &str {
    let mut end = at.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A line of some stream: recorded, edited, torn, arbitrary bytes, arbitrary JSON.
fn stream_line() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => recorded_line(),
        5 => (recorded_line(), prop::collection::vec(edit(), 1..4)).prop_map(|(line, edits)| {
            match serde_json::from_str::<Value>(&line) {
                Ok(mut v) => {
                    edits.iter().for_each(|e| apply_edit(&mut v, e));
                    v.to_string()
                }
                Err(_) => line,
            }
        }),
        2 => (recorded_line(), any::<prop::sample::Index>())
            .prop_map(|(line, i)| prefix(&line, i.index(line.len().max(1))).to_string()),
        1 => prop::collection::vec(any::<u8>(), 0..200)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        2 => json_value().prop_map(|v| v.to_string()),
        1 => (recorded_line(), recorded_line(), any::<prop::sample::Index>()).prop_map(
            |(a, b, i)| format!("{}{}", prefix(&a, i.index(a.len().max(1))), b)
        ),
    ]
}

/// Checks the contract's promises on what one line gave.
fn check_events(backend: &str, line: &str, events: &[WorkerEvent]) -> Result<(), TestCaseError> {
    if serde_json::from_str::<Value>(line.trim()).is_err() {
        prop_assert!(
            events.is_empty(),
            "{}: a line that is not JSON yields nothing: {:?} -> {:?}",
            backend,
            line,
            events
        );
    }
    for event in events {
        if let WorkerEvent::ToolCall {
            summary,
            outcome,
            edited,
            ..
        } = event
        {
            prop_assert!(
                edited.is_none() || *outcome == ToolOutcome::Ok,
                "{}: only a call that succeeded edits a file: {:?}",
                backend,
                event
            );
            prop_assert!(
                !summary.contains(['\n', '\r']),
                "{}: a summary is one line: {:?} from {:?}",
                backend,
                summary,
                line
            );
        }
    }
    Ok(())
}

/// Feeds `lines` to a fresh set of adapters; returns each adapter's events, checked.
fn run_streams(lines: &[String]) -> Result<Vec<Vec<WorkerEvent>>, TestCaseError> {
    let mut all = Vec::new();
    for (backend, adapter) in fresh_adapters() {
        let mut events = Vec::new();
        let mut parser = adapter.parser();
        for line in lines {
            let got = parser.parse_line(line);
            check_events(&backend, line, &got)?;
            events.extend(got);
        }
        // Classification reads what the stream gave; it must take any of it.
        let _ = adapter.classify(&FailureEvidence {
            events: &events,
            stderr_tail: lines.last().map(String::as_str).unwrap_or(""),
            exit_code: Some(1),
        });
        all.push(events);
    }
    Ok(all)
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn fuzz_every_parser_takes_mutated_recorded_streams_purely_and_keeps_its_promises(
        lines in prop::collection::vec(stream_line(), 1..12),
    ) {
        let first = run_streams(&lines)?;
        let again = run_streams(&lines)?;
        prop_assert_eq!(first, again, "the same lines give the same events");
    }

    #[test]
    fn fuzz_every_parser_yields_nothing_for_any_torn_recorded_line(
        line in recorded_line(),
        at in any::<prop::sample::Index>(),
    ) {
        let line = line.trim();
        let torn = prefix(line, at.index(line.len().max(1)));
        prop_assume!(torn.len() < line.len());
        for (backend, adapter) in fresh_adapters() {
            let events = adapter.parser().parse_line(torn);
            prop_assert!(events.is_empty(), "{}: {:?} -> {:?}", backend, torn, events);
        }
    }

    #[test]
    fn fuzz_every_parser_takes_arbitrary_bytes_and_json(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        value in json_value(),
    ) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        run_streams(&[text.clone(), value.to_string()])?;
        for (_, adapter) in fresh_adapters() {
            let _ = adapter.parse_models(&text);
            let _ = adapter.parse_models(&value.to_string());
            let _ = adapter.retry_signal(&text);
            let _ = adapter.stderr_events(&text);
        }
    }

    #[test]
    fn fuzz_stderr_readers_take_mutated_recorded_stderr(
        picks in prop::collection::vec((0usize..10_000, any::<prop::sample::Index>()), 1..6),
        noise in odd_text(),
    ) {
        let stderr = &CORPUS.stderr;
        for (pick, at) in picks {
            let line = &stderr[pick % stderr.len()];
            let torn = prefix(line, at.index(line.len().max(1)));
            for text in [line.as_str(), torn, &format!("{torn}{noise}")] {
                for (backend, adapter) in fresh_adapters() {
                    let _ = adapter.retry_signal(text);
                    for event in adapter.stderr_events(text) {
                        check_events(&backend, "{}", std::slice::from_ref(&event))?;
                    }
                }
            }
        }
    }

    #[test]
    fn fuzz_custom_worker_definitions_are_read_or_refused_and_any_map_parses(
        def in json_value(),
        pointers in prop::collection::vec(
            prop_oneof![
                3 => "(/[a-z~01]{0,6}){0,4}",
                1 => ".{0,10}",
            ],
            14,
        ),
        lines in prop::collection::vec(stream_line(), 1..6),
    ) {
        // An arbitrary table is a definition or a message, never a panic.
        let _ = WorkerDef::from_value("fuzz", &def);
        let mut base = crate::custom::example_def();
        let names = [
            "kind", "session", "text", "text_field", "tool", "tool_name", "tool_input",
            "tool_status", "step", "input_tokens", "output_tokens", "cost", "error",
            "error_message",
        ];
        for (name, pointer) in names.iter().zip(&pointers) {
            base["events"][*name] = Value::from(pointer.as_str());
        }
        let custom = Custom {
            name: "fuzz".into(),
            def: WorkerDef::from_value("fuzz", &base).expect("pointers are strings"),
        };
        let mut parser = custom.parser();
        for line in &lines {
            check_events("custom", line, &parser.parse_line(line))?;
        }
    }
}

/// Keys the CLIs' own config files use, so generated configs reach the code that reads them.
const USER_CONFIG_KEYS: &[&str] = &[
    "permission",
    "permissions",
    "agent",
    "pitroom-read",
    "pitroom-write",
    "build",
    "mode",
    "tools",
    "bash",
    "edit",
    "read",
    "skill",
    "*",
    "git push*",
    "git push origin*",
    "provider",
    "model",
    "model_provider",
    "model_providers",
    "mcp",
    "disable",
    "env",
    "security",
    "auth",
    "selectedType",
    "sandbox",
    "allow",
    "deny",
    "$schema",
];

/// A user's config as JSON: objects keyed mostly by what the CLIs read, rule-like values.
fn user_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        4 => prop::sample::select(vec!["allow", "ask", "deny", "https://opencode.ai/config.json"])
            .prop_map(Value::from),
        2 => leaf(),
    ];
    let key = prop_oneof![
        4 => prop::sample::select(USER_CONFIG_KEYS.to_vec()).prop_map(str::to_string),
        1 => key(),
    ];
    leaf.prop_recursive(4, 40, 5, move |inner| {
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            4 => prop::collection::vec((key.clone(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
    .prop_flat_map(|v| {
        let rules = v.clone();
        // Often the rules sit where a user would put them for Pitroom's own agents.
        let wrapped = prop::sample::select(vec!["pitroom-read", "pitroom-write", "build"]).prop_map(
            move |agent| {
                json!({ "agent": { agent: { "permission": rules.clone(), "mode": "primary" } } })
            },
        );
        prop_oneof![2 => wrapped, 1 => Just(v)]
    })
    .prop_map(|v| match v {
        Value::Object(_) => v,
        other => json!({ "permission": other }),
    })
}

/// How a JSON object is written in a `.jsonc` file.
#[derive(Debug, Clone, Copy)]
enum Jsonc {
    Plain,
    Comments,
    TrailingCommas,
}

fn jsonc_text(value: &Value, style: Jsonc) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap();
    let lines: Vec<&str> = pretty.lines().collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        match style {
            Jsonc::Plain => out.push_str(line),
            // A line of pretty JSON never starts inside a string.
            Jsonc::Comments => out.push_str(&format!("/* c{i} */ {line} // end {i}")),
            Jsonc::TrailingCommas => {
                out.push_str(line);
                let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or("");
                let opens = line.ends_with('{') || line.ends_with('[');
                if !opens
                    && !line.ends_with(',')
                    && (next.starts_with('}') || next.starts_with(']'))
                {
                    out.push(',');
                }
            }
        }
        out.push('\n');
    }
    out
}

/// A request whose user home holds `json_text` in the config file each JSON-configured CLI
/// reads (and in `OPENCODE_CONFIG_CONTENT`, `KILO_CONFIG_CONTENT`), and `toml_text` in Codex's.
fn request_with_user_config(
    root: &Path,
    mode: crate::Mode,
    web: bool,
    json_text: &str,
    toml_text: &str,
) -> crate::InvocationRequest {
    let home = root.join("home");
    let config = home.join(".config");
    let json_files = ["opencode/opencode.jsonc", "kilo/kilo.jsonc"].map(|f| config.join(f));
    let home_files = [
        ".claude/settings.json",
        ".qwen/settings.json",
        ".gemini/settings.json",
    ]
    .map(|f| home.join(f));
    for path in json_files.iter().chain(&home_files) {
        crate::testing::write_file(path, json_text);
    }
    crate::testing::write_file(&home.join(".codex/config.toml"), toml_text);
    let mut env: Vec<(String, String)> = KNOWN_BACKENDS
        .iter()
        .map(|b| {
            (
                format!("PITROOM_{}_BIN", b.to_ascii_uppercase()),
                "/bin/true".into(),
            )
        })
        .collect();
    env.extend([
        ("HOME".into(), home.display().to_string()),
        ("XDG_CONFIG_HOME".into(), config.display().to_string()),
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("OPENCODE_CONFIG_CONTENT".into(), json_text.into()),
        ("KILO_CONFIG_CONTENT".into(), json_text.into()),
    ]);
    crate::InvocationRequest {
        mode,
        model: Some("provider/some-model".into()),
        effort: Some("high".into()),
        web,
        workdir: root.join("work"),
        dirs: crate::StateDirs {
            shared: root.join("state/shared"),
            scratch: root.join("state/scratch"),
        },
        resume_session: None,
        title: "fuzz".into(),
        prompt_file: root.join("prompt.md"),
        env,
    }
}

/// The JSON an invocation hands its CLI in `var`.
fn env_json(inv: &crate::Invocation, var: &str) -> Option<Value> {
    inv.env
        .iter()
        .find(|(k, _)| k == var)
        .and_then(|(_, v)| serde_json::from_str(&v.to_string_lossy()).ok())
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn fuzz_jsonc_user_configs_read_as_the_json_they_hold(
        value in user_json(),
        style in prop::sample::select(vec![Jsonc::Plain, Jsonc::Comments, Jsonc::TrailingCommas]),
        torn in any::<prop::sample::Index>(),
    ) {
        let text = jsonc_text(&value, style);
        prop_assert_eq!(
            crate::opencode::config::parse_jsonc(&text),
            Some(value),
            "{:?}",
            text
        );
        // Torn, it is whatever it is, never a panic.
        let _ = crate::opencode::config::parse_jsonc(prefix(&text, torn.index(text.len())));
    }
}

proptest! {
    #![proptest_config(costly_config(64))]

    #[test]
    fn fuzz_no_user_cli_config_loosens_the_permission_profile_or_panics_an_invocation(
        value in user_json(),
        style in prop::sample::select(vec![Jsonc::Plain, Jsonc::Comments, Jsonc::TrailingCommas]),
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        garbage in any::<bool>(),
        mode in prop::sample::select(vec![crate::Mode::Read, crate::Mode::Write, crate::Mode::Isolate]),
        web in any::<bool>(),
    ) {
        // One home for every case (they run one after another), its files rewritten each time.
        static ROOT: LazyLock<tempfile::TempDir> = LazyLock::new(|| tempfile::tempdir().unwrap());
        let root = &*ROOT;
        let json_text = if garbage {
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            jsonc_text(&value, style)
        };
        let toml_text = toml::to_string(&value).unwrap_or_else(|_| json_text.clone());
        let req = request_with_user_config(root.path(), mode, web, &json_text, &toml_text);
        for (backend, adapter) in fresh_adapters() {
            let result = adapter.invocation(&req);
            let _ = adapter.models_invocation(&req);
            let Ok(inv) = result else { continue };
            let (var, profile) = match backend.as_str() {
                "opencode" => (
                    "OPENCODE_CONFIG_CONTENT",
                    crate::opencode::config::permission_profile(mode, web),
                ),
                "kilo" => ("KILO_CONFIG_CONTENT", crate::kilo::kilo_permission_profile(&req)),
                _ => continue,
            };
            let config = env_json(&inv, var);
            prop_assert!(config.is_some(), "{}: {} is JSON", backend, var);
            let config = config.unwrap();
            let agent = crate::opencode::config::agent_name(mode);
            prop_assert_eq!(&config["permission"], &profile, "{}: the profile replaces the user's rules", backend);
            prop_assert_eq!(
                &config["agent"][agent]["permission"],
                &profile,
                "{}: Pitroom's agent has exactly the profile, whatever the user's {} says",
                backend,
                agent
            );
        }
    }
}
