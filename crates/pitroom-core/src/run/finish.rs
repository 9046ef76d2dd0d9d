//! Finish: what is done once the run is judged. Everything stored is redacted, the receipt is
//! written, and the record is closed and saved with the run directory tidied. The ledger row
//! is the run library's (`pitroom-service`), written from this record.

use std::path::Path;

use super::stream::Stream;
use super::Engine;
use crate::record::{RunRecord, RunState};
use crate::{receipt, report};

/// Redacts what the run stores (its logs, its error, the verify tail) and writes its receipt.
pub(super) fn seal(record: &mut RunRecord, run_dir: &Path, stream: &Stream) {
    // The keeper wrote stderr.log and verify.log as the processes printed them.
    for log in ["stderr.log", "verify.log"] {
        let path = run_dir.join(log);
        if let Ok(text) = std::fs::read_to_string(&path) {
            let clean = stream.redact(&text);
            if clean != text {
                if let Err(e) = std::fs::write(&path, clean) {
                    tracing::error!(
                        "could not write the redacted {log} ({e}): {} may still hold a secret the worker printed; delete it",
                        path.display()
                    );
                }
            }
        }
    }
    record.error = record.error.as_deref().map(|e| stream.redact(e));
    if let Some(v) = record.verify.as_mut() {
        v.tail = stream.redact(&v.tail);
    }
    let primary = receipt::resolve_primary(&record.spec.primary, record.spec.price.as_deref());
    if let Some(w) = primary.1 {
        record.warnings.push(w);
    }
    let body = report::body(record, false);
    record.receipt = Some(receipt::receipt(&record.tally, &body, &primary.0));
    // A CLI that reports no cost is priced with the worker prices the run started with.
    if let Some(prices) = record.spec.worker_prices.clone() {
        receipt::apply_worker_prices(record, &prices);
    }
    receipt::charge_budget_spend(record);
}

impl Engine {
    /// Closes the record whatever happened (end time, the supervisor's peak memory), removes
    /// the run's scratch state (its scratch dir, its temporary indexes, read copies beyond the
    /// keep policy) and writes the record.
    pub(super) fn close(&self, record: &mut RunRecord, run_dir: &Path) {
        if record.ended_at.is_none() {
            record.ended_at = Some(crate::clock::now());
        }
        record.supervisor_peak_kb = own_peak_kb();
        crate::log::remove_dir(&run_dir.join("scratch"), "the run's scratch dir");
        if record.copy.is_some() {
            pitroom_git::prune_read_copies(
                &self.home.snapshots(),
                pitroom_git::KeepPolicy::default(),
            );
        }
        for index in ["base.index", "after.index"] {
            crate::log::remove_file(&run_dir.join(index), "the snapshot index");
        }
        if let Err(e) = self.save_progress(record) {
            // The run's outcome is lost on disk: it fails, loudly, whatever the worker did.
            let problem = crate::home::storage_problem(&self.home.record_path(&record.id), &e);
            record.state = RunState::Failed;
            record.error = Some(match record.error.take() {
                Some(first) => format!("{first}; its record is not saved either"),
                None => format!("the run's record is not saved: {problem}"),
            });
            record.unsaved = Some(problem);
        }
    }
}

/// This process's peak resident memory (VmHWM) in KiB.
fn own_peak_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
