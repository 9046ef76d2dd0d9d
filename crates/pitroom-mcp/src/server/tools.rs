//! The tool handlers: `pitroom_run`, `_wait`, `_review`, `_show`, `_apply`, `_discard`,
//! `_revert`, `_stop` and `_info`. Their names, doc comments (the descriptions), schemas and
//! annotations are what clients list; keep them as they are unless on purpose.

use std::path::PathBuf;

use pitroom_service::changes::RunFile;
use pitroom_service::{
    report, Mode, ReviewRequest, RunRecord, RunRequest, Selector, Service, ServiceError,
};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};

use super::{
    error_text, structured, text_block, ApplyArgs, InfoArgs, PitroomMcp, ReviewArgs, RunArgs,
    RunRef, ShowArgs, StopArgs, WaitArgs, STOP_SETTLE,
};
use crate::render;
use crate::schema;

/// The most tasks one crew takes (the scheduler's cap on parallel workers).
const MAX_TASKS: usize = 30;
/// The longest task accepted, in bytes.
const MAX_TASK_BYTES: usize = 100_000;

/// Claude Code defers MCP tools behind its tool search and loads only their names; the entry
/// tool is worth its few hundred tokens up front, so the model sees how to delegate at once.
fn always_load() -> rmcp::model::MetaObject {
    let mut meta = rmcp::model::JsonObject::new();
    meta.insert("anthropic/alwaysLoad".into(), serde_json::Value::Bool(true));
    rmcp::model::MetaObject(meta)
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

#[tool_router(vis = "pub(super)")]
impl PitroomMcp {
    /// Delegate one `task`, or `tasks` as a crew: the verified report, or a handle (next)
    /// for pitroom_wait.
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
            attempts: args.attempts,
            no_fallback: false,
            no_hold: args.no_hold,
            files: args.files.iter().map(PathBuf::from).collect(),
            plan: args.plan.map(PathBuf::from).zip(args.step),
            // A crew's cap is the crew's, as `crew --max-usd` has it.
            max_usd: args.max_usd.filter(|_| tasks.len() == 1),
            max_tokens: args.max_tokens.filter(|_| tasks.len() == 1),
            crew_max_usd: args.max_usd.filter(|_| tasks.len() > 1),
            crew_max_tokens: args.max_tokens.filter(|_| tasks.len() > 1),
        };
        if !args.race.is_empty() && tasks.len() > 1 {
            return Ok(error_text(
                "a race runs one `task` on several targets: give `task`",
            ));
        }
        let crew = tasks.len() > 1;
        let group = args.group;
        let race = args.race;
        let start = move |s: &Service| -> Result<Selector, ServiceError> {
            if !race.is_empty() {
                // Isolated contenders in one group; `pitroom_apply` with the group lands the
                // winner (docs/race.md).
                let (group, _, _) = s.start_race(&request, &race)?;
                Ok(Selector::Group(group))
            } else if crew {
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

    /// Wait for runs: reports, or the handle again.
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

    /// Review by a second model or a panel: a run's change, A..B, a branch or uncommitted work.
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
            uncommitted: args.uncommitted,
            base: args.base,
            focus: args.focus,
            panel: args.panel,
        };
        let start = move |s: &Service| -> Result<Selector, ServiceError> {
            if !request.panel.is_empty() {
                // The panel's reviews, one report each, with the verdict of each.
                let (group, ..) = s.start_panel(&request)?;
                return Ok(Selector::Group(group));
            }
            let resolved = s.prepare_review(&request)?;
            let record = s.start_background(resolved.spec)?;
            Ok(Selector::Runs(vec![record.id]))
        };
        self.select_then_answer(start, args.wait_seconds, false, &ctx, true)
            .await
    }

    /// Show a run.
    #[tool(
        input_schema = schema::for_type::<ShowArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn pitroom_show(
        &self,
        Parameters(args): Parameters<ShowArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.answer(move |s| {
            let record = s.load(args.run.as_deref())?;
            let text = show_text(s, &record, args.view.as_deref().unwrap_or("report"))?;
            // The record view is JSON, exact; the others are text a host may print.
            let block = if args.view.as_deref() == Some("record") {
                ContentBlock::text(text)
            } else {
                text_block(&text)
            };
            Ok(CallToolResult::success(vec![block]))
        })
        .await
    }

    /// Land an isolated run's patch: checked first, all or nothing.
    #[tool(
        input_schema = schema::for_type::<ApplyArgs>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn pitroom_apply(
        &self,
        Parameters(args): Parameters<ApplyArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.answer(move |s| {
            if let Some(group) = &args.group {
                let outcome = s.apply_group(group, args.allow())?;
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
                return Ok(structured(value, text, outcome.error.is_some()));
            }
            let (record, files) = s.apply(args.run.as_deref(), args.allow())?;
            Ok(structured(
                serde_json::json!({"run": record.id, "applied": true, "files": files}),
                format!(
                    "applied run {}: {files} file(s) changed in the tree",
                    record.id
                ),
                false,
            ))
        })
        .await
    }

    /// Drop an isolated run's copy; its patch is kept.
    #[tool(
        input_schema = schema::for_type::<RunRef>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn pitroom_discard(
        &self,
        Parameters(args): Parameters<RunRef>,
    ) -> Result<CallToolResult, McpError> {
        self.answer(move |s| {
            let record = s.discard(args.run.as_deref())?;
            Ok(structured(
                serde_json::json!({"run": record.id, "discarded": true}),
                format!("discarded the copy of run {}; its patch is kept", record.id),
                false,
            ))
        })
        .await
    }

    /// Undo a write run's exact edits (refused if files changed since).
    #[tool(
        input_schema = schema::for_type::<RunRef>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn pitroom_revert(
        &self,
        Parameters(args): Parameters<RunRef>,
    ) -> Result<CallToolResult, McpError> {
        self.answer(move |s| {
            let (record, files) = s.revert(args.run.as_deref())?;
            Ok(structured(
                serde_json::json!({"run": record.id, "reverted": true, "files": files}),
                format!("reverted run {}: {files} file(s) restored", record.id),
                false,
            ))
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
        self.answer(move |s| {
            let given: Vec<String> = args.run.iter().cloned().collect();
            let selected = s.select(&given, args.group.as_deref())?;
            let records = s.stop(&selected, STOP_SETTLE)?;
            let text: Vec<String> = records
                .iter()
                .map(|r| format!("run {} is {}", r.id, r.state.as_str()))
                .collect();
            let views: Vec<render::RunView> = records.iter().map(render::RunView::of).collect();
            Ok(structured(
                serde_json::json!({"runs": views}),
                text.join("\n"),
                false,
            ))
        })
        .await
    }

    /// Pitroom's runs and set-up, by topic.
    #[tool(
        input_schema = schema::for_type::<InfoArgs>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn pitroom_info(
        &self,
        Parameters(args): Parameters<InfoArgs>,
    ) -> Result<CallToolResult, McpError> {
        self.answer(move |s| {
            let (value, text) = crate::info::answer(s, &args)?;
            Ok(structured(value, render::cap(text, "pitroom_info"), false))
        })
        .await
    }
}

/// The text of `pitroom_show` for one view.
fn show_text(s: &Service, record: &RunRecord, view: &str) -> Result<String, ServiceError> {
    let uri = format!("pitroom://run/{}", record.id);
    match view {
        "report" => {
            let mut text = report::render(record, false);
            text.push_str(&s.landing_note(record).unwrap_or_default());
            Ok(render::cap(text, &uri))
        }
        "full" => {
            let stderr = s.run_file(record, RunFile::Stderr)?.unwrap_or_default();
            let stderr =
                pitroom_service::Redactor::for_dirs(&[]).redact(&String::from_utf8_lossy(&stderr));
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
