//! Read-only facts a front end shows besides runs: the models a worker offers, the targets
//! cooling down, the effective settings, whether a run's copy may be discarded, and the
//! variables that point Pitroom at each worker's binary.

use std::path::PathBuf;

use pitroom_core::config::{Entry, FlagValues};
use pitroom_core::cooldown::Cooldowns;
use pitroom_core::target::Target;
use pitroom_core::RunRecord;
use pitroom_workers::ModelInfo;

use crate::request::DEFAULT_BACKEND;
use crate::{Service, ServiceError};

/// The models one worker's CLI offers.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerModels {
    /// The backend asked (`opencode`, not `opencode:model`).
    pub backend: String,
    pub models: Vec<ModelInfo>,
}

/// The effective settings and where each comes from.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The config file read, if there is one.
    pub file: Option<PathBuf>,
    /// Every key, set or not, with its value and source.
    pub entries: Vec<Entry>,
    /// What in the file was ignored, and why.
    pub warnings: Vec<String>,
}

impl Service {
    /// What `worker` (a backend or `backend:model`; `None`: the configured worker, else the
    /// default one) offers, as its CLI lists them.
    pub fn models(&self, worker: Option<&str>) -> Result<WorkerModels, ServiceError> {
        let worker = match worker {
            Some(w) => w.to_string(),
            None => self
                .config(&FlagValues::default())?
                .text("worker")
                .unwrap_or_else(|| DEFAULT_BACKEND.into()),
        };
        let backend = Target::parse(&worker, DEFAULT_BACKEND)
            .map_err(ServiceError::usage)?
            .backend;
        let models = self.engine.list_models(&backend)?;
        Ok(WorkerModels { backend, models })
    }

    /// Every backend with an adapter, with its models or why they cannot be listed (not
    /// installed, no listing).
    pub fn all_models(&self) -> Vec<(&'static str, Result<Vec<ModelInfo>, ServiceError>)> {
        pitroom_workers::KNOWN_BACKENDS
            .iter()
            .map(|backend| {
                let listed = self.engine.list_models(backend).map_err(ServiceError::from);
                (*backend, listed)
            })
            .collect()
    }

    /// The targets cooling down after a rate limit, and until when.
    pub fn cooldowns(&self) -> Cooldowns {
        Cooldowns::load(self.home())
    }

    /// Ends every cooldown; returns how many there were.
    pub fn clear_cooldowns(&self) -> Result<usize, ServiceError> {
        Cooldowns::clear(self.home()).map_err(|e| {
            ServiceError::refused(format!(
                "cannot clear the cooldowns in {}: {e}",
                self.home().root.display()
            ))
        })
    }

    /// The effective settings (flags aside): file, environment, defaults.
    pub fn settings(&self) -> Result<Settings, ServiceError> {
        let config = self.config(&FlagValues::default())?;
        Ok(Settings {
            entries: config.entries(),
            file: config.file,
            warnings: config.warnings,
        })
    }

    /// Whether run `record`'s copy may be discarded now: `Err` says why not. The rule
    /// `discard` itself applies, so a front end offering the action never disagrees with it.
    pub fn can_discard(&self, record: &RunRecord) -> Result<(), ServiceError> {
        match pitroom_core::patches::discard_refusal(self.home(), record) {
            None => Ok(()),
            Some(why) => Err(ServiceError::refused(why)),
        }
    }
}

/// The variables that name each built-in worker's binary (`PITROOM_<CLI>_BIN`), for hosts
/// that pass MCP servers only the variables they are told.
pub fn worker_binary_vars() -> Vec<String> {
    pitroom_workers::KNOWN_BACKENDS
        .iter()
        .map(|backend| pitroom_workers::override_var(backend))
        .collect()
}

#[cfg(test)]
mod tests {
    use pitroom_core::{RunSpec, RunState};
    use pitroom_workers::Mode;

    use super::*;
    use crate::ErrorKind;

    /// A service over a fresh state directory, with `extra` in its environment.
    fn service(dir: &tempfile::TempDir, extra: &[(&str, &str)]) -> Service {
        let mut env = vec![
            (
                "PITROOM_HOME".to_string(),
                dir.path().join("state").display().to_string(),
            ),
            ("HOME".to_string(), dir.path().display().to_string()),
        ];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Service::new(env, "/nonexistent/pitroom".into())
    }

    #[test]
    fn models_of_an_unknown_worker_are_a_usage_error_and_no_worker_means_the_configured_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let e = service(&dir, &[])
            .models(Some("nosuchcli"))
            .expect_err("not a worker");
        assert_eq!(e.kind, ErrorKind::Usage);
        assert!(e.message.contains("`nosuchcli` is not a worker"), "{e}");
        // Without a name: the configured worker, not the default one.
        let e = service(&dir, &[("PITROOM_WORKER", "othercli")])
            .models(None)
            .expect_err("the configured worker is no worker");
        assert!(e.message.contains("`othercli` is not a worker"), "{e}");
    }

    #[test]
    fn every_known_backend_gets_a_listing_or_its_reason() {
        let dir = tempfile::tempdir().expect("temp dir");
        let listed = service(&dir, &[("PATH", "/nonexistent")]).all_models();
        let backends: Vec<&str> = listed.iter().map(|(b, _)| *b).collect();
        assert_eq!(backends, pitroom_workers::KNOWN_BACKENDS);
    }

    #[test]
    fn settings_list_every_key_and_say_where_each_comes_from() {
        let dir = tempfile::tempdir().expect("temp dir");
        let settings = service(&dir, &[("PITROOM_WORKER", "codex")])
            .settings()
            .expect("settings");
        let worker = settings
            .entries
            .iter()
            .find(|e| e.key == "worker")
            .expect("the worker key is listed");
        assert_eq!(worker.value, serde_json::json!("codex"));
        assert!(
            matches!(worker.source, pitroom_core::config::Source::Env(_)),
            "{:?}",
            worker.source
        );
        assert!(settings.entries.iter().any(|e| e.key == "model"));
    }

    #[test]
    fn cooldowns_start_empty_and_clearing_them_counts_none() {
        let dir = tempfile::tempdir().expect("temp dir");
        let service = service(&dir, &[]);
        assert!(service.cooldowns().entries.is_empty());
        assert_eq!(service.clear_cooldowns().expect("cleared"), 0);
    }

    #[test]
    fn can_discard_is_the_rule_discard_applies() {
        let dir = tempfile::tempdir().expect("temp dir");
        let service = service(&dir, &[]);
        let copy = service.home().copies().join("r1");
        std::fs::create_dir_all(&copy).expect("copy");
        let spec = RunSpec::new("t", Mode::Isolate, "opencode", dir.path().to_path_buf());
        let mut record = RunRecord::new(
            "r1".into(),
            spec,
            "2026-11-20T10:00:00Z".parse().expect("a stamp"),
        );
        record.state = RunState::Done;
        record.copy = Some(copy);
        assert_eq!(service.can_discard(&record), Ok(()));
        // A copy recorded outside the copies directory is never offered (nor removed).
        record.copy = Some(dir.path().to_path_buf());
        let e = service.can_discard(&record).expect_err("outside copies/");
        assert_eq!(e.kind, ErrorKind::Refused);
        assert_eq!(
            e.message,
            "run r1's copy is already gone (its patch is kept)"
        );
    }

    #[test]
    fn each_built_in_worker_has_its_binary_variable() {
        let vars = worker_binary_vars();
        assert_eq!(vars.len(), pitroom_workers::KNOWN_BACKENDS.len());
        assert!(vars.iter().any(|v| v == "PITROOM_OPENCODE_BIN"), "{vars:?}");
    }
}
