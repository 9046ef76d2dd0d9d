//! `pitroom apply` and `pitroom discard`.

use pitroom_core::exit;

use crate::cli::{ApplyArgs, DiscardArgs};
use crate::output;
use crate::output::say;

pub(super) fn apply(args: ApplyArgs) -> i32 {
    let service = match super::service() {
        Ok(s) => s,
        Err(code) => return code,
    };
    if let Some(group) = &args.group {
        return apply_group(&service, group, args.allow_delete, args.json);
    }
    match service.apply(args.run.as_deref(), args.allow_delete) {
        Ok((record, n)) => {
            if args.json {
                output::json(&serde_json::json!({"run": record.id, "applied": true, "files": n}));
            } else {
                say!(
                    "pitroom ✔ applied run {}: {n} file{} changed in your tree",
                    record.id,
                    plural(n)
                );
            }
            exit::OK
        }
        Err(e) => super::fail(&e),
    }
}

/// Applies a group's isolated runs in start order, stopping at the first that fails.
fn apply_group(
    service: &pitroom_service::Service,
    group: &str,
    allow_delete: bool,
    json: bool,
) -> i32 {
    let outcome = match service.apply_group(group, allow_delete) {
        Ok(o) => o,
        Err(e) => return super::fail(&e),
    };
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
    outcome.exit_code()
}

pub(super) fn discard(args: DiscardArgs) -> i32 {
    let service = match super::service() {
        Ok(s) => s,
        Err(code) => return code,
    };
    match service.discard(args.run.as_deref()) {
        Ok(record) => {
            if args.json {
                output::json(&serde_json::json!({"run": record.id, "discarded": true}));
            } else {
                say!(
                    "pitroom ✔ discarded the copy of run {id}; its patch stays: pitroom show --patch {id}",
                    id = record.id
                );
            }
            exit::OK
        }
        Err(e) => super::fail(&e),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
