//! Model listing: what a worker CLI offers, as the CLI itself lists it (with the user's own
//! providers). Outside any run: no record, no tree, no sandbox.

use std::time::Duration;

use pitroom_proc::{spawn_keeper, KeeperSpec};
use pitroom_workers::{AdapterError, Mode};

use super::launch::{worker_env, GRACE};
use super::stream::read_lines;
use super::tree::prepare_dirs;
use super::{io, Engine, EngineError};
use crate::record::RunSpec;

impl Engine {
    /// The models `backend` offers, as its CLI lists them (with the user's own providers).
    pub fn list_models(
        &self,
        backend: &str,
    ) -> Result<Vec<pitroom_workers::ModelInfo>, EngineError> {
        let adapter = self.adapter(backend)?;
        let scratch = self
            .home
            .root
            .join("scratch")
            .join(format!("models-{}", std::process::id()));
        let cwd = std::env::current_dir().map_err(io("reading the current directory"))?;
        let spec = RunSpec {
            timeout_secs: 60.0,
            allow_non_git: true,
            primary: String::new(),
            verify_timeout_secs: 60.0,
            ..RunSpec::new(String::new(), Mode::Read, backend.to_string(), cwd.clone())
        };
        let req = self.invocation_request(&spec, &cwd, &scratch, None);
        // Every backend says the same thing when its CLI is missing, whether or not it could
        // list models without it (Qwen's listing reads only its settings).
        if let Err(AdapterError::NotFound(e)) = adapter.invocation(&req) {
            return Err(EngineError::Refused(e.to_string()));
        }
        let invocation = adapter
            .models_invocation(&req)
            .map_err(|e| EngineError::Refused(e.to_string()))?;
        prepare_dirs(&req.dirs, &invocation.links);
        super::launch::write_settings(&invocation.files)?;
        let keeper_spec = KeeperSpec {
            program: invocation.program.clone(),
            args: invocation.args.clone(),
            cwd,
            stdin_file: None,
            stderr_file: scratch.join("stderr.log"),
            env: worker_env(&self.env, &invocation),
            grace: GRACE,
            // Listing models writes nothing of the user's; the CLI may refresh its caches.
            sandbox: None,
            containment_report: None,
        };
        let mut models = Vec::new();
        // A CLI may answer with nothing while its model catalogue loads: ask twice.
        for _ in 0..2 {
            let mut keeper = spawn_keeper(&self.exe, &keeper_spec)
                .map_err(|e| EngineError::Refused(e.to_string()))?;
            let lines = read_lines(keeper.stdout.take());
            let _ = keeper.wait_bounded(Duration::from_secs(60));
            // The pipe closes with the keeper; what it held is still in the channel.
            let mut stdout = Vec::new();
            while let Ok(line) = lines.recv_timeout(Duration::from_secs(2)) {
                stdout.push(String::from_utf8_lossy(&line).into_owned());
            }
            models = adapter.parse_models(&stdout.join("\n"));
            if !models.is_empty() {
                break;
            }
        }
        let _ = std::fs::remove_dir_all(&scratch);
        Ok(models)
    }
}
