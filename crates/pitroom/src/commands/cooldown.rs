//! `pitroom cooldown`: the targets skipped after a rate limit, and until when.

use pitroom_core::cooldown::Cooldowns;
use pitroom_core::exit::Exit;

use super::Outcome;
use crate::cli::CooldownArgs;
use crate::error::CliError;
use crate::output;
use crate::output::say;

pub(super) fn cooldown(args: CooldownArgs) -> Outcome {
    let home = super::home();
    if args.clear {
        let n = Cooldowns::clear(&home).map_err(|e| {
            CliError::refused(format!(
                "cannot clear the cooldowns in {}: {e}",
                home.root.display()
            ))
        })?;
        if args.json {
            output::json(&serde_json::json!({"cleared": n}));
        } else {
            say!("pitroom: cleared {n} cooldown(s)");
        }
        return Ok(Exit::Ok);
    }
    let cooldowns = Cooldowns::load(&home);
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
