//! `pitroom revert`: undo exactly a write run's edits.

use pitroom_core::exit::Exit;

use super::Outcome;
use crate::cli::RunRefArgs;
use crate::output;
use crate::output::say;

pub(super) fn revert(args: RunRefArgs) -> Outcome {
    let service = super::service()?;
    let (record, n) = service.revert(args.run.as_deref())?;
    let id = record.id;
    if args.json {
        output::json(&serde_json::json!({"run": id, "reverted": true, "files": n}));
    } else {
        say!(
            "pitroom ✔ reverted run {id}: {n} file{} restored",
            if n == 1 { "" } else { "s" }
        );
    }
    Ok(Exit::Ok)
}
