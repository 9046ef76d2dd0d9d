//! `pitroom cooldown`: the targets skipped after a rate limit, and until when.

use pitroom_service::Exit;

use super::Outcome;
use crate::cli::CooldownArgs;
use crate::output;
use crate::output::say;

pub(super) fn cooldown(args: CooldownArgs) -> Outcome {
    let service = super::service()?;
    if args.clear {
        let n = service.clear_cooldowns()?;
        if args.json {
            output::json(&serde_json::json!({"cleared": n}));
        } else {
            say!("pitroom: cleared {n} cooldown(s)");
        }
        return Ok(Exit::Ok);
    }
    let cooldowns = service.cooldowns();
    if args.json {
        output::json(&cooldowns.entries);
    } else if cooldowns.entries.is_empty() {
        say!("no target is cooling down");
    } else {
        for (target, c) in &cooldowns.entries {
            say!("{target}  until {}  {}", c.until_short(), c.reason);
        }
    }
    Ok(Exit::Ok)
}
