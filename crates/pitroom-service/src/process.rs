//! A process as it can be recognised later (a dashboard server in its registry file): its pid
//! and its start time, so a pid the system reused is never taken for it.

/// One process: its pid and start time (clock ticks since boot; 0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessMark {
    pub pid: u32,
    pub start: u64,
}

impl ProcessMark {
    /// This process.
    pub fn this_process() -> ProcessMark {
        let pid = std::process::id();
        ProcessMark {
            pid,
            start: i32::try_from(pid)
                .ok()
                .and_then(pitroom_proc::process_start_time)
                .unwrap_or(0),
        }
    }

    /// Whether the process still runs: the same one, not a reuse of its pid.
    pub fn is_alive(&self) -> bool {
        let Ok(pid) = i32::try_from(self.pid) else {
            return false;
        };
        pitroom_proc::is_running(pid) && pitroom_proc::process_start_time(pid) == Some(self.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_another_start_time_is_not_it() {
        let this = ProcessMark::this_process();
        assert_eq!(this.pid, std::process::id());
        assert!(this.is_alive());
        let reused = ProcessMark {
            start: this.start + 1,
            ..this
        };
        assert!(!reused.is_alive(), "a reused pid is another process");
    }
}
