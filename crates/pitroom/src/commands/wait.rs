//! `pitroom status`, `pitroom wait` and `pitroom stop`, for one run, several, or a group.

use std::time::{Duration, Instant};

use pitroom_core::duration::parse_duration;
use pitroom_core::exit::Exit;
use pitroom_core::{report, RunRecord};
use pitroom_service::runs::set_exit;
use pitroom_service::{Selector, Service};

use super::Outcome;
use crate::cli::{StatusArgs, StopArgs, WaitArgs};
use crate::error::CliError;
use crate::output;
use crate::output::{say, tell};

/// How long `stop` waits for the supervisors to record `stopped`.
const STOP_SETTLE: Duration = Duration::from_secs(15);

fn print_one(service: &Service, record: &RunRecord, json: bool, brief: bool) {
    if json {
        output::json(record);
    } else if brief {
        say!("{}", report::brief(record));
    } else {
        output::report(service, record);
    }
}

/// Several runs: one line each and a count, or a JSON array.
fn print_table(records: &[RunRecord], json: bool) {
    if json {
        output::json(&records);
        return;
    }
    for r in records {
        say!("{}", report::brief(r));
    }
    say!("{}", tally_line(records));
}

/// `6 runs: 4 done, 1 failed, 1 running`.
pub(super) fn tally_line(records: &[RunRecord]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for r in records {
        let state = r.state.as_str();
        match counts.iter_mut().find(|(s, _)| *s == state) {
            Some((_, n)) => *n += 1,
            None => counts.push((state, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    format!("{} runs: {}", records.len(), parts.join(", "))
}

pub(super) fn status(args: StatusArgs) -> Outcome {
    let service = super::service()?;
    let single = args.group.is_none() && args.runs.len() <= 1;
    let selector = service.select(&args.runs, args.group.as_deref())?;
    let records = super::load_selected(&service, &selector);
    match records.as_slice() {
        [one] if single => print_one(&service, one, args.json, false),
        _ => print_table(&records, args.json),
    }
    Ok(set_exit(&records))
}

pub(super) fn wait(args: WaitArgs) -> Outcome {
    let limit =
        parse_duration(&args.timeout).map_err(|why| CliError::usage(format!("--timeout {why}")))?;
    let service = super::service()?;
    let single = args.group.is_none() && args.runs.len() <= 1;
    let selector = service.select(&args.runs, args.group.as_deref())?;
    let outcome = service.wait(&selector, Instant::now() + limit, args.any);
    if outcome.satisfied {
        return Ok(report_finished(
            &service,
            &outcome.records,
            single,
            &args,
            &selector,
        ));
    }
    print_set_brief(&outcome.records, single, args.json);
    tell!(
        "pitroom: {} run(s) still active; call again: {}",
        outcome.active(),
        wait_again(&selector, &outcome.records)
    );
    Ok(Exit::StillRunning)
}

fn report_finished(
    service: &Service,
    records: &[RunRecord],
    single: bool,
    args: &WaitArgs,
    selector: &Selector,
) -> Exit {
    let finished: Vec<RunRecord> = records
        .iter()
        .filter(|r| !r.state.is_active())
        .cloned()
        .collect();
    match records {
        [one] if single => print_one(service, one, args.json, args.brief),
        _ if args.json => output::json(&records),
        _ => {
            for r in &finished {
                if args.brief {
                    say!("{}", report::brief(r));
                } else {
                    output::report(service, r);
                    say!();
                }
            }
        }
    }
    let active = records.len() - finished.len();
    if active > 0 {
        tell!(
            "pitroom: {active} still active: {}",
            wait_again(selector, records)
        );
    }
    set_exit(&finished)
}

fn print_set_brief(records: &[RunRecord], single: bool, json: bool) {
    match records {
        [one] if single && json => output::json(one),
        _ if json => output::json(&records),
        _ => {
            for r in records {
                say!("{}", report::brief(r));
            }
        }
    }
}

/// The command that waits for what is left.
fn wait_again(selector: &Selector, records: &[RunRecord]) -> String {
    match selector {
        Selector::Group(g) => format!("pitroom wait -g {g}"),
        _ => {
            let active: Vec<&str> = records
                .iter()
                .filter(|r| r.state.is_active())
                .map(|r| r.id.as_str())
                .collect();
            format!("pitroom wait {}", active.join(" "))
        }
    }
}

/// `pitroom stop [run | -g NAME]`: asks each active run's supervisor to stop (it ends the
/// worker's whole tree, or leaves the queue, and records `stopped`), then waits up to 15 s.
pub(super) fn stop(args: StopArgs) -> Outcome {
    let service = super::service()?;
    let given: Vec<String> = args.run.iter().cloned().collect();
    let selector = service.select(&given, args.group.as_deref())?;
    let records = service.stop(&selector, STOP_SETTLE)?;
    if args.json {
        match records.as_slice() {
            [one] => output::json(one),
            _ => output::json(&records),
        }
    } else {
        for r in &records {
            say!("pitroom: run {} is {}", r.id, r.state.as_str());
        }
    }
    Ok(Exit::Ok)
}
