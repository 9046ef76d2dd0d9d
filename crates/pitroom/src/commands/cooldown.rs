//! `pitroom cooldown`: the targets skipped after a rate limit, and until when.

use pitroom_core::cooldown::Cooldowns;
use pitroom_core::exit;

use crate::cli::CooldownArgs;
use crate::output;
use crate::output::say;

pub(super) fn cooldown(args: CooldownArgs) -> i32 {
    let home = super::home();
    if args.clear {
        return match Cooldowns::clear(&home) {
            Ok(n) => {
                if args.json {
                    output::json(&serde_json::json!({"cleared": n}));
                } else {
                    say!("pitroom: cleared {n} cooldown(s)");
                }
                exit::OK
            }
            Err(e) => {
                output::error(format!(
                    "cannot clear the cooldowns in {}: {e}",
                    home.root.display()
                ));
                exit::REFUSED
            }
        };
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
    exit::OK
}
