//! The scripted worker's scripts, one per stage: what it reads, edits and answers, with the
//! line numbers of its citations computed from the sample project, so they stay right when
//! the sample changes.

use serde_json::{json, Value};

use super::worker::{Action, Case, ModelCase, Script, Step, Tool, WriteFile};
use super::{CALC, TESTS};

/// The isolated run's edit of calc.py: (old text, new text).
pub(super) const ZERO_CHECK: (&str, &str) = (
    "    return a / b",
    "    if b == 0:\n        raise ValueError(\"divide: b must not be 0\")\n    return a / b",
);

/// The write run's edit of calc.py: (old text, new text).
pub(super) const DOCSTRING: (&str, &str) = (
    "def divide(a, b):\n",
    "def divide(a, b):\n    \"\"\"Return a / b; raise ValueError when b is 0.\"\"\"\n",
);

/// calc.py after the isolated run's zero check.
fn checked() -> String {
    CALC.replacen(ZERO_CHECK.0, ZERO_CHECK.1, 1)
}

/// calc.py after the write run's docstring.
fn documented() -> String {
    checked().replacen(DOCSTRING.0, DOCSTRING.1, 1)
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

/// The read run's answer: one citation right (the division), one wrong (past the end of
/// calc.py), so the report shows Pitroom checking every `path:line`.
pub(super) fn read_answer() -> String {
    let ret = line_of(CALC, "return a / b");
    let lines = CALC.lines().count();
    format!(
        "SUMMARY: divide() fails when b is 0: it returns a / b with no zero check (calc.py:{ret}), so Python raises ZeroDivisionError.\n\
         DETAILS: mean() hands len(xs) to divide(), so mean([]) fails the same way (calc.py:{}).\n\
         FILES CHANGED: none\n\
         VERIFICATION: read calc.py and test_calc.py; no test divides by zero.\n\
         OPEN ISSUES: none",
        lines + 29
    )
}

pub(super) fn follow_up_answer() -> String {
    let def = line_of(CALC, "def mean");
    let ret = line_of(CALC, "return divide(sum(xs)");
    format!(
        "SUMMARY: yes: mean([]) calls divide(0, 0) (calc.py:{ret}), which raises ZeroDivisionError.\n\
         DETAILS: mean() is defined at calc.py:{def}; nothing checks for an empty list before the division.\n\
         FILES CHANGED: none\n\
         VERIFICATION: read calc.py.\n\
         OPEN ISSUES: none"
    )
}

pub(super) fn isolate_answer() -> String {
    let check = line_of(&checked(), "if b == 0");
    format!(
        "SUMMARY: divide() now raises ValueError when b is 0 (calc.py:{check}).\n\
         DETAILS: the check comes before the division, so mean([]) raises ValueError too.\n\
         FILES CHANGED: calc.py\n\
         VERIFICATION: not run (python3 -m unittest would check it).\n\
         OPEN ISSUES: no test covers b == 0 yet."
    )
}

/// The reviewer reads the isolated copy (the zero check in, the docstring not yet) and
/// passes the change with one minor finding, so the report shows a verdict and a checked
/// `path:line` issue.
pub(super) fn review_answer() -> String {
    let check = line_of(&checked(), "if b == 0");
    let test_divide = line_of(TESTS, "def test_divide");
    format!(
        "SUMMARY: the change does what the brief asks: divide() raises ValueError before it divides when b is 0 (calc.py:{check}).\n\
         ISSUES:\n\
         - minor: test_calc.py:{test_divide}: test_divide only divides by 3; no test calls divide(1, 0) to pin the new ValueError.\n\
         FILES CHANGED: none\n\
         SPEC: PASS · QUALITY: APPROVED · ISSUES: critical=0 important=0 minor=1"
    )
}

pub(super) fn write_answer() -> String {
    let doc = line_of(&documented(), "\"\"\"Return a / b");
    format!(
        "SUMMARY: divide() has a docstring now (calc.py:{doc}).\n\
         DETAILS: one line, saying what it returns and when it raises.\n\
         FILES CHANGED: calc.py\n\
         VERIFICATION: none needed: a docstring changes no behaviour.\n\
         OPEN ISSUES: none"
    )
}

/// The crew's answers, in the order of [`CREW_TASKS`]. The crew reads the tree as it is now:
/// with the applied zero check, without the docstring.
pub(super) fn crew_answers() -> [String; 3] {
    let now = checked();
    let add = line_of(&now, "def add");
    let divide = line_of(&now, "def divide");
    let mean = line_of(&now, "def mean");
    let check = line_of(&now, "if b == 0");
    let test_mean = line_of(TESTS, "def test_mean");
    [
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
    ]
}

pub(super) fn read_script() -> Vec<Action> {
    vec![
        tool("read", json!({"filePath": "calc.py"}), CALC),
        step(2140, 64),
        tool(
            "grep",
            json!({"pattern": "divide("}),
            "calc.py\ntest_calc.py",
        ),
        step(2630, 52),
        text(read_answer()),
        step(2810, 118),
    ]
}

pub(super) fn follow_up_script() -> Vec<Action> {
    vec![step(3020, 40), text(follow_up_answer()), step(3105, 84)]
}

fn edit(old_new: (&str, &str)) -> Action {
    tool(
        "edit",
        json!({"filePath": "calc.py", "oldString": old_new.0, "newString": old_new.1}),
        "Edit applied successfully.",
    )
}

pub(super) fn isolate_script() -> Vec<Action> {
    vec![
        tool("read", json!({"filePath": "calc.py"}), CALC),
        step(2200, 71),
        write_file("calc.py", checked()),
        edit(ZERO_CHECK),
        step(2460, 96),
        text(isolate_answer()),
        step(2590, 88),
    ]
}

pub(super) fn review_script() -> Vec<Action> {
    vec![
        tool("read", json!({"filePath": "calc.py"}), &checked()),
        tool("read", json!({"filePath": "test_calc.py"}), TESTS),
        step(3310, 92),
        text(review_answer()),
        step(3480, 104),
    ]
}

pub(super) fn write_script() -> Vec<Action> {
    vec![
        tool("read", json!({"filePath": "calc.py"}), &checked()),
        step(2230, 58),
        write_file("calc.py", documented()),
        edit(DOCSTRING),
        step(2390, 77),
        text(write_answer()),
        step(2470, 63),
    ]
}

/// The tasks of the stages, which also tell the scripted model server which stage a request
/// belongs to.
pub(super) const READ_TASK: &str = "Where can divide fail?";
pub(super) const FOLLOW_UP_TASK: &str = "Does mean() fail the same way?";
pub(super) const ISOLATE_TASK: &str = "Add a zero check to divide()";
pub(super) const WRITE_TASK: &str = "Add a docstring to divide()";
/// How `pitroom review`'s reviewer task begins.
pub(super) const REVIEW_MARK: &str = "Review the change of";

/// The crew's tasks, each with the text of its prompt that selects its actions.
pub(super) const CREW_TASKS: [(&str, &str); 3] = [
    ("List calc.py's public functions", "public functions"),
    ("Which tests cover mean()?", "tests cover mean"),
    ("Find unchecked inputs in calc.py", "unchecked inputs"),
];

pub(super) fn crew_script() -> Script {
    let now = checked();
    Script::ByPrompt {
        by_prompt: CREW_TASKS
            .iter()
            .zip(crew_answers())
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

/// The repair and race stages' task.
pub(super) const MEAN_TASK: &str = "Make mean([]) return 0.0 instead of failing";

/// The check of the repair and race stages: does mean() guard the empty list? Shell builtins
/// only, so the demo needs nothing beyond `sh` (a real project would run its tests).
pub(super) const MEAN_CHECK: &str = "while IFS= read -r line; do case $line in *'if not xs:'*) exit 0;; esac; done < calc.py; echo 'FAIL: mean([]) still calls divide(0, 0)'; exit 1";

/// The model names of the race's two contenders: the quick one misses the empty list.
pub(super) const RACE_MODELS: [&str; 2] = ["pitroom/quick", "pitroom/careful"];

/// calc.py with mean() guarding only `None`: the first round's (and the quick contender's) miss.
fn mean_guarded_wrongly() -> String {
    checked().replacen(
        "def mean(xs):\n",
        "def mean(xs):\n    if xs is None:\n        return 0.0\n",
        1,
    )
}

/// calc.py with mean() returning 0.0 for an empty list.
fn mean_guarded() -> String {
    checked().replacen(
        "def mean(xs):\n",
        "def mean(xs):\n    if not xs:\n        return 0.0\n",
        1,
    )
}

fn mean_attempt(content: String, answer: &str, tokens: (u64, u64)) -> Vec<Action> {
    vec![
        tool("read", json!({"filePath": "calc.py"}), &checked()),
        step(tokens.0, tokens.1),
        write_file("calc.py", content),
        tool(
            "edit",
            json!({"filePath": "calc.py", "oldString": "def mean(xs):"}),
            "Edit applied successfully.",
        ),
        text(answer.to_string()),
        step(tokens.0 + 240, tokens.1 + 60),
    ]
}

/// The repair stage: the first round guards the wrong case, and the check's failure, sent back
/// as the repair prompt, makes the second round fix it.
pub(super) fn repair_script() -> Script {
    Script::ByPrompt {
        by_prompt: vec![
            Case {
                contains: "REPAIR (round 2".into(),
                actions: mean_attempt(
                    mean_guarded(),
                    "SUMMARY: mean() now returns 0.0 for an empty list (calc.py:16); the check passes.\nFILES CHANGED: calc.py",
                    (2950, 84),
                ),
            },
            Case {
                contains: MEAN_TASK.into(),
                actions: mean_attempt(
                    mean_guarded_wrongly(),
                    "SUMMARY: mean() returns 0.0 when it gets no list (calc.py:16).\nFILES CHANGED: calc.py",
                    (2400, 77),
                ),
            },
        ],
    }
}

/// The race stage: two contenders on the same task; only the careful one's check passes.
pub(super) fn race_script() -> Script {
    Script::ByModel {
        by_model: vec![
            ModelCase {
                model: RACE_MODELS[0].into(),
                actions: mean_attempt(
                    mean_guarded_wrongly(),
                    "SUMMARY: guarded mean() (calc.py:16).\nFILES CHANGED: calc.py",
                    (1900, 45),
                ),
            },
            ModelCase {
                model: RACE_MODELS[1].into(),
                actions: mean_attempt(
                    mean_guarded(),
                    "SUMMARY: mean([]) returns 0.0 (calc.py:16).\nFILES CHANGED: calc.py",
                    (2700, 90),
                ),
            },
        ],
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
    fn the_scripted_review_ends_with_a_clean_verdict_and_one_minor_issue() {
        let answer = review_script()
            .into_iter()
            .find_map(|a| match a {
                Action::Text(t) => Some(t),
                _ => None,
            })
            .expect("the reviewer answers");
        let verdict = pitroom_core::verdict::parse(&answer).expect("a verdict line");
        assert_eq!(
            verdict.line(),
            "SPEC PASS · QUALITY APPROVED · critical 0, important 0, minor 1"
        );
        assert!(verdict.clean());
    }
}
