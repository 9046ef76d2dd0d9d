//! Notifications (`notify = true`): when a background run ends — or, for a crew, when its last
//! run ends — a desktop notification names it and its outcome. Best effort: a machine without a
//! notifier shows nothing, and a notifier that fails is noted in the run log, never in the run.

use pitroom_core::{report, RunRecord, RunState};

use crate::runs::set_exit;
use crate::Service;

impl Service {
    /// Tells the desktop that `record`'s run ended, or that its group did when it was the last.
    pub(crate) fn notify_ended(&self, record: &RunRecord) {
        let message = match &record.spec.group {
            Some(group) => {
                let (records, _) = self.load_many(&self.home().group_ids(group));
                if records.iter().any(|r| r.state.is_active()) || !self.first_to_tell(group) {
                    return;
                }
                group_message(group, &records)
            }
            None => run_message(record),
        };
        match pitroom_proc::desktop_notification(&message.0, &message.1) {
            Ok(true) => {}
            Ok(false) => tracing::debug!("no desktop notifier (notify-send, osascript) here"),
            Err(e) => tracing::warn!("the desktop notification failed: {e}"),
        }
    }

    /// Whether this process is the one to tell of `group`'s end: the runs of a crew can end at
    /// the same moment, and each would otherwise see the others ended.
    fn first_to_tell(&self, group: &str) -> bool {
        let dir = self.home().root.join("notified");
        let marker = dir.join(group);
        std::fs::create_dir_all(&dir)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&marker)
            })
            .is_ok()
    }
}

/// A run's title and body: its outcome and what it said (or why it failed).
fn run_message(record: &RunRecord) -> (String, String) {
    let title = format!("Pitroom: run {} {}", record.id, outcome(record.state));
    let said = record
        .answer
        .as_deref()
        .and_then(report::summary_line)
        .or(record.error.as_deref())
        .unwrap_or("");
    let task: String = record.spec.task.chars().take(80).collect();
    (title, format!("{}\n{}", task.replace('\n', " "), said))
}

/// A group's title and body: how many of its runs ended which way.
fn group_message(group: &str, records: &[RunRecord]) -> (String, String) {
    let done = records.iter().filter(|r| r.state == RunState::Done).count();
    let verdict = if set_exit(records).code() == 0 {
        "done"
    } else {
        "ended"
    };
    (
        format!("Pitroom: group {group} {verdict}"),
        format!(
            "{} run(s): {done} done, {} not (pitroom status -g {group})",
            records.len(),
            records.len() - done
        ),
    )
}

fn outcome(state: RunState) -> &'static str {
    match state {
        RunState::Done => "done",
        RunState::Failed => "failed",
        RunState::Timeout => "timed out",
        RunState::Stopped => "stopped",
        RunState::OverBudget => "stopped at its budget",
        RunState::Queued | RunState::Running => "running",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pitroom_core::RunSpec;
    use pitroom_workers::Mode;

    fn run(id: &str, state: RunState) -> RunRecord {
        let spec = RunSpec::new("Find\nthe cookie reader", Mode::Read, "opencode", "/tmp");
        let mut r = RunRecord::new(
            id.into(),
            spec,
            "2026-11-30T00:00:00Z".parse().expect("a stamp"),
        );
        r.state = state;
        r
    }

    #[test]
    fn a_run_is_told_by_its_outcome_task_and_summary_and_a_group_by_its_tally() {
        let mut done = run("r1", RunState::Done);
        done.answer = Some("SUMMARY: in auth/cookie.rs\nDETAILS: …".into());
        let (title, body) = run_message(&done);
        assert_eq!(title, "Pitroom: run r1 done");
        assert_eq!(body, "Find the cookie reader\nin auth/cookie.rs");
        let mut failed = run("r2", RunState::Failed);
        failed.error = Some("rate limited".into());
        assert_eq!(
            run_message(&failed).1,
            "Find the cookie reader\nrate limited"
        );
        let (title, body) = group_message("crew-1", &[done, failed]);
        assert_eq!(title, "Pitroom: group crew-1 ended");
        assert_eq!(body, "2 run(s): 1 done, 1 not (pitroom status -g crew-1)");
    }
}
