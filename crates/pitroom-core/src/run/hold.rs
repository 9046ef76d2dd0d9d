//! Holds: a run whose every target is cooling down after a rate limit waits, `held`, until the
//! earliest of them resets, instead of starting a worker that can only fail. Bounded by the
//! spec's `max_hold` (config; `--no-hold` makes it 0, today's behaviour: the last target is
//! tried all the same). A hold takes no worker slot, and a stop ends it like any phase.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Engine, EngineError, Observer};
use crate::cooldown::Cooldowns;
use crate::record::{RunPhase, RunRecord};

/// How often a held run looks at the clock and its stop flag.
const HOLD_SLICE: Duration = Duration::from_millis(200);

impl Engine {
    /// Holds the run while every target of `chain` (as `backend[:model]`) is cooling down and
    /// the earliest reset is within its `max_hold`; returns once one is free (or is not worth
    /// waiting for), `Err(Interrupted)` when a stop came first.
    pub(super) fn hold_while_cooling(
        &self,
        record: &mut RunRecord,
        chain: &[String],
        stop: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<(), EngineError> {
        let limit = record.spec.max_hold;
        let mut held = false;
        loop {
            // Cooldowns last real time: the wall clock, as `Cooldowns` keeps it.
            let now = jiff::Timestamp::now();
            let Some(until) = Cooldowns::load(&self.home).all_cooling_until(chain) else {
                break;
            };
            let wait = Duration::try_from(until.duration_since(now)).unwrap_or_default();
            if wait.is_zero() || (!held && wait > limit) {
                break;
            }
            if !held {
                held = true;
                record.phase = Some(RunPhase::Held);
                record.held_until = Some(until);
                self.save(record)?;
                // A run in the foreground says why nothing happens yet.
                observer.progress(record);
            }
            if stop.load(Ordering::SeqCst) {
                return Err(EngineError::Interrupted);
            }
            std::thread::sleep(wait.min(HOLD_SLICE));
        }
        if held {
            record.phase = Some(RunPhase::Queued);
            self.save(record)?;
        }
        Ok(())
    }
}
