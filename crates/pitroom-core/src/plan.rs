//! Markdown plans (`run --plan PLAN --step N`, `plan status`): a plan is a markdown file whose
//! steps are `### Task N: title` sections, each optionally naming the tier that should do it in
//! a `**Worker:** tier` line. Headings inside fenced code blocks are not steps.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A run's place in a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRef {
    /// The plan file, absolute.
    pub path: PathBuf,
    pub step: u32,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub number: u32,
    pub title: String,
    /// The `**Worker:** …` line's value: a tier name (or a target).
    pub worker: Option<String>,
    /// The section's text below its heading, up to the next step or heading of its level.
    pub body: String,
}

/// The steps of a plan, in file order.
pub fn parse(text: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    // The open fence's marker, while inside a fenced code block.
    let mut fence: Option<&str> = None;
    // Whether the last step's section ended (a heading of its level or higher came).
    let mut closed = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let in_fence = fence.is_some();
        if let Some(marker) = fence_marker(trimmed) {
            fence = match fence {
                Some(open) if trimmed.starts_with(open) => None,
                Some(open) => Some(open),
                None => Some(marker),
            };
        } else if !in_fence {
            if let Some((number, title)) = step_heading(trimmed) {
                steps.push(Step {
                    number,
                    title,
                    worker: None,
                    body: String::new(),
                });
                closed = false;
                continue;
            }
            if ends_section(trimmed) {
                closed = true;
                continue;
            }
        }
        let Some(step) = steps.last_mut().filter(|_| !closed) else {
            continue;
        };
        if !in_fence && step.worker.is_none() {
            step.worker = worker_line(trimmed);
        }
        step.body.push_str(line);
        step.body.push('\n');
    }
    for step in &mut steps {
        step.body = step.body.trim().to_string();
    }
    steps
}

fn fence_marker(line: &str) -> Option<&'static str> {
    if line.starts_with("```") {
        Some("```")
    } else if line.starts_with("~~~") {
        Some("~~~")
    } else {
        None
    }
}

/// `### Task 3: Add the parser` → `(3, "Add the parser")`.
fn step_heading(line: &str) -> Option<(u32, String)> {
    let rest = line.strip_prefix("### ")?.trim_start();
    let rest = rest
        .strip_prefix("Task ")
        .or_else(|| rest.strip_prefix("Step "))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let number = digits.parse().ok()?;
    let title = rest[digits.len()..]
        .trim_start_matches([':', '.', ' ', '-', '—'])
        .trim()
        .to_string();
    Some((number, title))
}

/// `#`, `##` or `###` headings that are not steps end the current step's section.
fn ends_section(line: &str) -> bool {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    (1..=3).contains(&hashes) && line[hashes..].starts_with(' ')
}

/// `**Worker:** cheap` (or `Worker: cheap`) → `cheap`.
fn worker_line(line: &str) -> Option<String> {
    let plain = line.replace("**", "");
    let value = plain.trim().strip_prefix("Worker:")?.trim();
    let word = value
        .split_whitespace()
        .next()?
        .trim_matches(['`', '.', ',']);
    (!word.is_empty()).then(|| word.to_string())
}

/// The `STATUS:` line of a worker's answer (`STATUS: DONE`, `STATUS: BLOCKED — why`).
pub fn status_line(answer: &str) -> Option<String> {
    answer
        .lines()
        .rev()
        .map(|l| l.trim().trim_start_matches("**").replace("**", ""))
        .find_map(|l| l.strip_prefix("STATUS:").map(|s| s.trim().to_string()))
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "# Plan: zero checks

Intro text.

### Task 1: Add a zero check to divide()
**Worker:** cheap

Change `calc.py` so divide raises on 0.

```markdown
### Task 9: not a step (inside a fence)
```

### Task 2: Test it
Worker: `standard`
Write `test_calc.py` cases.

## Notes
These are not part of task 2.
";

    #[test]
    fn steps_are_the_task_headings_outside_fences() {
        let steps = parse(PLAN);
        let numbers: Vec<u32> = steps.iter().map(|s| s.number).collect();
        assert_eq!(numbers, [1, 2]);
        assert_eq!(steps[0].title, "Add a zero check to divide()");
        assert!(
            steps[0].body.contains("### Task 9: not a step"),
            "{}",
            steps[0].body
        );
    }

    #[test]
    fn each_step_names_its_worker_tier() {
        let steps = parse(PLAN);
        assert_eq!(steps[0].worker.as_deref(), Some("cheap"));
        assert_eq!(steps[1].worker.as_deref(), Some("standard"));
    }

    #[test]
    fn a_higher_heading_ends_the_last_step() {
        let steps = parse(PLAN);
        assert!(steps[1].body.contains("Write `test_calc.py` cases."));
        assert!(
            !steps[1].body.contains("not part of task 2"),
            "{}",
            steps[1].body
        );
    }

    #[test]
    fn a_worker_line_inside_a_fence_is_not_the_steps_worker() {
        let steps = parse("### Task 1: x\n```\nWorker: capable\n```\ndo it\n");
        assert_eq!(steps[0].worker, None);
    }

    #[test]
    fn the_status_line_is_the_last_one_in_the_answer() {
        for (answer, want) in [
            (
                "SUMMARY: done\nSTATUS: DONE_WITH_CONCERNS — no tests\n",
                Some("DONE_WITH_CONCERNS — no tests"),
            ),
            ("**STATUS:** BLOCKED", Some("BLOCKED")),
            ("SUMMARY: no status", None),
        ] {
            assert_eq!(status_line(answer).as_deref(), want, "{answer:?}");
        }
    }
}
