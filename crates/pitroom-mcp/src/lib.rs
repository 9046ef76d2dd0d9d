//! `pitroom mcp`: an MCP server on stdio over the run library. Every tool calls
//! `pitroom_service` in this process (runs get their own detached supervisors, exactly as
//! `pitroom run --bg` gives them, so closing the session ends waits, never runs). Long work never
//! blocks past a client's limit: a call waits at most `wait_seconds`, sends progress at least
//! every 5 s meanwhile, and returns a handle with the exact `pitroom_wait` arguments.

pub mod hosts;
mod info;
mod notify;
mod render;
mod schema;
mod server;

pub use server::PitroomMcp;

use pitroom_service::Service;

/// Serves MCP on stdin/stdout until the client closes stdin. Only JSON-RPC goes to stdout.
pub fn serve_stdio(service: Service) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the MCP server's runtime: {e}"))?;
    runtime.block_on(async move {
        use rmcp::ServiceExt;
        let running = PitroomMcp::new(service)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| format!("the MCP handshake failed: {e}"))?;
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the MCP server stopped: {e}"))
    })
}
