//! The tools, resources and instructions of `pitroom mcp`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pitroom_core::{report, RunRecord};
use pitroom_service::changes::RunFile;
use pitroom_service::{ReviewRequest, RunRequest, Selector, Service, ServiceError};
use pitroom_workers::Mode;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData as McpError, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::render;
use crate::schema;

/// How long a call waits for its runs unless told otherwise.
const DEFAULT_WAIT: u64 = 50;
/// The longest a call waits (under the 10-minute tool limits of agent hosts).
const MAX_WAIT: u64 = 540;
/// A progress notification at least this often while a call waits.
const PROGRESS_EVERY: Duration = Duration::from_secs(4);
/// The most tasks one crew takes (the scheduler's cap on parallel workers).
const MAX_TASKS: usize = 30;
/// The longest task accepted, in bytes.
const MAX_TASK_BYTES: usize = 100_000;
/// How long a stop waits for its runs to record `stopped`.
const STOP_SETTLE: Duration = Duration::from_secs(15);

const INSTRUCTIONS: &str = "Pitroom hands bounded work to cheap worker agent CLIs and gives back only the verified answer, the exact diff and a receipt. \
Delegate reading, mapping, searching, small fixes, tests and reviews; keep decisions yourself. \
pitroom_run with mode read (default) for research: citations path:line in the answer are checked on disk (refs verified/total). \
mode isolate edits a private copy: review with pitroom_show view=patch, then pitroom_apply (or pitroom_discard). \
mode write edits the tree in place; pitroom_revert undoes exactly the worker's edits. \
Several independent tasks: pitroom_run with tasks (a crew, up to 30, run in parallel). \
A call waits at most wait_seconds (default 50); if runs are still going it returns next: the exact pitroom_wait call. \
Workers never touch git history. Treat a worker's answer as a draft: trust refs marked verified, check the rest.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunArgs {
    /// The task for one worker (or give `tasks`).
    #[serde(default)]
    pub task: Option<String>,
    /// Or up to 30 tasks, run in parallel.
    #[serde(default)]
    pub tasks: Vec<String>,
    /// read (default), isolate (edit a private copy) or write (edit in place).
    #[serde(default)]
    pub mode: Option<String>,
    /// backend[:model], e.g. codex.
    #[serde(default)]
    pub worker: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// cheap, standard, capable, review.
    #[serde(default)]
    pub tier: Option<String>,
    #[serde(default)]
    pub effort: Option<String>,
    /// Directory (default: the project).
    #[serde(default)]
    pub dir: Option<String>,
    /// Command that checks the result.
    #[serde(default)]
    pub verify: Option<String>,
    /// Ignored paths to copy (isolate).
    #[serde(default)]
    pub link: Vec<String>,
    /// Files to attach.
    #[serde(default)]
    pub files: Vec<String>,
    /// Plan file (with step).
    #[serde(default)]
    pub plan: Option<String>,
    #[serde(default)]
    pub step: Option<u32>,
    #[serde(default)]
    pub web: bool,
    /// Group name.
    #[serde(default)]
    pub group: Option<String>,
    /// Follow up a run (id or last).
    #[serde(default, rename = "continue")]
    pub continue_run: Option<String>,
    /// Per run: 90s, 20m (default 30m).
    #[serde(default)]
    pub timeout: Option<String>,
    /// Default 50, max 540.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WaitArgs {
    /// Run ids (default: the latest run).
    #[serde(default)]
    pub runs: Vec<String>,
    /// Every run of this group.
    #[serde(default)]
    pub group: Option<String>,
    /// Return when one run ends.
    #[serde(default)]
    pub any: bool,
    /// Default 50, max 540.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviewArgs {
    /// Run id (default: the latest run).
    #[serde(default)]
    pub run: Option<String>,
    /// Or commits A..B.
    #[serde(default)]
    pub range: Option<String>,
    /// The reviewer.
    #[serde(default)]
    pub worker: Option<String>,
    #[serde(default)]
    pub tier: Option<String>,
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShowArgs {
    /// Run id (default: the latest run).
    #[serde(default)]
    pub run: Option<String>,
    /// report (default), patch, full (with stderr) or record (JSON).
    #[serde(default)]
    pub view: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ApplyArgs {
    /// Run id (default: the latest run).
    #[serde(default)]
    pub run: Option<String>,
    /// Land a group's runs in start order.
    #[serde(default)]
    pub group: Option<String>,
    /// Allow deleting files.
    #[serde(default)]
    pub allow_delete: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunRef {
    /// Run id (default: the latest run).
    #[serde(default)]
    pub run: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct StopArgs {
    /// Run id (default: the latest run).
    #[serde(default)]
    pub run: Option<String>,
    /// Every run of this group.
    #[serde(default)]
    pub group: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct InfoArgs {
    /// runs, history, stats, savings, cooldown, config or models.
    pub topic: String,
    /// history: words to search for.
    #[serde(default)]
    pub query: Option<String>,
    /// models: the backend.
    #[serde(default)]
    pub worker: Option<String>,
    /// runs, history: how many (default 20).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The MCP server: the run library and the directory a run works in by default.
#[derive(Clone)]
pub struct PitroomMcp {
    service: Arc<Service>,
    default_dir: Option<PathBuf>,
    tool_router: ToolRouter<Self>,
    /// Resource URIs the client subscribed to (`resources/subscribe`).
    subscriptions: crate::notify::Subscriptions,
    /// Whether the resource watcher runs (one per session).
    watching: Arc<std::sync::atomic::AtomicBool>,
}

impl PitroomMcp {
    pub fn new(service: Service) -> PitroomMcp {
        // Claude Code tells its MCP servers the project; elsewhere the server's own directory.
        let default_dir = service
            .env_var("CLAUDE_PROJECT_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok());
        PitroomMcp {
            service: Arc::new(service),
            default_dir,
            tool_router: Self::tool_router(),
            subscriptions: Default::default(),
            watching: Default::default(),
        }
    }

    /// Runs blocking run-library work off the async runtime.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Service) -> T + Send + 'static,
    ) -> Result<T, McpError> {
        let service = self.service.clone();
        tokio::task::spawn_blocking(move || work(&service))
            .await
            .map_err(|e| McpError::internal_error(format!("a Pitroom task failed: {e}"), None))
    }

    /// Waits for the selected runs up to `wait`, with progress notifications meanwhile.
    /// `None` when the call was cancelled.
    async fn follow(
        &self,
        selector: &Selector,
        wait: Duration,
        any: bool,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Option<Vec<RunRecord>>, McpError> {
        let deadline = Instant::now() + wait;
        let token = ctx.meta.get_progress_token();
        let mut sent = 0u32;
        loop {
            let chunk = PROGRESS_EVERY.min(deadline.saturating_duration_since(Instant::now()));
            let sel = selector.clone();
            let service = self.service.clone();
            let waiting = tokio::task::spawn_blocking(move || {
                service.wait(&sel, Instant::now() + chunk, any)
            });
            let outcome = tokio::select! {
                _ = ctx.ct.cancelled() => return Ok(None),
                done = waiting => done.map_err(|e| McpError::internal_error(format!("waiting failed: {e}"), None))?,
            };
            if outcome.satisfied || Instant::now() >= deadline {
                return Ok(Some(outcome.records));
            }
            if let Some(token) = &token {
                sent += 1;
                let total = outcome.records.len();
                let finished = total - outcome.active();
                let param = ProgressNotificationParam::new(token.clone(), f64::from(sent))
                    .with_message(progress_message(&outcome.records, finished, total));
                // A client that went away is noticed by the transport, not here.
                let _ = ctx.peer.notify_progress(param).await;
            }
        }
    }

    /// Selects runs (by starting them, or by naming them) off the runtime, then waits for them
    /// as [`Self::runs_answer`] does; an error of the selection is the tool's error result.
    async fn select_then_answer(
        &self,
        select: impl FnOnce(&Service) -> Result<Selector, ServiceError> + Send + 'static,
        wait_seconds: Option<u64>,
        any: bool,
        ctx: &RequestContext<RoleServer>,
        stop_on_cancel: bool,
    ) -> Result<CallToolResult, McpError> {
        match self.blocking(select).await? {
            Ok(selector) => {
                self.runs_answer(selector, wait_for(wait_seconds), any, ctx, stop_on_cancel)
                    .await
            }
            Err(e) => Ok(service_error(&e)),
        }
    }

    async fn runs_answer(
        &self,
        selector: Selector,
        wait_seconds: u64,
        any: bool,
        ctx: &RequestContext<RoleServer>,
        stop_on_cancel: bool,
    ) -> Result<CallToolResult, McpError> {
        let Some(records) = self
            .follow(&selector, Duration::from_secs(wait_seconds), any, ctx)
            .await?
        else {
            if stop_on_cancel {
                // The call that started the runs was cancelled: the runs end with it.
                let sel = selector.clone();
                let _ = self.blocking(move |s| s.stop(&sel, STOP_SETTLE)).await?;
                return Ok(error_text(
                    "cancelled; the runs this call started were stopped",
                ));
            }
            return Ok(error_text(
                "cancelled; the runs go on (pitroom_wait follows them)",
            ));
        };
        let (result, text, failed) = render::runs_result(&records, &selector, wait_seconds);
        Ok(structured(result, text, failed))
    }
}

fn progress_message(records: &[RunRecord], finished: usize, total: usize) -> String {
    let mut message = format!("{finished}/{total} done");
    for r in records.iter().filter(|r| r.state.is_active()).take(3) {
        message.push_str(&format!(
            " · {} {}: {} steps, {} tools",
            r.id,
            r.state.as_str(),
            r.tally.steps,
            r.tally.tool_calls
        ));
        if let Some(last) = &r.last {
            let last: String = last.chars().take(80).collect();
            message.push_str(&format!(", last: {last}"));
        }
    }
    message
}

/// A tool-level error: the model reads it (isError), the protocol is fine.
fn error_text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

fn service_error(e: &ServiceError) -> CallToolResult {
    let mut text = e.message.clone();
    if let Some(hint) = &e.hint {
        text.push_str("\nhint: ");
        text.push_str(hint);
    }
    text.push_str(&format!("\n(exit code {})", e.exit_code()));
    error_text(text)
}

fn structured(value: impl serde::Serialize, text: String, is_error: bool) -> CallToolResult {
    let mut result = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    result.structured_content = serde_json::to_value(value).ok();
    result
}

/// Claude Code defers MCP tools behind its tool search and loads only their names; the entry
/// tool is worth its few hundred tokens up front, so the model sees how to delegate at once.
fn always_load() -> rmcp::model::MetaObject {
    let mut meta = rmcp::model::JsonObject::new();
    meta.insert("anthropic/alwaysLoad".into(), serde_json::Value::Bool(true));
    rmcp::model::MetaObject(meta)
}

fn wait_for(given: Option<u64>) -> u64 {
    given.unwrap_or(DEFAULT_WAIT).min(MAX_WAIT)
}

fn parse_mode(given: Option<&str>) -> Result<Option<Mode>, String> {
    match given {
        None | Some("") => Ok(None),
        Some("read") => Ok(Some(Mode::Read)),
        Some("isolate") => Ok(Some(Mode::Isolate)),
        Some("write") => Ok(Some(Mode::Write)),
        Some(other) => Err(format!("mode `{other}` is not one of read, isolate, write")),
    }
}

#[tool_router]
impl PitroomMcp {
    /// Delegate: one `task`, or `tasks` as a parallel crew. Returns the verified report, or after
    /// wait_seconds a handle (next) for pitroom_wait.
    #[tool(
        meta = always_load(),
        input_schema = schema::for_type::<RunArgs>(),
        output_schema = schema::runs_output(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn pitroom_run(
        &self,
        Parameters(args): Parameters<RunArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let mode = match parse_mode(args.mode.as_deref()) {
            Ok(m) => m,
            Err(why) => return Ok(error_text(why)),
        };
        let tasks: Vec<String> = match (&args.task, args.tasks.is_empty()) {
            (Some(t), true) => vec![t.clone()],
            (None, false) => args.tasks.clone(),
            (Some(_), false) => return Ok(error_text("give either `task` or `tasks`, not both")),
            (None, true) => {
                return Ok(error_text(
                    "`task` is missing: say what the worker should do",
                ))
            }
        };
        if tasks.len() > MAX_TASKS {
            return Ok(error_text(format!(
                "{} tasks is more than a crew takes ({MAX_TASKS}); split them into several calls",
                tasks.len()
            )));
        }
        if let Some(big) = tasks.iter().find(|t| t.len() > MAX_TASK_BYTES) {
            return Ok(error_text(format!(
                "a task of {} bytes is over the limit of {MAX_TASK_BYTES}; put the material in a file in the project and name it in the task",
                big.len()
            )));
        }
        let request = RunRequest {
            task: tasks[0].clone(),
            mode,
            worker: args.worker,
            model: args.model,
            tier: args.tier,
            effort: args.effort,
            dir: args
                .dir
                .map(PathBuf::from)
                .or_else(|| self.default_dir.clone()),
            timeout: args.timeout,
            web: args.web,
            background: true,
            continue_run: args.continue_run,
            allow_non_git: false,
            group: args.group.clone(),
            link: args.link,
            verify: args.verify,
            no_fallback: false,
            files: args.files.iter().map(PathBuf::from).collect(),
            plan: args.plan.map(PathBuf::from).zip(args.step),
        };
        let crew = tasks.len() > 1;
        let group = args.group;
        let start = move |s: &Service| -> Result<Selector, ServiceError> {
            if crew {
                let outcome = s.start_crew(&request, &tasks, group.as_deref())?;
                match outcome.error {
                    Some(e) if outcome.started.is_empty() => Err(e),
                    _ => Ok(Selector::Group(outcome.group)),
                }
            } else {
                let resolved = s.resolve(&request)?;
                let record = s.start_background(resolved.spec)?;
                Ok(Selector::Runs(vec![record.id]))
            }
        };
        self.select_then_answer(start, args.wait_seconds, false, &ctx, true)
            .await
    }

    /// Wait for runs: their reports, or the same handle while they go on.
    #[tool(
        input_schema = schema::for_type::<WaitArgs>(),
        output_schema = schema::runs_output(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn pitroom_wait(
        &self,
        Parameters(args): Parameters<WaitArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let (runs, group) = (args.runs, args.group);
        let select = move |s: &Service| s.select(&runs, group.as_deref());
        self.select_then_answer(select, args.wait_seconds, args.any, &ctx, false)
            .await
    }

    /// A second model reviews a run's change (or range A..B); its verdict is in the report.
    #[tool(
        input_schema = schema::for_type::<ReviewArgs>(),
        output_schema = schema::runs_output(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn pitroom_review(
        &self,
        Parameters(args): Parameters<ReviewArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let request = ReviewRequest {
            run: args.run,
            range: args.range,
            worker: args.worker,
            tier: args.tier,
            dir: self.default_dir.clone(),
            timeout: None,
            background: true,
        };
        let start = move |s: &Service| -> Result<Selector, ServiceError> {
            let resolved = s.prepare_review(&request)?;
            let record = s.start_background(resolved.spec)?;
            Ok(Selector::Runs(vec![record.id]))
        };
        self.select_then_answer(start, args.wait_seconds, false, &ctx, true)
            .await
    }

    /// A run's report, patch, report with stderr (full) or record.
    #[tool(
        input_schema = schema::for_type::<ShowArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn pitroom_show(
        &self,
        Parameters(args): Parameters<ShowArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.blocking(move |s| {
            let record = match s.load(args.run.as_deref()) {
                Ok(r) => r,
                Err(e) => return service_error(&e),
            };
            match show_text(s, &record, args.view.as_deref().unwrap_or("report")) {
                Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
                Err(e) => service_error(&e),
            }
        })
        .await
    }

    /// Land an isolated run's patch in the tree: checked first, all or nothing.
    #[tool(
        input_schema = schema::for_type::<ApplyArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn pitroom_apply(
        &self,
        Parameters(args): Parameters<ApplyArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.blocking(move |s| {
            if let Some(group) = &args.group {
                return match s.apply_group(group, args.allow_delete) {
                    Ok(outcome) => {
                        let value = serde_json::json!({
                            "group": group,
                            "applied": outcome.applied,
                            "not_applied": outcome.not_applied,
                            "error": outcome.error.as_ref().map(|(_, e)| e.to_string()),
                        });
                        let text = match &outcome.error {
                            None => format!(
                                "applied {} run(s) of group {group}: {}",
                                outcome.applied.len(),
                                outcome.applied.join(", ")
                            ),
                            Some((id, e)) => format!(
                                "applied: {}; stopped at {id}: {e}; not applied: {}",
                                outcome.applied.join(", "),
                                outcome.not_applied.join(", ")
                            ),
                        };
                        structured(value, text, outcome.error.is_some())
                    }
                    Err(e) => service_error(&e),
                };
            }
            match s.apply(args.run.as_deref(), args.allow_delete) {
                Ok((record, files)) => structured(
                    serde_json::json!({"run": record.id, "applied": true, "files": files}),
                    format!(
                        "applied run {}: {files} file(s) changed in the tree",
                        record.id
                    ),
                    false,
                ),
                Err(e) => service_error(&e),
            }
        })
        .await
    }

    /// Remove an isolated run's private copy; its patch is kept.
    #[tool(
        input_schema = schema::for_type::<RunRef>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn pitroom_discard(
        &self,
        Parameters(args): Parameters<RunRef>,
    ) -> Result<CallToolResult, McpError> {
        self.blocking(move |s| match s.discard(args.run.as_deref()) {
            Ok(record) => structured(
                serde_json::json!({"run": record.id, "discarded": true}),
                format!("discarded the copy of run {}; its patch is kept", record.id),
                false,
            ),
            Err(e) => service_error(&e),
        })
        .await
    }

    /// Undo exactly a write run's edits (refused if the files changed since).
    #[tool(
        input_schema = schema::for_type::<RunRef>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn pitroom_revert(
        &self,
        Parameters(args): Parameters<RunRef>,
    ) -> Result<CallToolResult, McpError> {
        self.blocking(move |s| match s.revert(args.run.as_deref()) {
            Ok((record, files)) => structured(
                serde_json::json!({"run": record.id, "reverted": true, "files": files}),
                format!("reverted run {}: {files} file(s) restored", record.id),
                false,
            ),
            Err(e) => service_error(&e),
        })
        .await
    }

    /// Stop running or queued runs; what they did is kept.
    #[tool(
        input_schema = schema::for_type::<StopArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn pitroom_stop(
        &self,
        Parameters(args): Parameters<StopArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.blocking(move |s| {
            let given: Vec<String> = args.run.iter().cloned().collect();
            let stopped = s
                .select(&given, args.group.as_deref())
                .and_then(|sel| s.stop(&sel, STOP_SETTLE));
            match stopped {
                Ok(records) => {
                    let text: Vec<String> = records
                        .iter()
                        .map(|r| format!("run {} is {}", r.id, r.state.as_str()))
                        .collect();
                    let views: Vec<render::RunView> =
                        records.iter().map(render::RunView::of).collect();
                    structured(serde_json::json!({"runs": views}), text.join("\n"), false)
                }
                Err(e) => service_error(&e),
            }
        })
        .await
    }

    /// Recent runs, history search, stats, savings, cooldowns, config, models.
    #[tool(
        input_schema = schema::for_type::<InfoArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn pitroom_info(
        &self,
        Parameters(args): Parameters<InfoArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.blocking(move |s| match crate::info::answer(s, &args) {
            Ok((value, text)) => structured(value, render::cap(text, "pitroom_info"), false),
            Err(e) => service_error(&e),
        })
        .await
    }
}

/// The text of `pitroom_show` for one view.
fn show_text(s: &Service, record: &RunRecord, view: &str) -> Result<String, ServiceError> {
    let uri = format!("pitroom://run/{}", record.id);
    match view {
        "report" => Ok(render::cap(report::render(record, false), &uri)),
        "full" => {
            let stderr = s.run_file(record, RunFile::Stderr)?.unwrap_or_default();
            let stderr = pitroom_core::redact::Redactor::for_dirs(&[])
                .redact(&String::from_utf8_lossy(&stderr));
            Ok(render::cap(
                format!(
                    "{}── worker stderr ({} bytes):\n{stderr}",
                    report::render(record, false),
                    stderr.len()
                ),
                &uri,
            ))
        }
        "patch" => Ok(match s.patch(record)? {
            Some(patch) => render::cap(patch, &format!("{uri}/patch")),
            None => format!("run {} changed nothing; there is no patch", record.id),
        }),
        "record" => serde_json::to_string_pretty(record)
            .map(|t| render::cap(t, &uri))
            .map_err(|e| ServiceError::refused(format!("the record does not encode: {e}"))),
        other => Err(ServiceError::usage(format!(
            "view `{other}` is not one of report, patch, full, record"
        ))),
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for PitroomMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("pitroom", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, ctx: rmcp::service::NotificationContext<RoleServer>) {
        use std::sync::atomic::Ordering;
        if self.watching.swap(true, Ordering::SeqCst) {
            return;
        }
        let runs = self.service.home().runs();
        let (subscriptions, peer) = (self.subscriptions.clone(), ctx.peer.clone());
        let runtime = tokio::runtime::Handle::current();
        // A plain thread: the watcher sleeps in poll(2), which must not hold a runtime worker.
        let spawned = std::thread::Builder::new()
            .name("pitroom-mcp-resources".into())
            .spawn(move || crate::notify::watch(&runs, subscriptions, peer, runtime));
        if spawned.is_err() {
            self.watching.store(false, Ordering::SeqCst);
        }
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if crate::notify::run_of(&request.uri).is_none() {
            return Err(McpError::invalid_params(
                format!(
                    "{} is not a Pitroom resource (pitroom://run/<id>[/patch])",
                    request.uri
                ),
                None,
            ));
        }
        if let Ok(mut s) = self.subscriptions.lock() {
            s.insert(request.uri);
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if let Ok(mut s) = self.subscriptions.lock() {
            s.remove(&request.uri);
        }
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let records = self.blocking(|s| s.list(None, false, 50)).await?;
        let resources = records
            .iter()
            .rev()
            .map(|r| {
                Resource::new(format!("pitroom://run/{}", r.id), format!("run {}", r.id))
                    .with_mime_type("text/plain")
                    .with_description(report::brief(r))
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("pitroom://run/{id}", "A run's report")
                .with_mime_type("text/plain"),
            ResourceTemplate::new("pitroom://run/{id}/patch", "A run's patch (redacted)")
                .with_mime_type("text/x-diff"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.clone();
        let Some(rest) = uri.strip_prefix("pitroom://run/") else {
            return Err(McpError::resource_not_found(
                format!("{uri} is not a Pitroom resource (pitroom://run/<id>[/patch])"),
                None,
            ));
        };
        let (id, patch) = match rest.strip_suffix("/patch") {
            Some(id) => (id.to_string(), true),
            None => (rest.to_string(), false),
        };
        let text = self
            .blocking(move |s| {
                let record = s.load(Some(&id))?;
                if patch {
                    Ok(s.patch(&record)?.unwrap_or_default())
                } else {
                    Ok::<_, ServiceError>(report::render(&record, false))
                }
            })
            .await?
            .map_err(|e| McpError::resource_not_found(e.message, None))?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri)]).into())
    }
}
