//! Plans: a run tied to a step of a markdown plan (`run --plan PLAN --step N`), the plan's
//! status rebuilt from the run records (`plan status`), and notes kept outside the repository
//! (`plan note`).

use std::io::Write;
use std::path::{Path, PathBuf};

use pitroom_core::plan::{self, PlanRef};
use pitroom_core::{RunRecord, RunState};
use pitroom_workers::Mode;
use serde::{Deserialize, Serialize};

use crate::{Service, ServiceError};

/// What a worker on a plan step is asked to end with, so `plan status` can tell where it stands.
const STATUS_REQUEST: &str = "End your answer with one line: STATUS: DONE, DONE_WITH_CONCERNS, BLOCKED or NEEDS_CONTEXT (with a few words why).";

/// Where one step of a plan stands, from the records of its runs.
#[derive(Debug, Clone, Serialize)]
pub struct StepStatus {
    pub number: u32,
    pub title: String,
    /// The tier the plan names for it.
    pub worker: Option<String>,
    /// Its runs, oldest first (each round of implementation, follow-ups included).
    pub runs: Vec<String>,
    pub rounds: usize,
    /// The state of its latest run.
    pub state: Option<String>,
    /// The latest run's `STATUS:` line.
    pub status: Option<String>,
    /// The latest review verdict of any of its runs.
    pub verdict: Option<String>,
    /// Whether its change is in the tree: an isolated run applied, or a write run not reverted.
    pub applied: bool,
    pub note: Option<String>,
}

/// A plan's steps with their status, and its notes.
#[derive(Debug, Clone, Serialize)]
pub struct PlanStatus {
    pub plan: PathBuf,
    pub steps: Vec<StepStatus>,
    pub notes: Vec<Note>,
}

/// A note on a plan (or on one of its steps).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Note {
    pub time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    pub text: String,
}

/// The task of a plan step: the text given, or else the step's own section; plus its plan
/// reference and the tier the plan names.
pub(crate) fn step_task(
    path: &Path,
    number: u32,
    given: &str,
) -> Result<(PlanRef, String, Option<String>), ServiceError> {
    let (path, steps) = read_plan(path)?;
    let Some(step) = steps.iter().find(|s| s.number == number) else {
        let numbers: Vec<String> = steps.iter().map(|s| s.number.to_string()).collect();
        return Err(ServiceError::usage(format!(
            "{} has no task {number} (its tasks: {}); steps are `### Task N: title` headings",
            path.display(),
            if numbers.is_empty() {
                "none".into()
            } else {
                numbers.join(", ")
            }
        )));
    };
    let task = if given.trim().is_empty() {
        format!(
            "Task {number} of the plan {}: {}\n\n{}\n\n{STATUS_REQUEST}",
            path.display(),
            step.title,
            step.body
        )
    } else {
        format!("{}\n\n{STATUS_REQUEST}", given.trim_end())
    };
    Ok((PlanRef { path, step: number }, task, step.worker.clone()))
}

/// The plan's absolute path and steps.
fn read_plan(path: &Path) -> Result<(PathBuf, Vec<plan::Step>), ServiceError> {
    let absolute = path.canonicalize().map_err(|e| {
        ServiceError::usage(format!(
            "plan {}: {e}; give the plan's markdown file",
            path.display()
        ))
    })?;
    let text = std::fs::read_to_string(&absolute)
        .map_err(|e| ServiceError::usage(format!("plan {}: {e}", absolute.display())))?;
    Ok((absolute, plan::parse(&text)))
}

impl Service {
    /// Each step of the plan with what its runs say, and the plan's notes.
    pub fn plan_status(&self, path: &Path) -> Result<PlanStatus, ServiceError> {
        let (path, steps) = read_plan(path)?;
        let records = self.plan_records(&path);
        let notes = self.plan_notes(&path)?;
        let steps = steps
            .iter()
            .map(|step| step_status(step, &records, &notes))
            .collect();
        Ok(PlanStatus {
            plan: path,
            steps,
            notes,
        })
    }

    /// Keeps a note on the plan (or one step) in the state directory, never in the repository.
    pub fn plan_note(
        &self,
        path: &Path,
        step: Option<u32>,
        text: &str,
    ) -> Result<Note, ServiceError> {
        if text.trim().is_empty() {
            return Err(ServiceError::usage(
                "the note is empty; say what to remember",
            ));
        }
        let (path, steps) = read_plan(path)?;
        if let Some(n) = step {
            if !steps.iter().any(|s| s.number == n) {
                return Err(ServiceError::usage(format!(
                    "{} has no task {n}",
                    path.display()
                )));
            }
        }
        let note = Note {
            time: pitroom_core::clock::stamp(),
            step,
            text: text.trim().to_string(),
        };
        let file = self.notes_file(&path);
        let write = || -> std::io::Result<()> {
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut out = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&file)?;
            let line = serde_json::to_string(&note).map_err(std::io::Error::other)?;
            writeln!(out, "{line}")?;
            out.sync_data()
        };
        write().map_err(|e| {
            ServiceError::refused(format!("cannot keep the note in {}: {e}", file.display()))
        })?;
        Ok(note)
    }

    /// The runs tied to the plan, oldest first, and the reviews of them.
    fn plan_records(&self, path: &Path) -> Vec<RunRecord> {
        let home = self.home();
        home.run_ids()
            .iter()
            .filter_map(|id| home.load_settled(id).ok())
            .filter(|r| {
                r.spec.plan.as_ref().is_some_and(|p| p.path == path) || r.spec.review_of.is_some()
            })
            .collect()
    }

    fn plan_notes(&self, path: &Path) -> Result<Vec<Note>, ServiceError> {
        let file = self.notes_file(path);
        match std::fs::read_to_string(&file) {
            Ok(text) => Ok(text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(ServiceError::refused(format!(
                "cannot read the notes {}: {e}",
                file.display()
            ))),
        }
    }

    /// `plans/<name>-<hash>.jsonl`: one file per plan path.
    fn notes_file(&self, path: &Path) -> PathBuf {
        let text = path.to_string_lossy();
        // FNV-1a: stable across releases, unlike the standard library's hasher.
        let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        let name: String = path
            .file_stem()
            .map(|s| {
                s.to_string_lossy()
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect()
            })
            .unwrap_or_default();
        self.home()
            .root
            .join("plans")
            .join(format!("{name}-{hash:016x}.jsonl"))
    }
}

fn step_status(step: &plan::Step, records: &[RunRecord], notes: &[Note]) -> StepStatus {
    let runs: Vec<&RunRecord> = records
        .iter()
        .filter(|r| r.spec.plan.as_ref().is_some_and(|p| p.step == step.number))
        .collect();
    let ids: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
    let latest = runs.last();
    let verdict = records
        .iter()
        .filter(|r| r.spec.review_of.as_ref().is_some_and(|of| ids.contains(of)))
        .filter_map(|r| r.verdict.as_ref())
        .next_back()
        .map(|v| v.line());
    let applied = runs.iter().any(|r| {
        (r.spec.mode == Mode::Isolate && r.patch.is_applied())
            || (r.spec.mode == Mode::Write
                && r.state == RunState::Done
                && !r.changes.is_empty()
                && !r.patch.is_reverted())
    });
    StepStatus {
        number: step.number,
        title: step.title.clone(),
        worker: step.worker.clone(),
        rounds: runs.len(),
        state: latest.map(|r| r.state.as_str().to_string()),
        status: latest
            .and_then(|r| r.answer.as_deref())
            .and_then(plan::status_line),
        verdict,
        applied,
        note: notes
            .iter()
            .rev()
            .find(|n| n.step == Some(step.number))
            .map(|n| n.text.clone()),
        runs: ids,
    }
}
