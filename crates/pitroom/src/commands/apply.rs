//! `pitroom apply` and `pitroom discard`.

use pitroom_core::isolate::{self, IsolateError};
use pitroom_core::{exit, Home, RunRecord};
use pitroom_workers::Mode;

use crate::cli::{ApplyArgs, DiscardArgs};
use crate::output;

fn exit_for(e: &IsolateError) -> i32 {
    match e {
        IsolateError::Conflict(_) => exit::FAILED,
        _ => exit::REFUSED,
    }
}

pub fn apply(args: ApplyArgs) -> i32 {
    let home = super::home();
    if let Some(group) = &args.group {
        return apply_group(&home, group, args.allow_delete, args.json);
    }
    let mut record = match super::load_run(&home, args.run.as_deref()) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match isolate::apply(&home, &mut record, args.allow_delete) {
        Ok(n) => {
            if args.json {
                output::json(&serde_json::json!({"run": record.id, "applied": true, "files": n}));
            } else {
                println!(
                    "pitroom ✔ applied run {}: {n} file{} changed in your tree",
                    record.id,
                    plural(n)
                );
            }
            exit::OK
        }
        Err(e) => {
            output::error(&e);
            exit_for(&e)
        }
    }
}

/// Applies a group's isolated runs in start order, stopping at the first that fails.
fn apply_group(home: &Home, group: &str, allow_delete: bool, json: bool) -> i32 {
    let mut pending: Vec<RunRecord> = home
        .run_ids()
        .iter()
        .filter_map(|id| home.load_settled(id).ok())
        .filter(|r| r.spec.group.as_deref() == Some(group) && r.spec.mode == Mode::Isolate)
        .filter(|r| !r.applied && !r.changes.is_empty())
        .collect();
    if pending.is_empty() {
        output::error(format!(
            "group {group} has no unapplied isolated runs with changes"
        ));
        return exit::REFUSED;
    }
    let mut applied = Vec::new();
    let mut failure = None;
    for (index, record) in pending.iter_mut().enumerate() {
        match isolate::apply(home, record, allow_delete) {
            Ok(_) => applied.push(record.id.clone()),
            Err(e) => {
                failure = Some((index, e));
                break;
            }
        }
    }
    let not_applied: Vec<String> = match &failure {
        Some((at, _)) => pending[*at..].iter().map(|r| r.id.clone()).collect(),
        None => Vec::new(),
    };
    if json {
        output::json(&serde_json::json!({
            "group": group,
            "applied": applied,
            "not_applied": not_applied,
            "error": failure.as_ref().map(|(_, e)| e.to_string()),
        }));
    } else {
        for id in &applied {
            println!("✔ applied {id}");
        }
        if let Some((at, e)) = &failure {
            println!("✘ {}: {e}", pending[*at].id);
            println!("not applied: {}", not_applied.join(", "));
        }
    }
    match failure {
        None => exit::OK,
        Some((_, e)) => exit_for(&e),
    }
}

pub fn discard(args: DiscardArgs) -> i32 {
    let home = super::home();
    let mut record = match super::load_run(&home, args.run.as_deref()) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match isolate::discard(&home, &mut record) {
        Ok(()) => {
            if args.json {
                output::json(&serde_json::json!({"run": record.id, "discarded": true}));
            } else {
                println!(
                    "pitroom ✔ discarded the copy of run {id}; its patch stays: pitroom show --patch {id}",
                    id = record.id
                );
            }
            exit::OK
        }
        Err(e) => {
            output::error(&e);
            exit_for(&e)
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
