//! `pitroom run` (and a bare task), plus the hidden background supervisor: flags → a
//! `RunRequest` → the run library → the report.

use std::io::Read;

use pitroom_service::{Exit, Mode, RunRecord, RunRequest};

use super::Outcome;
use crate::cli::{ModeFlags, ModelsArgs, RunArgs, SuperviseArgs, WorkerOptions};
use crate::error::CliError;
use crate::output::{self, Progress};
use crate::output::{say, tell};

pub(super) fn run(args: RunArgs) -> Outcome {
    let service = super::service()?;
    let request = request(&args)?;
    if !args.race.is_empty() {
        return super::race::race(&service, &request, &args.race, args.review, args.json);
    }
    let resolved = service.resolve(&request)?;
    carry_out(&service, resolved, args.bg, args.json)
}

/// Shows the resolution's warnings, then starts the run in the background (printing its id)
/// or carries it out here (printing its report). A run that ended badly is its outcome.
pub(super) fn carry_out(
    service: &pitroom_service::Service,
    resolved: pitroom_service::Resolved,
    background: bool,
    json: bool,
) -> Outcome {
    for w in &resolved.warnings {
        output::warning(w);
    }
    if background {
        let record = service.start_background(resolved.spec)?;
        // No report will follow: say now what the report would have said.
        for w in &record.warnings {
            output::warning(w);
        }
        print_started(&record, json);
        return Ok(Exit::Ok);
    }
    let mut progress = Progress::new(!json);
    let outcome = service.run_foreground(resolved.spec, &mut progress);
    progress.finish();
    let (record, notes) = outcome?;
    for n in notes {
        output::warning(n);
    }
    if let Some(problem) = &record.unsaved {
        output::error(format!(
            "{problem}; the run's record is not on disk, so this report is its only account"
        ));
    }
    if json {
        output::json(&record);
    } else {
        output::report(service, &record);
    }
    Ok(record.exit())
}

fn print_started(record: &RunRecord, json: bool) {
    if json {
        output::json(record);
    } else {
        say!("{}", record.id);
        tell!(
            "pitroom: started run {id} in the background; follow it with: pitroom wait {id}   (or: pitroom status {id})",
            id = record.id
        );
    }
}

/// The run library's request for these flags (the task read from argv, a file or stdin).
pub(super) fn request(args: &RunArgs) -> Result<RunRequest, CliError> {
    Ok(RunRequest {
        task: read_task(args)?,
        background: args.bg,
        continue_run: args.continue_run.clone(),
        group: args.group.clone(),
        // On the command line a relative path is the shell's, whatever -d says.
        files: args
            .files
            .iter()
            .map(|f| match std::env::current_dir() {
                Ok(cwd) if f.is_relative() => cwd.join(f),
                _ => f.clone(),
            })
            .collect(),
        plan: args.plan.clone().zip(args.step),
        max_usd: args.caps.max_usd,
        max_tokens: args.caps.max_tokens,
        ..options(&args.mode, &args.worker)
    })
}

/// What the flags `run` and `crew` share say about a run.
pub(super) fn options(mode: &ModeFlags, worker: &WorkerOptions) -> RunRequest {
    let mode = if mode.write {
        Some(Mode::Write)
    } else if mode.isolate {
        Some(Mode::Isolate)
    } else if mode.read {
        Some(Mode::Read)
    } else {
        None
    };
    RunRequest {
        mode,
        worker: worker.worker.clone(),
        model: worker.model.clone(),
        tier: worker.tier.clone(),
        effort: worker.effort.clone(),
        dir: worker.dir.clone(),
        timeout: worker.timeout.clone(),
        web: worker.web,
        allow_non_git: worker.allow_non_git,
        link: worker.link.clone(),
        verify: worker.verify.clone(),
        attempts: worker.attempts,
        no_fallback: worker.no_fallback,
        no_hold: worker.no_hold,
        ..RunRequest::default()
    }
}

/// The task from argv, `--task-file`, or stdin when it is exactly `-`.
fn read_task(args: &RunArgs) -> Result<String, CliError> {
    if let Some(file) = &args.task_file {
        return std::fs::read_to_string(file)
            .map_err(|e| CliError::usage(format!("--task-file {}: {e}", file.display())));
    }
    if args.task.len() == 1 && args.task[0] == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::usage(format!("reading the task from stdin: {e}")))?;
        return Ok(text);
    }
    Ok(args.task.join(" "))
}

/// `pitroom __supervise ID`: carries out a run prepared by `run --bg`.
pub(super) fn supervise(args: SuperviseArgs) -> Outcome {
    #[cfg(feature = "test-fakes")]
    wait_at_test_gate();
    let service = super::service()?;
    // SAFETY: the descriptors were handed down by `run --bg` (or `crew`) for exactly this run.
    let record = unsafe { service.run_detached(&args.id, args.lock_fd, args.ticket_fd) }?;
    Ok(record.exit())
}

/// Test builds only (`test-fakes`): with `PITROOM_TEST_SUPERVISE_GATE` set to a path, the
/// supervisor waits for that file before it claims its run, so a test can land a `pitroom stop`
/// in the window between `run --bg` and the claim instead of hoping to hit it. Bounded, so a
/// test that forgets to open the gate fails on its run rather than leaving a process behind.
#[cfg(feature = "test-fakes")]
fn wait_at_test_gate() {
    let Some(gate) = std::env::var_os(pitroom_env::PITROOM_TEST_SUPERVISE_GATE) else {
        return;
    };
    let gate = std::path::PathBuf::from(gate);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !gate.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// `pitroom models [worker]`: what the worker's CLI offers; without a worker, every one.
pub(super) fn models(args: ModelsArgs) -> Outcome {
    // Without a name: what every worker offers (the same as --all).
    let Some(worker) = args.worker.filter(|_| !args.all) else {
        return all_models(args.json);
    };
    let listed = super::service()?.models(Some(&worker))?;
    super::history::print_models(&listed.backend, &listed.models, args.json);
    Ok(Exit::Ok)
}

/// `pitroom models --all`: every backend with an adapter, its models as its CLI lists them, or
/// the reason it cannot (not installed, no listing). Exit 0 as long as the listing itself ran.
fn all_models(json: bool) -> Outcome {
    let service = super::service()?;
    let mut rows = Vec::new();
    for (backend, listed) in service.all_models() {
        if json {
            rows.push(match listed {
                Ok(models) => super::history::models_value(backend, &models),
                Err(e) => {
                    serde_json::json!({"worker": backend, "models": [], "error": e.to_string()})
                }
            });
        } else {
            match listed {
                Ok(models) => super::history::print_models(backend, &models, false),
                Err(e) => say!("{backend}: {e}"),
            }
        }
    }
    if json {
        output::json(&serde_json::json!({"workers": rows}));
    }
    Ok(Exit::Ok)
}
