//! The handlers. Each reads through the run library (`pitroom_service`) in a blocking task —
//! the library is synchronous — and answers JSON, redacted; the two actions call
//! `Service::stop` and `Service::discard`. No run logic lives here.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use pitroom_service::{ErrorKind, RunRecord, RunState, Selector};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::feed::{Item, Resume};
use crate::server::Shared;
use crate::{assets, history, steps, view};

/// The newest runs a Live snapshot carries (crews among them come whole).
const LIVE_LIMIT: usize = 200;
/// How long a stop waits for the supervisor to record `stopped`.
const STOP_SETTLE: Duration = Duration::from_secs(10);

type Answer = Result<Value, (StatusCode, String)>;

/// A JSON error: `{"error": "what happened; what to do"}`.
pub fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

fn answer(result: Answer) -> Response {
    match result {
        Ok(value) => Json(value).into_response(),
        Err((status, message)) => error(status, message),
    }
}

/// Runs `work` on the blocking pool (file reads, SQLite, waiting for a stop).
async fn blocking(
    shared: &Arc<Shared>,
    work: impl FnOnce(&Shared) -> Answer + Send + 'static,
) -> Response {
    let shared = shared.clone();
    match tokio::task::spawn_blocking(move || work(&shared)).await {
        Ok(result) => answer(result),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the dashboard failed while answering ({e}); reload the page"),
        ),
    }
}

pub async fn index(State(shared): State<Arc<Shared>>) -> Response {
    let page = assets::INDEX_HTML.replace("{{TOKEN}}", &shared.token);
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        page,
    )
        .into_response()
}

pub async fn asset(Path(name): Path<String>) -> Response {
    match assets::find(&name) {
        Some((mime, bytes)) => (
            [(header::CONTENT_TYPE, HeaderValue::from_static(mime))],
            bytes,
        )
            .into_response(),
        None => not_found().await,
    }
}

pub async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no such page; the dashboard starts at /",
    )
}

pub async fn ping(State(shared): State<Arc<Shared>>) -> Response {
    Json(json!({"pitroom": "dash", "pid": std::process::id(), "port": shared.port})).into_response()
}

pub async fn live(State(shared): State<Arc<Shared>>) -> Response {
    blocking(&shared, |s| Ok(live_snapshot(s))).await
}

/// The newest runs as cards, crews whole, and the feed position the snapshot stands at (read
/// first, so a change after it reaches the page as an event).
fn live_snapshot(shared: &Shared) -> Value {
    let position = shared.feed.position();
    let home = shared.service.home();
    let ids = home.run_ids();
    let mut chosen: Vec<String> = ids.iter().rev().take(LIVE_LIMIT).cloned().collect();
    let mut records: Vec<RunRecord> = chosen
        .iter()
        .filter_map(|id| home.load_settled(id).ok())
        .collect();
    let groups: std::collections::BTreeSet<String> = records
        .iter()
        .filter_map(|r| r.spec.group.clone())
        .collect();
    for group in groups {
        for id in home.group_ids(&group) {
            if !chosen.contains(&id) {
                if let Ok(r) = home.load_settled(&id) {
                    records.push(r);
                }
                chosen.push(id);
            }
        }
    }
    let cards: Vec<Value> = records
        .iter()
        .map(|r| view::card(&shared.service, r, &shared.redactors.for_record(r)))
        .collect();
    json!({ "feed": position, "cards": cards, "total": ids.len() })
}

pub async fn run(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    blocking(&shared, move |s| run_detail(s, &id)).await
}

fn no_run(id: &str) -> (StatusCode, String) {
    (
        StatusCode::NOT_FOUND,
        format!(
            "no run {id} in this state directory (removed by pitroom clean?); see the Live view"
        ),
    )
}

fn load(shared: &Shared, id: &str) -> Result<RunRecord, (StatusCode, String)> {
    let home = shared.service.home();
    view::existing_run(home, id).ok_or_else(|| no_run(id))?;
    home.load_settled(id).map_err(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("run {id}'s record cannot be read: {e}; pitroom show {id} says more"),
        )
    })
}

fn run_detail(shared: &Shared, id: &str) -> Answer {
    let record = load(shared, id)?;
    let home = shared.service.home();
    let redactor = shared.redactors.for_record(&record);
    let timeline = steps::timeline(&record, &home.run_dir(id).join("events.jsonl"));
    // The service's patch is already redacted; a missing or unreadable one shows as none.
    let patch = shared.service.patch(&record).ok().flatten();
    Ok(view::detail(
        &shared.service,
        &record,
        &redactor,
        timeline,
        patch,
    ))
}

pub async fn stop(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    blocking(&shared, move |s| stop_run(s, &id)).await
}

fn conflict(message: String) -> (StatusCode, String) {
    (StatusCode::CONFLICT, message)
}

fn stop_run(shared: &Shared, id: &str) -> Answer {
    let record = load(shared, id)?;
    if !record.state.is_active() {
        return Err(conflict(format!(
            "run {id} is {}, not running or queued: there is nothing to stop",
            record.state.as_str()
        )));
    }
    let selector = Selector::Runs(vec![id.to_string()]);
    match shared.service.stop(&selector, STOP_SETTLE) {
        Ok(_) => {}
        Err(e) if e.kind == ErrorKind::StillRunning => {
            return Ok(json!({ "id": id, "stopping": true, "message": e.message }));
        }
        Err(e) => return Err(conflict(e.message)),
    }
    let record = load(shared, id)?;
    let redactor = shared.redactors.for_record(&record);
    Ok(json!({ "id": id, "card": view::card(&shared.service, &record, &redactor) }))
}

pub async fn discard(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    blocking(&shared, move |s| discard_run(s, &id)).await
}

fn discard_run(shared: &Shared, id: &str) -> Answer {
    load(shared, id)?;
    // `discard` refuses by the library's one rule (`Service::can_discard`), with its reason.
    let record = shared
        .service
        .discard(Some(id))
        .map_err(|e| conflict(e.message))?;
    let redactor = shared.redactors.for_record(&record);
    Ok(json!({ "id": id, "card": view::card(&shared.service, &record, &redactor) }))
}

/// `/api/history` parameters; empty ones count as absent.
#[derive(Debug, Default, Deserialize)]
pub struct HistoryQuery {
    pub q: Option<String>,
    pub model: Option<String>,
    pub worker: Option<String>,
    pub state: Option<String>,
    pub group: Option<String>,
    pub since: Option<String>,
    pub page: Option<usize>,
}

pub async fn history(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<HistoryQuery>,
) -> Response {
    blocking(&shared, move |s| history::search(s, &query)).await
}

#[derive(Debug, Default, Deserialize)]
pub struct StatsQuery {
    pub since: Option<String>,
}

pub async fn stats(State(shared): State<Arc<Shared>>, Query(query): Query<StatsQuery>) -> Response {
    blocking(&shared, move |s| history::stats(s, query.since.as_deref())).await
}

#[derive(Debug, Default, Deserialize)]
pub struct EventsQuery {
    /// Where the page's snapshot stands (its first connection; reconnects send
    /// `Last-Event-ID`, which wins).
    pub after: Option<String>,
}

fn item_event(shared: &Shared, item: &Item) -> Event {
    Event::default()
        .id(shared.feed.id(item.seq))
        .event(item.kind)
        .data(&item.data)
}

fn reset_event() -> Event {
    Event::default().event("reset").data("{}")
}

/// Server-sent events: what the page missed since its id, then every change as it happens.
/// Ends when the server stops.
pub async fn events(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(query): Query<EventsQuery>,
) -> Response {
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or(query.after.filter(|a| !a.is_empty()));
    let (resume, rx) = shared.feed.subscribe(after.as_deref());
    // Reconnect after a second, not the browser's default three.
    let mut pending = VecDeque::from([Event::default()
        .event("hello")
        .retry(Duration::from_secs(1))
        .data(json!({ "feed": shared.feed.epoch() }).to_string())]);
    match resume {
        Resume::From(items) => pending.extend(items.iter().map(|i| item_event(&shared, i))),
        Resume::Reset => pending.push_back(reset_event()),
    }
    let state = Stream {
        pending,
        rx,
        stopping: shared.stopping(),
        _guard: shared.stream_guard(),
        shared,
    };
    let stream = futures_util::stream::unfold(state, next_event);
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

struct Stream {
    pending: VecDeque<Event>,
    rx: tokio::sync::broadcast::Receiver<Arc<Item>>,
    stopping: tokio::sync::watch::Receiver<bool>,
    _guard: crate::server::StreamGuard,
    shared: Arc<Shared>,
}

async fn next_event(mut s: Stream) -> Option<(Result<Event, Infallible>, Stream)> {
    use tokio::sync::broadcast::error::RecvError;
    if let Some(event) = s.pending.pop_front() {
        return Some((Ok(event), s));
    }
    let event = tokio::select! {
        received = s.rx.recv() => match received {
            Ok(item) => item_event(&s.shared, &item),
            // Fell behind the channel: the page reloads its snapshot.
            Err(RecvError::Lagged(_)) => reset_event(),
            Err(RecvError::Closed) => return None,
        },
        _ = s.stopping.wait_for(|stop| *stop) => return None,
    };
    Some((Ok(event), s))
}

/// A state name as the page may filter by it.
pub fn is_state(s: &str) -> bool {
    [
        RunState::Queued,
        RunState::Running,
        RunState::Done,
        RunState::Failed,
        RunState::Timeout,
        RunState::Stopped,
        RunState::OverBudget,
    ]
    .iter()
    .any(|st| st.as_str() == s)
}
