//! Which adapter reads a run's worker CLI: one answer for the engine (launching and parsing),
//! the history's search index (a run's steps) and the dashboard's timeline.

use pitroom_workers::{adapter_for, Adapter, Custom};

use crate::record::RunSpec;

impl RunSpec {
    /// The adapter of the CLI this run used (`backend`); `None` when no adapter knows it.
    pub fn adapter(&self) -> Option<Box<dyn Adapter>> {
        self.adapter_of(&self.backend)
    }

    /// The adapter for `backend` as this run knows it: a CLI described in the config
    /// (`[workers.<name>]`, carried in the spec so a background supervisor and every later
    /// reader have it too), else a built-in one.
    pub fn adapter_of(&self, backend: &str) -> Option<Box<dyn Adapter>> {
        if let Some(def) = self.custom_workers.get(backend) {
            return Some(Box::new(Custom {
                name: backend.to_string(),
                def: def.clone(),
            }));
        }
        adapter_for(backend)
    }
}
