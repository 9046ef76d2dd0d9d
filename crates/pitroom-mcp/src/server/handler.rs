//! The `ServerHandler`: the server's info and instructions, the tool calls routed to
//! [`tools`](super::tools), the resources (`pitroom://run/<id>[/patch]`), and the watchers that
//! notify clients when a run's resource changes: one per session for `resources/subscribe`
//! (legacy handshake), one per `subscriptions/listen` stream (2026-07-28).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use pitroom_service::{report, ServiceError};
use rmcp::model::{
    Implementation, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{tool_handler, ErrorData as McpError, RoleServer, ServerHandler};

use super::PitroomMcp;

const INSTRUCTIONS: &str = "Pitroom hands bounded work to cheap worker agent CLIs and gives back only the verified answer, the exact diff and a receipt. \
Delegate reading, mapping, searching, small fixes, tests and reviews; keep decisions yourself. \
pitroom_run with mode read (default) for research: citations path:line in the answer are checked on disk (refs verified/total). \
mode isolate edits a private copy: review with pitroom_show view=patch, then pitroom_apply (or pitroom_discard). \
mode write edits the tree in place; pitroom_revert undoes exactly the worker's edits. \
Several independent tasks: pitroom_run with tasks (a crew, up to 30, run in parallel). \
A call waits at most wait_seconds (default 50); if runs are still going it returns next: the exact pitroom_wait call. \
Workers never touch git history. Treat a worker's answer as a draft: trust refs marked verified, check the rest.";

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
        let outlet = crate::notify::Outlet::Session(ctx.peer.clone());
        // The session's watcher stops when the client is gone, never before.
        let never = Arc::new(AtomicBool::new(false));
        if self
            .spawn_watcher(self.subscriptions.clone(), outlet, never)
            .is_err()
        {
            self.watching.store(false, Ordering::SeqCst);
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(crate::notify::accepted_filter(requested))
    }

    /// A 2026-07-28 `subscriptions/listen` stream: a watcher of its own, for as long as the
    /// stream is open.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        let subscriptions = Arc::new(Mutex::new(uris.into_iter().collect()));
        let outlet = crate::notify::Outlet::Listen(context.sink().clone());
        let stopped = Arc::new(AtomicBool::new(false));
        self.spawn_watcher(subscriptions, outlet, stopped.clone())
            .map_err(|e| McpError::internal_error(format!("watching runs: {e}"), None))?;
        context.cancelled().await;
        stopped.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
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
                    // As a terminal may show it; the stored patch is what apply lands.
                    let shown = s.patch(&record)?.unwrap_or_default();
                    Ok(pitroom_service::terminal::neutralise(&shown).into_owned())
                } else {
                    Ok::<_, ServiceError>(report::render(&record, false))
                }
            })
            .await?
            .map_err(|e| McpError::resource_not_found(e.message, None))?;
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri)]).into())
    }
}

impl PitroomMcp {
    /// Starts a resource watcher on a plain thread: it sleeps in poll(2), which must not hold a
    /// runtime worker.
    fn spawn_watcher(
        &self,
        subscriptions: crate::notify::Subscriptions,
        outlet: crate::notify::Outlet,
        stopped: Arc<AtomicBool>,
    ) -> std::io::Result<()> {
        let runs = self.service.home().runs();
        let runtime = tokio::runtime::Handle::current();
        std::thread::Builder::new()
            .name("pitroom-mcp-resources".into())
            .spawn(move || crate::notify::watch(&runs, subscriptions, outlet, runtime, &stopped))
            .map(drop)
    }
}
