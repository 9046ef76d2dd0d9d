//! `pitroom crew`: several background runs started as one group.

use pitroom_core::exit::Exit;
use pitroom_service::runs::split_tasks;
use pitroom_service::{CrewOutcome, RunRequest};
use serde_json::json;

use super::Outcome;
use crate::cli::CrewArgs;
use crate::error::CliError;
use crate::output;
use crate::output::{say, tell};

pub(super) fn crew(args: CrewArgs) -> Outcome {
    let tasks = read_tasks(&args)?;
    let service = super::service()?;
    let outcome = service.start_crew(&template(&args), &tasks, args.group.as_deref())?;
    for w in &outcome.warnings {
        output::warning(w);
    }
    match &outcome.error {
        None => {
            print_group(&outcome, args.json);
            Ok(Exit::Ok)
        }
        Some(e) => {
            let error = CliError::from(e.clone());
            Err(match partial(&outcome) {
                Some(line) => error.then(line),
                None => error,
            })
        }
    }
}

/// The tasks from the arguments, or from a file split by `---` lines.
fn read_tasks(args: &CrewArgs) -> Result<Vec<String>, CliError> {
    match &args.task_file {
        Some(file) => std::fs::read_to_string(file)
            .map(|text| split_tasks(&text))
            .map_err(|e| CliError::usage(format!("--task-file {}: {e}", file.display()))),
        None => Ok(args
            .tasks
            .iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect()),
    }
}

/// What every run of the crew shares, as `pitroom run --bg -g GROUP` would be given it.
fn template(args: &CrewArgs) -> RunRequest {
    RunRequest {
        background: true,
        crew_max_usd: args.caps.max_usd,
        crew_max_tokens: args.caps.max_tokens,
        max_usd: args.each_max_usd,
        max_tokens: args.each_max_tokens,
        ..super::run::options(&args.mode, &args.worker)
    }
}

fn print_group(outcome: &CrewOutcome, json: bool) {
    let group = &outcome.group;
    if json {
        output::json(&json!({
            "group": group,
            "runs": outcome.started.iter().map(|r| json!({"run": r.id, "task": r.spec.task})).collect::<Vec<_>>(),
        }));
        return;
    }
    for r in &outcome.started {
        say!("{}", r.id);
    }
    tell!(
        "pitroom: started {} run(s) in group {group}; follow them with: pitroom watch -g {group}   (or: pitroom wait -g {group})",
        outcome.started.len()
    );
}

/// A crew that failed part-way: the runs already started go on; the line that says which.
fn partial(outcome: &CrewOutcome) -> Option<String> {
    if outcome.started.is_empty() {
        return None;
    }
    Some(format!(
        "pitroom: {} run(s) of group {} were started before the error and go on: {}",
        outcome.started.len(),
        outcome.group,
        outcome
            .started
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    ))
}
