//! Model listing: what a worker CLI offers, as the CLI itself lists it (with the user's own
//! providers). Outside any run: no record, no tree, no sandbox.

use std::time::{Duration, Instant};

use pitroom_proc::{spawn_keeper, AfterLine, Bounds, Decision, KeeperSpec, Watcher};
use pitroom_workers::{AdapterError, Mode};

use super::launch::{worker_env, GRACE};
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
            timeout: Duration::from_secs(60),
            allow_non_git: true,
            primary: String::new(),
            verify_timeout: Duration::from_secs(60),
            ..RunSpec::new(String::new(), Mode::Read, backend.to_string(), cwd.clone())
        };
        let req = self.invocation_request(&spec, &spec.asked(), &cwd, &scratch, None);
        // Every backend says the same thing when its CLI is missing, whether or not it could
        // list models without it (Qwen's listing reads only its settings).
        if let Err(AdapterError::NotFound(e)) = adapter.invocation(&req) {
            return Err(EngineError::Refused(e.to_string()));
        }
        let invocation = adapter
            .models_invocation(&req)
            .map_err(|e| EngineError::Refused(e.to_string()))?;
        prepare_dirs(&req.dirs, &invocation.links);
        super::launch::write_settings(&req.dirs, &invocation.files)?;
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
            let mut listing = Listing {
                lines: Vec::new(),
                deadline: Instant::now() + LISTING_LIMIT,
            };
            let bounds = Bounds {
                exit_wait: GRACE + Duration::from_secs(5),
                drain: Duration::from_secs(2),
            };
            pitroom_proc::drive(&mut keeper, &mut listing, bounds);
            models = adapter.parse_models(&listing.lines.join("\n"));
            if !models.is_empty() {
                break;
            }
        }
        crate::log::remove_dir(&scratch, "the model listing's scratch dir");
        Ok(models)
    }
}

/// How long a CLI may take to list its models before it is stopped.
const LISTING_LIMIT: Duration = Duration::from_secs(60);

/// The follower of a model listing: every line, and a stop when the CLI takes too long.
struct Listing {
    lines: Vec<String>,
    deadline: Instant,
}

impl Watcher for Listing {
    fn line(&mut self, line: Vec<u8>) -> AfterLine {
        self.lines.push(String::from_utf8_lossy(&line).into_owned());
        AfterLine::ReadOn
    }

    fn poll(&mut self) -> Decision {
        if Instant::now() >= self.deadline {
            Decision::Stop
        } else {
            Decision::Continue
        }
    }
}
