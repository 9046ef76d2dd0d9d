//! Waiting for runs inside a tool call: at most `wait_seconds`, with a progress notification
//! every few seconds meanwhile, and an end on the client's cancellation (stopping the runs
//! when the cancelled call was the one that started them).

use std::time::{Duration, Instant};

use pitroom_service::RunRecord;
use pitroom_service::{Selector, Service, ServiceError};
use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use super::{
    error_text, service_error, structured, wait_for, PitroomMcp, PROGRESS_EVERY, STOP_SETTLE,
};
use crate::render;

impl PitroomMcp {
    /// Waits for the selected runs up to `wait`, with progress notifications meanwhile.
    /// `None` when the call was cancelled.
    pub(super) async fn follow(
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
    pub(super) async fn select_then_answer(
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

    pub(super) async fn runs_answer(
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
        if let Some(last) = &r.last_step {
            let last: String = last.chars().take(80).collect();
            message.push_str(&format!(", last: {last}"));
        }
    }
    message
}
