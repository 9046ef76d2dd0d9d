//! Claims checked (issue 28, item 7): what a worker's answer says it did, held against what the
//! record shows it did.
//!
//! Three flags, all pure functions of what the run recorded:
//! - a read run that answered with no tool call at all ([`answered_without_reading`]);
//! - a cited file no tool call could have shown the worker ([`unread_citations`]): only calls
//!   whose input names a file or a directory are taken at their word; a search, a shell command
//!   or any tool this module does not know could have shown any file, so one such call clears
//!   every citation (a false "you never read it" would be worse than a missed one);
//! - an answer's `FILES CHANGED:` line that disagrees with the recorded diff
//!   ([`files_changed_claim`], [`compare_changed`]).

use pitroom_workers::Mode;
use serde::{Deserialize, Serialize};

use crate::record::{RunRecord, RunState};

/// One tool call as the run saw it: the tool's name and the most telling field of its input (a
/// path, a command, a pattern), in project paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallSeen {
    pub name: String,
    pub target: String,
}

/// What the claims check found; empty when the answer's claims hold (or could not be checked).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// A read run ended done with an answer but recorded no tool call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_tool_call: bool,
    /// Cited files (project paths) no recorded tool call could have shown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread_citations: Vec<String>,
    /// Files the answer's `FILES CHANGED:` names that the diff does not change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claimed_not_changed: Vec<String>,
    /// Files the diff changes that the answer's `FILES CHANGED:` does not name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_not_claimed: Vec<String>,
}

/// At most this many unread citations get a line each; the rest are counted on one more line.
const UNREAD_LINES: usize = 5;

impl Claims {
    /// Nothing flagged (also how the record leaves the field out of its JSON).
    pub fn is_clear(&self) -> bool {
        *self == Claims::default()
    }

    /// The flags as the report's warnings, one line each.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.no_tool_call {
            out.push("answered without reading: no tool call in a read run".to_string());
        }
        for file in self.unread_citations.iter().take(UNREAD_LINES) {
            out.push(format!("cites {file}, which no tool call read"));
        }
        let more = self.unread_citations.len().saturating_sub(UNREAD_LINES);
        if more > 0 {
            out.push(format!("cites {more} more file(s) no tool call read"));
        }
        out.extend(self.mismatch_line());
        out
    }

    fn mismatch_line(&self) -> Option<String> {
        let named = (!self.claimed_not_changed.is_empty()).then(|| {
            format!(
                "FILES CHANGED names {}, which the diff does not change",
                self.claimed_not_changed.join(", ")
            )
        });
        let unnamed = (!self.changed_not_claimed.is_empty()).then(|| {
            format!(
                "the diff changes {}, which FILES CHANGED does not name",
                self.changed_not_claimed.join(", ")
            )
        });
        match (named, unnamed) {
            (Some(a), Some(b)) => Some(format!(
                "{a}; {}",
                b.replace("which FILES CHANGED does not", "which it does not")
            )),
            (a, b) => a.or(b),
        }
    }
}

/// Every flag for a finished run. `cited` holds the files its verified citations name and
/// `calls` its last attempt's tool calls; `calls_complete` is false when that attempt was handed
/// an earlier one's work (it may cite what the earlier worker read).
pub fn assess(
    record: &RunRecord,
    cited: &[String],
    calls: &[ToolCallSeen],
    calls_complete: bool,
) -> Claims {
    let spec = &record.spec;
    // A follow-up's session read files in its parent run, an attachment or a review's package
    // comes with the prompt: such a worker may know files without a tool call of its own.
    let reads_checkable =
        spec.parent.is_none() && spec.review_of.is_none() && spec.attachments.is_empty();
    let no_tool_call = reads_checkable
        && answered_without_reading(
            spec.mode == Mode::Read,
            record.state == RunState::Done,
            record.answer.is_some(),
            record.tally.tool_calls,
        );
    // With no tool call at all the line above already says every citation went unread.
    let unread = if reads_checkable && calls_complete && !no_tool_call {
        unread_citations(cited, calls)
    } else {
        Vec::new()
    };
    let claim = match (&record.answer, spec.mode.may_edit()) {
        (Some(answer), true) => files_changed_claim(answer),
        _ => None,
    };
    let (claimed_not_changed, changed_not_claimed) = match claim {
        Some(claimed) => compare_changed(&claimed, &changed_paths(record)),
        None => (Vec::new(), Vec::new()),
    };
    Claims {
        no_tool_call,
        unread_citations: unread,
        claimed_not_changed,
        changed_not_claimed,
    }
}

/// Every path the worker changed as Pitroom saw it: the diff's (a rename by both names), and
/// the ignored and secret-looking files kept out of the patch.
fn changed_paths(record: &RunRecord) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in &record.changes {
        out.push(c.path.clone());
        out.extend(c.old_path.clone());
    }
    out.extend(record.ignored_changes.iter().cloned());
    out.extend(record.secret_changes.iter().cloned());
    out
}

/// A read run that ended done with an answer and never called a tool: it answered from what the
/// model already believed, not from the tree.
pub fn answered_without_reading(is_read: bool, done: bool, has_answer: bool, calls: u32) -> bool {
    is_read && done && has_answer && calls == 0
}

/// The cited files (project paths, in the answer's order, each once) that no call could have
/// shown. Empty as soon as one call could have shown anything.
pub fn unread_citations(cited: &[String], calls: &[ToolCallSeen]) -> Vec<String> {
    let mut scoped = Vec::new();
    for call in calls {
        match reach(&call.name) {
            Reach::Anything => return Vec::new(),
            Reach::Nothing => {}
            Reach::Named => scoped.push(clean_path(&call.target)),
        }
    }
    let mut out: Vec<String> = Vec::new();
    for file in cited {
        let file = clean_path(file);
        if !scoped.iter().any(|t| shows(t, &file)) && !out.contains(&file) {
            out.push(file);
        }
    }
    out
}

/// What a tool could have shown the worker of the project.
#[derive(Debug, PartialEq)]
enum Reach {
    /// Only what its input names: a file, or the files under a directory.
    Named,
    /// No file of the project (a to-do list, the web).
    Nothing,
    /// Any file: a search, a shell command, a sub-agent, a tool this list does not know.
    Anything,
}

/// The tool names of the CLIs Pitroom drives, by what they can show (matched without case,
/// `_` and `-`, so `read_file`, `ReadFile` and `read-file` are one).
fn reach(name: &str) -> Reach {
    let key: String = name
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect();
    const NAMED: &[&str] = &[
        "read",
        "readfile",
        "view",
        "edit",
        "multiedit",
        "write",
        "writefile",
        "replace",
        "patch",
        "applypatch",
        "notebookedit",
        "notebookread",
        "list",
        "ls",
        "listdirectory",
    ];
    const NOTHING: &[&str] = &[
        "todowrite",
        "todoread",
        "webfetch",
        "websearch",
        "googlewebsearch",
        "savememory",
    ];
    if NAMED.contains(&key.as_str()) {
        Reach::Named
    } else if NOTHING.contains(&key.as_str()) {
        Reach::Nothing
    } else {
        Reach::Anything
    }
}

/// Whether a call naming `target` could have shown `file`. Both are project paths, but a
/// worker in a subdirectory names paths relative to it, and an answer may cite a bare name, so
/// either may be a tail of the other; a directory shows every file under it.
fn shows(target: &str, file: &str) -> bool {
    if target.is_empty() || target == "." {
        return true;
    }
    target == file
        || file.starts_with(&format!("{target}/"))
        || file.ends_with(&format!("/{target}"))
        || target.ends_with(&format!("/{file}"))
        || file.contains(&format!("/{target}/"))
}

/// A path as compared: no `./` in front, no `/` behind.
fn clean_path(path: &str) -> String {
    let mut p = path.trim();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    p.trim_end_matches('/').to_string()
}

/// The files an answer's `FILES CHANGED:` line names (the format `prompt.rs` asks for: the
/// files, or `none`), with the bullet lines that follow an empty one. `None` when the answer has
/// no such line: then there is nothing to compare.
pub fn files_changed_claim(answer: &str) -> Option<Vec<String>> {
    let mut lines = answer.lines();
    let mut found = None;
    while let Some(line) = lines.next() {
        let Some(rest) = after_label(line) else {
            continue;
        };
        let mut files = split_files(rest);
        if rest.trim().is_empty() {
            // The files listed below the label, one bullet each.
            for next in lines.by_ref() {
                let Some(item) = bullet(next) else { break };
                files.extend(split_files(item));
            }
        }
        // The last such line is the worker's final word.
        found = Some(files);
    }
    found
}

/// The text after a `FILES CHANGED:` label (markdown emphasis and a bullet allowed around it).
fn after_label(line: &str) -> Option<&str> {
    let t = line.trim().trim_start_matches(['-', '*', '#', ' ']);
    const LABEL: &str = "files changed";
    let head = t.get(..LABEL.len())?;
    if !head.eq_ignore_ascii_case(LABEL) {
        return None;
    }
    let rest = t.get(LABEL.len()..)?.trim_start_matches('*');
    rest.strip_prefix(':')
        .map(|r| r.trim_start_matches('*').trim())
}

/// The item of a `- a.py` or `* a.py` line.
fn bullet(line: &str) -> Option<&str> {
    let t = line.trim();
    t.strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .map(str::trim)
}

/// The paths of a list such as `a.py, src/b.py (new)` or `` `a.py` and `b.py` ``; `none` (or
/// an empty list) is no path.
fn split_files(list: &str) -> Vec<String> {
    let without_notes = drop_parentheses(list);
    without_notes
        .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .map(|w| {
            w.trim_matches(|c: char| "`'\"*[]<>".contains(c))
                .trim_end_matches(['.', ':'])
        })
        .map(strip_line_suffix)
        .filter(|w| !w.is_empty())
        .filter(|w| {
            !["none", "and", "n/a", "nothing", "no", "files", "changes"]
                .contains(&w.to_ascii_lowercase().as_str())
        })
        .map(clean_path)
        .collect()
}

/// `a.py:12` → `a.py` (a claim may cite where it changed a file).
fn strip_line_suffix(word: &str) -> &str {
    match word.split_once(':') {
        Some((path, line))
            if !line.is_empty() && line.chars().all(|c| c.is_ascii_digit() || c == '-') =>
        {
            path
        }
        _ => word,
    }
}

/// `a.py (new file), b.py` → `a.py , b.py`: notes in parentheses are not files.
fn drop_parentheses(text: &str) -> String {
    let mut depth = 0u32;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Files claimed that no change touches, and changed files no claim names, each in its
/// list's order. `changed` holds every path the diff touched (a rename's both names, the
/// ignored and secret-looking files Pitroom saw changed but keeps out of the patch).
pub fn compare_changed(claimed: &[String], changed: &[String]) -> (Vec<String>, Vec<String>) {
    let same =
        |a: &str, b: &str| a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"));
    let claimed_not_changed = claimed
        .iter()
        .filter(|c| !changed.iter().any(|p| same(c, p)))
        .cloned()
        .collect();
    let changed_not_claimed = changed
        .iter()
        .filter(|p| !claimed.iter().any(|c| same(c, p)))
        .cloned()
        .collect();
    (claimed_not_changed, changed_not_claimed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, target: &str) -> ToolCallSeen {
        ToolCallSeen {
            name: name.into(),
            target: target.into(),
        }
    }

    fn paths(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_read_run_that_answered_with_no_tool_call_answered_without_reading() {
        assert!(answered_without_reading(true, true, true, 0));
        assert!(!answered_without_reading(true, true, true, 1));
        // Not a read run, not done, or no answer: nothing claimed from the tree.
        assert!(!answered_without_reading(false, true, true, 0));
        assert!(!answered_without_reading(true, false, true, 0));
        assert!(!answered_without_reading(true, true, false, 0));
    }

    #[test]
    fn a_cited_file_a_call_read_or_listed_is_read() {
        let cited = paths(&["calc.py", "src/a/b.py", "docs/x.md"]);
        let calls = [
            call("read", "calc.py"),
            call("list", "src/"),
            call("todowrite", "[]"),
        ];
        assert_eq!(unread_citations(&cited, &calls), paths(&["docs/x.md"]));
    }

    #[test]
    fn a_subdirectory_path_or_a_bare_name_matches_by_its_tail() {
        let calls = [call("Read", "pkg/calc.py"), call("read_file", "./lib/u.py")];
        assert!(unread_citations(&paths(&["sub/pkg/calc.py", "u.py"]), &calls).is_empty());
        assert!(unread_citations(&paths(&["a/lib/x/y.py"]), &[call("ls", "lib")]).is_empty());
        // The project root, named as `.` or as nothing, shows every file.
        assert!(unread_citations(&paths(&["a.py"]), &[call("list", ".")]).is_empty());
    }

    #[test]
    fn a_search_or_shell_or_unknown_tool_could_have_shown_any_file() {
        let cited = paths(&["calc.py"]);
        for name in [
            "grep",
            "Glob",
            "bash",
            "task",
            "command_execution",
            "mystery",
        ] {
            assert!(
                unread_citations(&cited, &[call(name, "x")]).is_empty(),
                "{name}"
            );
        }
    }

    #[test]
    fn no_tool_call_leaves_every_cited_file_unread_each_once() {
        let cited = paths(&["a.py", "./a.py", "b.py"]);
        assert_eq!(unread_citations(&cited, &[]), paths(&["a.py", "b.py"]));
    }

    #[test]
    fn files_changed_reads_a_list_none_bullets_and_notes() {
        let claim = |a: &str| files_changed_claim(a);
        assert_eq!(claim("SUMMARY: x\nno list"), None);
        assert_eq!(claim("SUMMARY: x\nFILES CHANGED: none"), Some(vec![]));
        assert_eq!(claim("FILES CHANGED: None."), Some(vec![]));
        assert_eq!(
            claim("FILES CHANGED: `a.py`, src/b.py (new file) and c.rs:12."),
            Some(paths(&["a.py", "src/b.py", "c.rs"]))
        );
        assert_eq!(
            claim("**FILES CHANGED:**\n- a.py\n- ./b.py\n\nOPEN ISSUES: none"),
            Some(paths(&["a.py", "b.py"]))
        );
        assert_eq!(
            claim("files changed: a.py\nFILES CHANGED: b.py"),
            Some(paths(&["b.py"]))
        );
    }

    #[test]
    fn a_claim_is_compared_both_ways_with_the_diff() {
        let (named, unnamed) = compare_changed(&paths(&["a.py"]), &paths(&["b.py"]));
        assert_eq!((named, unnamed), (paths(&["a.py"]), paths(&["b.py"])));
        let (named, unnamed) =
            compare_changed(&paths(&["/w/repo/src/a.py"]), &paths(&["src/a.py"]));
        assert!(named.is_empty() && unnamed.is_empty());
    }

    #[test]
    fn each_flag_is_one_warning_line_saying_what_happened() {
        let claims = Claims {
            no_tool_call: true,
            unread_citations: paths(&["src/x.py"]),
            claimed_not_changed: paths(&["a.py"]),
            changed_not_claimed: paths(&["b.py"]),
        };
        assert_eq!(
            claims.warnings(),
            [
                "answered without reading: no tool call in a read run",
                "cites src/x.py, which no tool call read",
                "FILES CHANGED names a.py, which the diff does not change; the diff changes b.py, which it does not name",
            ]
        );
        let only_unnamed = Claims {
            changed_not_claimed: paths(&["b.py"]),
            ..Claims::default()
        };
        assert_eq!(
            only_unnamed.warnings(),
            ["the diff changes b.py, which FILES CHANGED does not name"]
        );
        assert!(Claims::default().warnings().is_empty());
    }

    fn record(mode: Mode, answer: &str, tool_calls: u32) -> RunRecord {
        let spec = crate::record::RunSpec::new("t", mode, "opencode", "/w");
        let mut r = RunRecord::new(
            "r1".into(),
            spec,
            "2026-01-01T00:00:00Z".parse().expect("a stamp"),
        );
        r.state = RunState::Done;
        r.answer = Some(answer.into());
        r.tally.tool_calls = tool_calls;
        r
    }

    #[test]
    fn a_read_run_with_no_call_is_flagged_once_not_per_citation() {
        let r = record(Mode::Read, "SUMMARY: calc.py:1", 0);
        let claims = assess(&r, &paths(&["calc.py"]), &[], true);
        assert!(claims.no_tool_call);
        assert!(claims.unread_citations.is_empty());
    }

    #[test]
    fn a_follow_up_a_review_or_an_attachment_may_know_files_without_a_call() {
        let mut r = record(Mode::Read, "SUMMARY: calc.py:1", 0);
        r.spec.parent = Some("r0".into());
        assert!(assess(&r, &paths(&["calc.py"]), &[], true).is_clear());
        let mut r = record(Mode::Read, "SUMMARY: calc.py:1", 1);
        r.spec.review_of = Some("r0".into());
        assert!(assess(&r, &paths(&["calc.py"]), &[call("read", "x.py")], true).is_clear());
        // A hand-off: the earlier worker's reads are not in this attempt's calls.
        let r = record(Mode::Read, "SUMMARY: calc.py:1", 1);
        assert!(assess(&r, &paths(&["calc.py"]), &[call("read", "x.py")], false).is_clear());
    }

    #[test]
    fn files_changed_is_checked_only_in_runs_that_may_change_files() {
        let mut r = record(Mode::Isolate, "SUMMARY: x\nFILES CHANGED: a.py", 1);
        r.changes = vec![crate::record::ChangedFile {
            status: 'R',
            path: "b.py".into(),
            old_path: Some("a.py".into()),
            added: None,
            deleted: None,
        }];
        let claims = assess(&r, &[], &[call("bash", "mv a.py b.py")], true);
        assert!(claims.claimed_not_changed.is_empty());
        assert_eq!(claims.changed_not_claimed, paths(&["b.py"]));
        r.spec.mode = Mode::Read;
        assert!(assess(&r, &[], &[call("bash", "x")], true).is_clear());
        // No FILES CHANGED line: nothing to compare.
        let mut r = record(Mode::Write, "SUMMARY: done", 1);
        r.secret_changes = vec![".env".into()];
        assert!(assess(&r, &[], &[call("bash", "x")], true).is_clear());
    }

    #[test]
    fn a_record_written_before_claims_reads_with_none_and_writes_none() {
        let old = serde_json::json!({
            "version": 1, "id": "r1", "state": "done",
            "spec": {"task": "t", "mode": "read", "backend": "opencode", "dir": "/w",
                     "web": false, "timeout_secs": 60.0, "watchdog_secs": 60.0, "background": false,
                     "allow_non_git": false, "primary": "sonnet"},
            "created_at": "2026-01-01T00:00:00Z", "answer": "SUMMARY: x",
            "warnings": ["an old warning"]
        });
        let r: RunRecord = serde_json::from_value(old).unwrap();
        assert!(r.claims.is_clear());
        assert_eq!(r.warnings, ["an old warning"]);
        let back = serde_json::to_value(&r).unwrap();
        assert!(back.get("claims").is_none(), "a clear check adds no key");
        let mut flagged = r;
        flagged.claims.no_tool_call = true;
        let json = serde_json::to_value(&flagged).unwrap();
        assert_eq!(json["claims"], serde_json::json!({"no_tool_call": true}));
    }

    #[test]
    fn many_unread_citations_are_counted_past_the_first_few() {
        let claims = Claims {
            unread_citations: (0..8).map(|i| format!("f{i}.py")).collect(),
            ..Claims::default()
        };
        let lines = claims.warnings();
        assert_eq!(lines.len(), UNREAD_LINES + 1);
        assert_eq!(
            lines[UNREAD_LINES],
            "cites 3 more file(s) no tool call read"
        );
    }
}
