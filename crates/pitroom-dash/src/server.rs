//! The server: one tokio runtime (current-thread: a page on loopback needs no more), the
//! router behind the security guard, the follower thread, idle stop and signals.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use pitroom_service::{History, Service};
use tokio::sync::watch;

use crate::feed::Feed;
use crate::view::Redactors;
use crate::{api, registry, security, DashError};

/// How a server is started.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// 0: any free port.
    pub port: u16,
    /// Started by `--detach`: recorded so, and stops after `idle_stop` without a request.
    pub detached: bool,
    /// Stop after this long without a request and without an open page.
    pub idle_stop: Option<Duration>,
    /// Write `dash.json` so another `pitroom dash` reuses this server.
    pub registry: bool,
}

/// What every handler shares.
pub struct Shared {
    pub service: Service,
    pub feed: Feed,
    pub redactors: Redactors,
    pub token: String,
    pub port: u16,
    /// The history database, opened (and synced with the run directories) on first use.
    pub history: Mutex<Option<History>>,
    /// History's filter choices and when they were read (all-time stats cost hundreds of
    /// milliseconds over 100,000 runs: not once per search).
    pub facets: Mutex<Option<(Instant, serde_json::Value)>>,
    started: Instant,
    last_request_ms: AtomicU64,
    open_streams: AtomicUsize,
    shutdown: watch::Sender<bool>,
}

impl Shared {
    fn touch(&self) {
        let ms = self.started.elapsed().as_millis() as u64;
        self.last_request_ms.store(ms, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_request_ms.load(Ordering::Relaxed));
        self.started.elapsed().saturating_sub(last)
    }

    /// A receiver that turns true when the server is stopping (open event streams end then).
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Counts an open event stream for as long as the guard lives (an open page is not idle).
    pub fn stream_guard(self: &Arc<Self>) -> StreamGuard {
        self.open_streams.fetch_add(1, Ordering::SeqCst);
        StreamGuard(self.clone())
    }
}

pub struct StreamGuard(Arc<Shared>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::SeqCst);
        self.0.touch();
    }
}

/// Stops a server from another thread.
#[derive(Clone)]
pub struct Stopper(Arc<Shared>);

impl Stopper {
    pub fn stop(&self) {
        let _ = self.0.shutdown.send(true);
    }
}

/// A bound server, not yet serving.
pub struct Dash {
    runtime: tokio::runtime::Runtime,
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    options: Options,
}

impl Dash {
    /// Binds 127.0.0.1:`port` (never another address) and makes the per-start token.
    pub fn bind(service: Service, options: Options) -> Result<Dash, DashError> {
        let port = options.port;
        let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
            .map_err(|source| match source.kind() {
                std::io::ErrorKind::AddrInUse => DashError::PortInUse { port },
                _ => DashError::Bind { port, source },
            })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| DashError::Bind { port, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| DashError::Bind { port, source })?
            .port();
        let token = security::new_token().map_err(DashError::Token)?;
        // A feed id names the server start it came from; random, and unrelated to the token.
        let epoch = security::new_token().map_err(DashError::Token)?[..8].to_string();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("pitroom-dash")
            .max_blocking_threads(8)
            .build()
            .map_err(DashError::Runtime)?;
        let (shutdown, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            service,
            feed: Feed::new(epoch),
            redactors: Redactors::default(),
            token,
            port: bound,
            history: Mutex::new(None),
            facets: Mutex::new(None),
            started: Instant::now(),
            last_request_ms: AtomicU64::new(0),
            open_streams: AtomicUsize::new(0),
            shutdown,
        });
        Ok(Dash {
            runtime,
            listener,
            shared,
            options,
        })
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.shared.port)
    }

    /// The secret the page sends with its two actions (tests use it to act as the page).
    pub fn token(&self) -> &str {
        &self.shared.token
    }

    pub fn stopper(&self) -> Stopper {
        Stopper(self.shared.clone())
    }

    /// Serves until stopped (`Stopper`, SIGTERM, SIGINT, or the idle limit); then removes its
    /// registry entry.
    pub fn serve(self) -> Result<(), DashError> {
        let Dash {
            runtime,
            listener,
            shared,
            options,
        } = self;
        let home = shared.service.home().clone();
        let follower_stop = Arc::new(AtomicBool::new(false));
        let follower = {
            let follower = crate::follow::Follower::new(shared.clone());
            let stop = follower_stop.clone();
            std::thread::Builder::new()
                .name("pitroom-dash-follow".into())
                .spawn(move || follower.run(&stop))
                .map_err(DashError::Runtime)?
        };
        if options.registry {
            let entry = registry::Entry::for_this_process(shared.port, options.detached);
            registry::write(&home, &entry)?;
        }
        let result = runtime.block_on(serve_until_stopped(listener, shared.clone(), &options));
        follower_stop.store(true, Ordering::SeqCst);
        let _ = follower.join();
        if options.registry {
            registry::remove_own(&home);
        }
        result
    }
}

async fn serve_until_stopped(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    options: &Options,
) -> Result<(), DashError> {
    let listener = tokio::net::TcpListener::from_std(listener).map_err(DashError::Serve)?;
    let app = router(shared.clone());
    tokio::spawn(stop_on_signals(shared.clone()));
    if let Some(idle) = options.idle_stop {
        tokio::spawn(stop_when_idle(shared.clone(), idle));
    }
    let mut stopping = shared.stopping();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        let _ = stopping.wait_for(|s| *s).await;
    });
    let mut stopping = shared.stopping();
    tokio::select! {
        result = server => result.map_err(DashError::Serve),
        // Connections that do not close (a page mid-request) get a moment, not forever.
        _ = async {
            let _ = stopping.wait_for(|s| *s).await;
            tokio::time::sleep(Duration::from_secs(3)).await;
        } => Ok(()),
    }
}

async fn stop_on_signals(shared: Arc<Shared>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    let _ = shared.shutdown.send(true);
}

async fn stop_when_idle(shared: Arc<Shared>, idle: Duration) {
    let check = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::time::sleep(check).await;
        if shared.open_streams.load(Ordering::SeqCst) == 0 && shared.idle_for() >= idle {
            let _ = shared.shutdown.send(true);
            return;
        }
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(api::index))
        .route("/assets/{name}", get(api::asset))
        .route("/api/ping", get(api::ping))
        .route("/api/live", get(api::live))
        .route("/api/run/{id}", get(api::run))
        .route("/api/run/{id}/stop", post(api::stop))
        .route("/api/run/{id}/discard", post(api::discard))
        .route("/api/history", get(api::history))
        .route("/api/stats", get(api::stats))
        .route("/api/events", get(api::events))
        .fallback(api::not_found)
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// The security rules (see `security`), before any handler; then the hardening headers on
/// whatever answers.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    shared.touch();
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let checked = security::check_host(&parts.headers, &parts.uri, shared.port)
        .and_then(|()| security::check_method(&parts.method, &path))
        .and_then(|()| {
            if security::is_action(&path) {
                security::check_action(&parts.headers, shared.port, &shared.token)
            } else {
                Ok(())
            }
        });
    let mut response = match checked {
        Ok(()) => next.run(Request::from_parts(parts, body)).await,
        Err(refusal) => refused(refusal),
    };
    security::harden(response.headers_mut());
    response
}

fn refused(refusal: security::Refusal) -> Response {
    let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN);
    let mut response = api::error(status, refusal.message);
    if let Some(allow) = refusal.allow {
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    response.into_response()
}
