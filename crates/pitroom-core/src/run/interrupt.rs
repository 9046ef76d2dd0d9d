//! Interrupt: what ends a run early, in whichever phase it is — a stop (SIGINT, SIGTERM, SIGHUP,
//! or the note `pitroom stop` leaves when it races the start) or the run's deadline
//! (`--timeout`, counted from the moment the run got its slot). Both are flags that every long
//! step watches: the slot wait, each git call (its process group is killed), the copy's
//! builders and lock waits, the worker's and `--verify`'s keepers.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::{EngineError, STOP_REQUESTED};
use crate::duration::format_duration;
use crate::record::{RunPhase, RunRecord, RunState};
use pitroom_workers::Mode;

/// Why a run was interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cause {
    Stopped,
    TimedOut,
}

/// A run's stop and deadline flags, watched by every long step of its life.
pub(super) struct Interrupt {
    stop: Arc<AtomicBool>,
    expired: Arc<AtomicBool>,
    /// Dropping the sender wakes the deadline's timer, which then ends without firing.
    _cancel_deadline: Option<mpsc::Sender<()>>,
    _git: [pitroom_git::Interrupting; 2],
}

impl Interrupt {
    /// Catches the stop signals and lets both flags interrupt git. Must come before the pid is
    /// published: a `pitroom stop` that reads the pid must find a process that turns SIGTERM
    /// into a clean stop, not one it kills outright.
    pub(super) fn install() -> Interrupt {
        let stop = Arc::new(AtomicBool::new(false));
        let expired = Arc::new(AtomicBool::new(false));
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // Registration fails only for signals that cannot be caught, which these are not.
            let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
        }
        Interrupt {
            _git: [
                pitroom_git::interrupt_when(Arc::clone(&stop)),
                pitroom_git::interrupt_when(Arc::clone(&expired)),
            ],
            stop,
            expired,
            _cancel_deadline: None,
        }
    }

    /// Takes in the note a `pitroom stop` left before it could signal this process.
    pub(super) fn take_stop_note(&self, run_dir: &Path) {
        if run_dir.join(STOP_REQUESTED).exists() {
            self.stop.store(true, Ordering::SeqCst);
        }
    }

    /// Starts the run's clock: in `limit`, the deadline flag is set, whatever phase the run is
    /// in. A timer thread rather than a check in each loop: git calls and lock waits deep in
    /// other crates watch flags, not clocks.
    pub(super) fn start_deadline(&mut self, limit: Duration) {
        let (cancel, cancelled) = mpsc::channel::<()>();
        let expired = Arc::clone(&self.expired);
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(limit) {
                expired.store(true, Ordering::SeqCst);
            }
        });
        self._cancel_deadline = Some(cancel);
    }

    /// The stop flag alone (the slot wait watches it; no deadline runs while queued).
    pub(super) fn stop_flag(&self) -> &AtomicBool {
        &self.stop
    }

    /// Why the run should end now, if it should.
    pub(super) fn cause(&self) -> Option<Cause> {
        if self.stop.load(Ordering::SeqCst) {
            Some(Cause::Stopped)
        } else if self.expired.load(Ordering::SeqCst) {
            Some(Cause::TimedOut)
        } else {
            None
        }
    }

    /// Fails with [`EngineError::Interrupted`] when the run should end now: between steps that
    /// do not watch the flags themselves.
    pub(super) fn check(&self) -> Result<(), EngineError> {
        match self.cause() {
            Some(_) => Err(EngineError::Interrupted),
            None => Ok(()),
        }
    }

    /// The worker has acted on the interrupt (it was stopped or timed out, and what it did is
    /// kept): lowers the flags so that recording its changes is not cut short by the very same
    /// stop. A later stop interrupts the rest again.
    pub(super) fn acted_on(&self) {
        self.stop.store(false, Ordering::SeqCst);
        self.expired.store(false, Ordering::SeqCst);
    }

    /// Whether `error` is this interrupt's doing (a step that saw a flag, a git call killed).
    pub(super) fn caused(&self, error: &EngineError) -> Option<Cause> {
        let interrupted = matches!(
            error,
            EngineError::Interrupted | EngineError::Git(pitroom_git::GitError::Interrupted { .. })
        );
        interrupted.then(|| self.cause().unwrap_or(Cause::Stopped))
    }
}

/// `outcome` of a step, where a stop or the deadline that landed meanwhile ends the run
/// `stopped` or `timeout` instead of failing it.
pub(super) fn unless_interrupted(
    record: &mut RunRecord,
    interrupt: &Interrupt,
    outcome: Result<(), EngineError>,
) -> Result<(), EngineError> {
    match outcome {
        Err(e) => match interrupt.caused(&e) {
            Some(cause) => {
                end_interrupted(record, cause);
                Ok(())
            }
            None => Err(e),
        },
        Ok(()) => Ok(()),
    }
}

/// Ends `record` as stopped or timed out in the phase it was in, saying what is left of it.
pub(super) fn end_interrupted(record: &mut RunRecord, cause: Cause) {
    let phase = record.phase.unwrap_or(RunPhase::Queued);
    let consequence = consequence(phase, record.spec.mode);
    let (state, error) = match cause {
        Cause::Stopped => (
            RunState::Stopped,
            format!("stopped {}; {consequence}", phase.described()),
        ),
        Cause::TimedOut => (
            RunState::Timeout,
            format!(
                "timed out after {} {}; {consequence}",
                format_duration(record.spec.timeout),
                phase.described()
            ),
        ),
    };
    record.state = state;
    record.error = Some(error);
    record.interrupted_in = Some(phase);
}

/// What a run interrupted in `phase` leaves.
fn consequence(phase: RunPhase, mode: Mode) -> &'static str {
    match (phase, mode) {
        (RunPhase::Queued | RunPhase::Held | RunPhase::Tree, _) => "the worker never started",
        (RunPhase::Worker, _) => "what the worker did is kept",
        (RunPhase::Finishing, Mode::Write) => {
            "the worker's edits are in your tree, but no patch was recorded (see git status)"
        }
        (RunPhase::Finishing, Mode::Isolate) => {
            "the worker's edits are in its copy, but no patch was recorded"
        }
        (RunPhase::Finishing, Mode::Read) => "the worker's answer was not checked",
        (RunPhase::Verify, _) => "the worker's work is kept; --verify did not finish",
    }
}
