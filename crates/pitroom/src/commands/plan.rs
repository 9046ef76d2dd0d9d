//! `pitroom plan status` and `pitroom plan note`.

use pitroom_core::exit::Exit;
use pitroom_service::plan::PlanStatus;

use super::Outcome;
use crate::cli::{PlanArgs, PlanCommand};
use crate::output;
use crate::output::{say, say_raw};

pub(super) fn plan(args: PlanArgs) -> Outcome {
    let service = super::service()?;
    match args.command {
        PlanCommand::Status { plan, json } => {
            let status = service.plan_status(&plan)?;
            if json {
                output::json(&status);
            } else {
                say_raw!("{}", render(&status));
            }
        }
        PlanCommand::Note {
            plan,
            text,
            step,
            json,
        } => {
            let note = service.plan_note(&plan, step, &text.join(" "))?;
            if json {
                output::json(&note);
            } else {
                say!("pitroom: noted on {}", plan.display());
            }
        }
    }
    Ok(Exit::Ok)
}

/// One block per step: `Task N: title [tier]`, then what its runs say.
fn render(status: &PlanStatus) -> String {
    let mut out = format!("plan {}\n", status.plan.display());
    for step in &status.steps {
        out.push_str(&format!("\nTask {}: {}", step.number, step.title));
        if let Some(w) = &step.worker {
            out.push_str(&format!("  [{w}]"));
        }
        out.push('\n');
        if step.runs.is_empty() {
            out.push_str("  not started\n");
        } else {
            out.push_str(&format!(
                "  {} · {} round{} · {}{}\n",
                step.state.as_deref().unwrap_or("?"),
                step.rounds,
                if step.rounds == 1 { "" } else { "s" },
                if step.applied {
                    "applied"
                } else {
                    "not applied"
                },
                step.runs
                    .last()
                    .map(|id| format!(" · last run {id}"))
                    .unwrap_or_default()
            ));
        }
        if let Some(s) = &step.status {
            out.push_str(&format!("  STATUS: {s}\n"));
        }
        if let Some(v) = &step.verdict {
            out.push_str(&format!("  review: {v}\n"));
        }
        if let Some(n) = &step.note {
            out.push_str(&format!("  note: {n}\n"));
        }
    }
    let general: Vec<_> = status.notes.iter().filter(|n| n.step.is_none()).collect();
    if let Some(last) = general.last() {
        out.push_str(&format!("\nnote: {}\n", last.text));
    }
    out
}
