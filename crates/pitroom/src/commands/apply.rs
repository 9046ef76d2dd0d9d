//! `pitroom apply` and `pitroom discard`.

use pitroom_core::exit::Exit;
use pitroom_service::changes::Allow;

use super::Outcome;
use crate::cli::{ApplyArgs, RunRefArgs};
use crate::output;
use crate::output::say;

pub(super) fn apply(args: ApplyArgs) -> Outcome {
    let service = super::service()?;
    let allow = Allow {
        delete: args.allow_delete,
        redacted: args.allow_redacted,
        binary: args.allow_binary,
    };
    if let Some(group) = &args.group {
        return apply_group(&service, group, allow, args.json);
    }
    let (record, n) = service.apply(args.run.as_deref(), allow)?;
    if args.json {
        output::json(&serde_json::json!({"run": record.id, "applied": true, "files": n}));
    } else {
        say!(
            "pitroom ✔ applied run {}: {n} file{} changed in your tree",
            record.id,
            plural(n)
        );
    }
    Ok(Exit::Ok)
}

/// Applies a group's isolated runs in start order, stopping at the first that fails.
fn apply_group(
    service: &pitroom_service::Service,
    group: &str,
    allow: Allow,
    json: bool,
) -> Outcome {
    let outcome = service.apply_group(group, allow)?;
    if json {
        output::json(&serde_json::json!({
            "group": group,
            "applied": outcome.applied,
            "not_applied": outcome.not_applied,
            "error": outcome.error.as_ref().map(|(_, e)| e.to_string()),
        }));
    } else {
        for id in &outcome.applied {
            say!("✔ applied {id}");
        }
        if let Some((id, e)) = &outcome.error {
            say!("✘ {id}: {e}");
            say!("not applied: {}", outcome.not_applied.join(", "));
        }
    }
    // The failure is reported with the group's result, on stdout.
    Ok(outcome.exit())
}

pub(super) fn discard(args: RunRefArgs) -> Outcome {
    let service = super::service()?;
    let record = service.discard(args.run.as_deref())?;
    if args.json {
        output::json(&serde_json::json!({"run": record.id, "discarded": true}));
    } else {
        say!(
            "pitroom ✔ discarded the copy of run {id}; its patch stays: pitroom show --patch {id}",
            id = record.id
        );
    }
    Ok(Exit::Ok)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
