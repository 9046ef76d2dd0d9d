//! The ledger row written when a run ends, and the readers of the history (search, stats,
//! savings). The ledger lives in `pitroom-store`; the run directories stay the source of truth.

use pitroom_core::config::FlagValues;
use pitroom_core::receipt::{apply_worker_prices, WorkerPrices};
use pitroom_core::RunRecord;
use pitroom_store::{open_synced, Store};

use crate::{Service, ServiceError};

impl Service {
    /// After a run ends (foreground or background supervisor): writes the ledger row. A record
    /// written before runs carried their worker prices (the engine prices those runs itself)
    /// gets a cost from today's `worker_prices` when the CLI reported none. Best-effort: a
    /// problem goes into the returned notes (and never fails the run, whose directory is
    /// intact and is re-imported by the next reader).
    pub fn settle(&self, record: &mut RunRecord) -> Vec<String> {
        let mut notes = Vec::new();
        if record.state.is_active() {
            return notes;
        }
        let unpriced = record.spec.worker_prices.is_none();
        if let Some(config) = unpriced
            .then(|| self.config(&FlagValues::default()).ok())
            .flatten()
        {
            // Bad entries were already reported when the run started; stay quiet here.
            let (prices, _) = WorkerPrices::from_config(&config);
            if apply_worker_prices(record, &prices) {
                if let Err(e) = record.write(&self.home().record_path(&record.id)) {
                    notes.push(format!(
                        "could not store the estimated worker cost in the record: {e}"
                    ));
                }
            }
        }
        if let Err(e) = pitroom_store::record_run(self.home(), record) {
            notes.push(format!(
                "{e}; the run itself is fine and `pitroom history import` rebuilds the history"
            ));
        }
        notes
    }

    /// The history database, with the run directories it lacks imported; the notes say what
    /// was repaired.
    pub fn history_store(&self) -> Result<(Store, Vec<String>), ServiceError> {
        open_synced(self.home()).map_err(|e| {
            ServiceError::refused(format!(
                "{e}; the run directories are intact (pitroom ls, pitroom show)"
            ))
        })
    }
}
