//! The run library: the one API every front end calls — the `pitroom` CLI, the MCP server and
//! the dashboard. Functions take typed requests and return typed values; nothing here prints.
//! A front end parses its input into a [`RunRequest`] or a [`Selector`], calls a method of
//! [`Service`], and renders what comes back (a report, JSON, an MCP result, a page).
//!
//! - [`request`]: a request and its resolution into a `RunSpec` (flags > env > config file).
//! - [`runs`]: start one run or a crew (foreground or background), supervise, status, wait, stop.
//! - [`events`]: the typed `watch` event stream, driven by inotify.
//! - [`changes`]: show a run's patch, apply (one run or a group), discard, revert.
//! - [`ledger`]: the ledger row written when a run ends; the history (search, stats, savings).
//! - [`info`]: models, cooldowns, settings, whether a run may be discarded.
//! - [`probe`]: a real read run through each worker (`doctor --probe`).
//! - [`review_gate`]: the stop-time review gate of the host hooks.
//!
//! Front ends depend on this crate alone among Pitroom's: the types they name and render are
//! re-exported here; what they do with them are methods of [`Service`].

pub mod changes;
pub mod clean;
pub mod doctor;
pub mod error;
pub mod events;
pub mod info;
pub mod ledger;
mod notify;
pub mod panel;
pub mod plan;
pub mod probe;
pub mod process;
pub mod race;
pub mod request;
pub mod review;
pub mod review_gate;
pub mod runs;

use std::path::PathBuf;

use pitroom_core::Engine;

pub use error::{ErrorKind, ServiceError};
pub use events::{EventStream, Finished, WatchEvent};
pub use panel::{Panel, Seat};
pub use race::{Contender, Race};
pub use request::{Resolved, RunRequest};
pub use review::ReviewRequest;
pub use review_gate::{GateOutcome, GateRequest, GateState, Pass};
pub use runs::{CrewOutcome, Selector, WaitOutcome};

pub use info::{Settings, WorkerModels};
pub use ledger::{Day, History, Imported};
pub use process::ProcessMark;

// What front ends name and render: a record, its report and budget, an exit, a worker's mode and events,
// the redactor and terminal-safe text, the stamping clock, file watching; the history's rows.
pub use pitroom_core::config::{Entry as SettingsEntry, Source as SettingsSource};
pub use pitroom_core::cooldown::{Cooldowns, Cooling};
pub use pitroom_core::exit::Exit;
pub use pitroom_core::record::RunPhase;
pub use pitroom_core::redact::Redactor;
pub use pitroom_core::target::Target;
pub use pitroom_core::{
    budget, clock, fs_watch, report, terminal, Home, Observer, RunRecord, RunSpec, RunState,
};
pub use pitroom_store::{Filter, Hit, ImportReport, ModelSavings, Savings, Since, WorkerStats};
pub use pitroom_workers::{Mode, ModelInfo, ToolOutcome, WorkerEvent};

/// The run library bound to a state directory and the caller's environment.
pub struct Service {
    engine: Engine,
}

impl Service {
    /// A service for this process: its environment, its state directory, its executable
    /// (started again as the keeper and the background supervisor).
    pub fn from_process() -> Result<Service, ServiceError> {
        let env: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let exe = std::env::current_exe().map_err(|e| {
            ServiceError::refused(format!("cannot find the pitroom executable itself: {e}"))
        })?;
        Ok(Service::new(env, exe))
    }

    /// A service with an explicit environment (the state directory comes from its
    /// `PITROOM_HOME`/`XDG_STATE_HOME`/`HOME`) and executable.
    pub fn new(env: Vec<(String, String)>, exe: PathBuf) -> Service {
        let home =
            Home::locate(&|name| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()));
        Service {
            engine: Engine { home, env, exe },
        }
    }

    pub fn home(&self) -> &Home {
        &self.engine.home
    }

    /// The engine stays inside the library: front ends ask the service, never the engine.
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// A variable of the service's environment.
    pub fn env_var(&self, name: &str) -> Option<String> {
        self.engine
            .env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    /// One run's settled record (a run whose supervisor died is marked failed first). `None`
    /// is the latest run; otherwise an id, a unique prefix or `last`.
    pub fn load(&self, given: Option<&str>) -> Result<RunRecord, ServiceError> {
        let id = self.home().resolve(given)?;
        Ok(self.home().load_settled(&id)?)
    }

    /// Settled records of `ids`; a record that cannot be read is skipped, and its error returned
    /// beside the others for the caller to show.
    pub fn load_many(&self, ids: &[String]) -> (Vec<RunRecord>, Vec<String>) {
        let mut records = Vec::new();
        let mut problems = Vec::new();
        for id in ids {
            match self.home().load_settled(id) {
                Ok(r) => records.push(r),
                Err(e) => problems.push(e.to_string()),
            }
        }
        (records, problems)
    }

    /// Recent runs, newest last: at most `limit`, of one group, or only the active ones.
    pub fn list(&self, group: Option<&str>, running_only: bool, limit: usize) -> Vec<RunRecord> {
        let home = self.home();
        let ids = match group {
            Some(g) => home.group_ids(g),
            None => home.run_ids(),
        };
        let mut records: Vec<RunRecord> = ids
            .iter()
            .rev()
            .filter_map(|id| home.load_settled(id).ok())
            .filter(|r| !running_only || r.state.is_active())
            .take(limit)
            .collect();
        records.reverse();
        records
    }
}

/// The wall clock to the millisecond, `YYYYmmdd-HHMMSS-mmm`: for names that must differ from
/// call to call (a fixed clock would give them all the same name).
pub(crate) fn wall_stamp() -> String {
    let now = jiff::Timestamp::now();
    format!(
        "{}-{:03}",
        now.strftime("%Y%m%d-%H%M%S"),
        now.subsec_millisecond()
    )
}
