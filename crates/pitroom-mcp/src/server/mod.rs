//! The tools, resources and instructions of `pitroom mcp`.
//!
//! The parts: [`args`] holds the tools' parameters (their doc comments are the schema
//! descriptions the model reads); [`tools`] the tool handlers; [`follow`] waiting for runs
//! with progress notifications and cancellation; [`handler`] the server info and
//! instructions, the resources and their subscriptions.

mod args;
mod follow;
mod handler;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pitroom_service::{Service, ServiceError};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::ErrorData as McpError;

pub use args::{ApplyArgs, InfoArgs, ReviewArgs, RunArgs, RunRef, ShowArgs, StopArgs, WaitArgs};

/// How long a call waits for its runs unless told otherwise.
const DEFAULT_WAIT: u64 = 50;
/// The longest a call waits (under the 10-minute tool limits of agent hosts).
const MAX_WAIT: u64 = 540;
/// A progress notification at least this often while a call waits.
const PROGRESS_EVERY: Duration = Duration::from_secs(4);
/// How long a stop waits for its runs to record `stopped`.
const STOP_SETTLE: Duration = Duration::from_secs(15);

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

    /// [`blocking`](Self::blocking) work that answers a tool call; its error is the answer the
    /// model reads ([`service_error`]).
    async fn answer(
        &self,
        work: impl FnOnce(&Service) -> Result<CallToolResult, ServiceError> + Send + 'static,
    ) -> Result<CallToolResult, McpError> {
        self.blocking(move |s| work(s).unwrap_or_else(|e| service_error(&e)))
            .await
    }
}

/// A tool-level error: the model reads it (isError), the protocol is fine.
fn error_text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![text_block(&message.into())])
}

/// A text block with control characters neutralised: a host may print a tool's text on the
/// user's terminal, and a worker's escape sequences must not drive it. Structured content
/// (JSON) is left exact.
fn text_block(text: &str) -> ContentBlock {
    ContentBlock::text(pitroom_service::terminal::neutralise(text).into_owned())
}

fn service_error(e: &ServiceError) -> CallToolResult {
    let mut text = e.message.clone();
    if let Some(hint) = &e.hint {
        text.push_str("\nhint: ");
        text.push_str(hint);
    }
    text.push_str(&format!("\n(exit code {})", e.exit().code()));
    error_text(text)
}

fn structured(value: impl serde::Serialize, text: String, is_error: bool) -> CallToolResult {
    let mut result = if is_error {
        CallToolResult::error(vec![text_block(&text)])
    } else {
        CallToolResult::success(vec![text_block(&text)])
    };
    result.structured_content = serde_json::to_value(value).ok();
    result
}

fn wait_for(given: Option<u64>) -> u64 {
    given.unwrap_or(DEFAULT_WAIT).min(MAX_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_texts_escape_sequences_reach_the_host_as_visible_text() {
        let result = error_text("run failed\n\u{1b}[1A\u{1b}[2Kall good");
        let text = result.content[0].as_text().map(|t| t.text.clone());
        assert_eq!(
            text.as_deref(),
            Some("run failed\n\\x1b[1A\\x1b[2Kall good")
        );
    }
}
