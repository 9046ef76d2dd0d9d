//! What the CLIs of the OpenCode family (OpenCode, Kilo Code) share: the `run` flags, private
//! XDG directories, the config and permission variables, the credentials link and the session
//! database. A [`Family`] holds the facts that tell one CLI from another; each adapter is a
//! [`Family`] constant plus what only that CLI does.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::config::{agent_name, worker_config, ConfigPlaces};
use crate::adapter::{AdapterError, Invocation, InvocationRequest, StateDirs};

/// The CLI's data dir (sessions, credentials), relative to the shared per-backend directory.
const DATA: &str = "data";
const CONFIG: &str = "config";
const CACHE: &str = "cache";

/// One CLI of the OpenCode family.
pub(crate) struct Family {
    /// The backend id, which is also the CLI's folder in each XDG directory (`opencode`, `kilo`).
    pub id: &'static str,
    /// The CLI's name in notes.
    pub name: &'static str,
    /// Where the user's configuration lives and the prefix of the CLI's variables.
    pub config: ConfigPlaces,
    /// The CLI's own switches, set after the private directories: updates, telemetry and
    /// daemons off.
    pub env: &'static [(&'static str, &'static str)],
    /// The CLI's variables that would point it at another config or server.
    pub env_remove: &'static [&'static str],
    /// The CLI's database in its data folder: sessions, messages, parts.
    pub db_file: &'static str,
    /// The permission profile of a request's mode.
    pub permission: fn(&InvocationRequest) -> Value,
}

impl Family {
    /// The full `<PREFIX>_CONFIG_CONTENT`: the user's config with the mode's profile on top.
    pub fn worker_config(&self, req: &InvocationRequest) -> Value {
        worker_config(req, &self.config, (self.permission)(req))
    }

    /// A run: `run` and its flags, the config, and the profile again in `<PREFIX>_PERMISSION`.
    pub fn run_invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let program = req.find_program(self.id)?;
        let mut notes = Vec::new();
        let args = run_args(self.name, req, &mut notes);
        let mut invocation = Invocation {
            notes,
            ..self.invocation(req, program, args)
        };
        // Applied after every config source: setting it to the profile keeps any other source
        // from loosening the mode's rules.
        invocation.env.push((
            self.var("PERMISSION"),
            (self.permission)(req).to_string().into(),
        ));
        Ok(invocation)
    }

    /// `models`, in the same environment as a run.
    pub fn models_invocation(&self, req: &InvocationRequest) -> Result<Invocation, AdapterError> {
        let program = req.find_program(self.id)?;
        Ok(self.invocation(req, program, vec!["models".into()]))
    }

    /// `provider/model` of `session`, from the CLI's database in its data folder.
    pub fn session_model(&self, dirs: &StateDirs, session: &str) -> Option<String> {
        let db = dirs.shared.join(DATA).join(self.id).join(self.db_file);
        session_model_in(&db, session)
    }

    fn invocation(
        &self,
        req: &InvocationRequest,
        program: PathBuf,
        args: Vec<OsString>,
    ) -> Invocation {
        let mut env = self.base_env(req);
        env.push((
            self.var("CONFIG_CONTENT"),
            self.worker_config(req).to_string().into(),
        ));
        Invocation {
            env,
            env_remove: self.env_remove.iter().map(OsString::from).collect(),
            links: self.credential_links(req),
            ..Invocation::new(program, args)
        }
    }

    /// The CLI's variable `<PREFIX>_<suffix>`.
    fn var(&self, suffix: &str) -> OsString {
        format!("{}_{suffix}", self.config.env_prefix).into()
    }

    /// Environment shared by runs and model listings: private state dirs, no outbound traffic
    /// beyond the model provider.
    fn base_env(&self, req: &InvocationRequest) -> Vec<(OsString, OsString)> {
        let shared = &req.dirs.shared;
        let scratch = &req.dirs.scratch;
        let mut env: Vec<(OsString, OsString)> = vec![
            ("XDG_DATA_HOME".into(), shared.join(DATA).into()),
            ("XDG_CONFIG_HOME".into(), shared.join(CONFIG).into()),
            ("XDG_CACHE_HOME".into(), shared.join(CACHE).into()),
            // Lock files and daemon discovery live in the state dir: a private one per run means
            // no running `serve` or daemon (which would ignore the run's permissions) is attached.
            ("XDG_STATE_HOME".into(), scratch.join("state").into()),
            // Bun extracts a 5.5 MB library into TMPDIR on every start and never removes it.
            ("TMPDIR".into(), scratch.join("tmp").into()),
        ];
        env.extend(self.env.iter().map(|(k, v)| (k.into(), v.into())));
        // The CLI installs its plugin package in the background with an embedded npm client; a
        // dead loopback registry switches that off without failing the run.
        env.push(("npm_config_registry".into(), "http://127.0.0.1:9/".into()));
        env.push(("PWD".into(), req.workdir.clone().into()));
        env
    }

    /// The CLI keeps provider credentials (`auth login`) in `$XDG_DATA_HOME/<id>/auth.json`. The
    /// worker's data dir is private, so the user's file is linked into it.
    fn credential_links(&self, req: &InvocationRequest) -> Vec<(PathBuf, PathBuf)> {
        let data_home = req.dir_from_env("XDG_DATA_HOME", ".local/share");
        let Some(auth) = data_home.map(|d| d.join(self.id).join("auth.json")) else {
            return Vec::new();
        };
        if !auth.is_file() {
            return Vec::new();
        }
        let link = req.dirs.shared.join(DATA).join(self.id).join("auth.json");
        vec![(link, auth)]
    }
}

/// `provider/model` of `session` from the CLI's database (`session.model` holds
/// `{"id": …, "providerID": …}`); opened read-only, so a run that is still writing it is never
/// disturbed. `None` when the file, the session or the field is missing.
pub(crate) fn session_model_in(db: &Path, session: &str) -> Option<String> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()?;
    conn.busy_timeout(std::time::Duration::from_secs(2)).ok()?;
    let model: String = conn
        .query_row("SELECT model FROM session WHERE id = ?1", [session], |r| {
            r.get(0)
        })
        .ok()?;
    let value: Value = serde_json::from_str(&model).ok()?;
    let id = value["id"].as_str().filter(|s| !s.is_empty())?;
    Some(
        match value["providerID"].as_str().filter(|s| !s.is_empty()) {
            Some(provider) => format!("{provider}/{id}"),
            None => id.to_string(),
        },
    )
}

/// `run` and its flags: the mode's agent, a title, logs on stderr, the work dir, the model and
/// its effort variant, the session to resume. `cli` names the CLI in notes.
fn run_args(cli: &str, req: &InvocationRequest, notes: &mut Vec<String>) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["run", "--format", "json", "--agent"]
        .map(OsString::from)
        .to_vec();
    args.push(agent_name(req.mode).into());
    // A title skips the CLI's extra title-generation model call.
    args.extend(["--title".into(), OsString::from(&req.title)]);
    // Logs on stderr: the real cause of "Unexpected server error" is only there.
    args.extend(["--print-logs", "--log-level", "WARN"].map(OsString::from));
    args.extend(["--dir".into(), req.workdir.clone().into_os_string()]);
    if let Some(model) = &req.model {
        args.extend(["--model".into(), OsString::from(model)]);
    }
    match (&req.effort, &req.model) {
        (Some(effort), Some(_)) => args.extend(["--variant".into(), OsString::from(effort)]),
        (Some(effort), None) => notes.push(format!(
            "--effort {effort} dropped: {cli} sets effort per model variant, and no model is pinned"
        )),
        _ => {}
    }
    if let Some(session) = &req.resume_session {
        args.extend(["--session".into(), OsString::from(session)]);
    }
    args
}
