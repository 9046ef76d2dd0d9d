//! Queue: a run's place in the slot queue. A ticket is taken when the run is prepared (so a
//! crew's runs queue in the order given), handed down to a background supervisor with the
//! writer lock, and turned into a slot when it is the run's turn.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::{io, Engine, EngineError, Prepared, SUPERVISE_SUBCOMMAND};
use crate::record::{RunRecord, RunSpec};
use crate::slots::{Slot, Slots, Ticket};

impl Engine {
    /// The scheduler's slots, as many as the run's `max_parallel`, in the run's lane if its
    /// target has a limit of its own.
    pub fn slots(&self, spec: &RunSpec) -> Slots {
        Slots::new(&self.home.root, spec.max_parallel).in_lane(spec.lane.clone())
    }

    /// Starts a detached supervisor for a prepared run and returns at once. The writer lock's
    /// descriptor is handed down, so the lock is held without a gap.
    pub fn spawn_background(&self, prepared: Prepared) -> Result<RunRecord, EngineError> {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new(&self.exe);
        cmd.arg(SUPERVISE_SUBCOMMAND).arg(&prepared.record.id);
        let lock_fd = prepared.lock.as_ref().map(|l| l.as_raw_fd());
        if let Some(fd) = lock_fd {
            cmd.arg("--lock-fd").arg(fd.to_string());
        }
        let ticket_fd = prepared.ticket.as_ref().map(|t| t.as_raw_fd());
        if let Some(fd) = ticket_fd {
            cmd.arg("--ticket-fd").arg(fd.to_string());
        }
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .current_dir(&prepared.record.spec.dir);
        // SAFETY: only async-signal-safe calls (setsid, fcntl) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                for fd in [lock_fd, ticket_fd].into_iter().flatten() {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        cmd.spawn()
            .map_err(io("starting the background supervisor"))?;
        // The supervisor holds its own copy of the ticket now; ours must not remove the file.
        if let Some(ticket) = prepared.ticket {
            ticket.forget();
        }
        Ok(prepared.record)
    }

    /// Waits in the queue for a slot (queue time is recorded apart from worker time); `None`
    /// when the run was stopped first.
    pub(super) fn wait_for_slot(
        &self,
        record: &mut RunRecord,
        ticket: Option<Ticket>,
        stop: &AtomicBool,
    ) -> Result<Option<Slot>, EngineError> {
        let slots = self.slots(&record.spec);
        let ticket = match ticket {
            Some(t) => t,
            None => slots
                .enqueue(&record.id)
                .map_err(io("joining the worker queue"))?,
        };
        let queued = Instant::now();
        let slot = slots
            .acquire(ticket, stop)
            .map_err(io("waiting for a worker slot"))?;
        record.queued = Some(crate::record::whole_millis(queued.elapsed()));
        record.slot_grant = slot.as_ref().map(Slot::grant);
        Ok(slot)
    }
}
