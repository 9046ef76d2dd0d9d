//! The dashboard's HTTP API and its security rules, against a real server on 127.0.0.1 over a
//! state directory of hand-written records.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test: a failed expectation is the test failing, with its message"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pitroom_dash::{Dash, Options, Stopper};
use pitroom_service::{Home, Mode, RunPhase, RunRecord, RunSpec, RunState, Service};
use serde_json::Value;

/// A generous limit that only trips when the mechanism under test is broken.
const LIMIT: Duration = Duration::from_secs(20);

struct Server {
    _dir: tempfile::TempDir,
    home: Home,
    repo: PathBuf,
    port: u16,
    token: String,
    stopper: Stopper,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start() -> Server {
        Server::start_with(|_| {}, None)
    }

    /// A state dir prepared by `prepare`, and a server on a free port.
    fn start_with(prepare: impl FnOnce(&Server0), idle_stop: Option<Duration>) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("state");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("repo dir");
        let home = Home { root: root.clone() };
        prepare(&Server0 {
            home: home.clone(),
            repo: repo.clone(),
        });
        let env = vec![("PITROOM_HOME".to_string(), root.display().to_string())];
        let service = Service::new(env, std::env::current_exe().expect("test exe"));
        let dash = Dash::bind(
            service,
            Options {
                port: 0,
                idle_stop,
                ..Options::default()
            },
        )
        .expect("binds");
        let (port, token, stopper) = (dash.port(), dash.token().to_string(), dash.stopper());
        let thread = std::thread::spawn(move || dash.serve().expect("serves"));
        Server {
            _dir: dir,
            home,
            repo,
            port,
            token,
            stopper,
            thread: Some(thread),
        }
    }

    fn get(&self, path: &str) -> Reply {
        self.send("GET", path, &[("Host", &self.host())])
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A POST as the page makes it: its own origin and the token.
    fn act(&self, id: &str, action: &str) -> Reply {
        let (host, origin) = (self.host(), self.origin());
        self.send(
            "POST",
            &format!("/api/run/{id}/{action}"),
            &[
                ("Host", &host),
                ("Origin", &origin),
                ("x-pitroom-token", &self.token),
            ],
        )
    }

    fn send(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connects");
        stream.set_read_timeout(Some(LIMIT)).expect("timeout");
        let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("Content-Length: 0\r\n\r\n");
        stream.write_all(request.as_bytes()).expect("sends");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).expect("reads");
        Reply::parse(&String::from_utf8_lossy(&raw))
    }

    fn write_record(&self, record: &RunRecord) {
        write_record(&self.home, record);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a test may prepare before the server starts.
struct Server0 {
    home: Home,
    repo: PathBuf,
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn parse(raw: &str) -> Reply {
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((raw, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        Reply {
            status,
            head: head.to_ascii_lowercase(),
            body: body.to_string(),
        }
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {} {}", self.status, self.body))
    }

    fn header(&self, name: &str) -> Option<String> {
        self.head
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_string))
    }
}

/// A spec from JSON, so fields added later with defaults need no change here.
fn spec(dir: &Path, mode: Mode, task: &str) -> RunSpec {
    serde_json::from_value(serde_json::json!({
        "task": task,
        "mode": mode,
        "backend": "opencode",
        "model": "fake/m",
        "effort": null,
        "web": false,
        "dir": dir,
        "timeout_secs": 60.0,
        "watchdog_secs": 60.0,
        "background": true,
        "allow_non_git": false,
        "parent": null,
        "primary": "sonnet",
        "price": null,
    }))
    .expect("a run spec")
}

fn record(id: &str, repo: &Path, mode: Mode, state: RunState, task: &str) -> RunRecord {
    let mut r = RunRecord::new(
        id.into(),
        spec(repo, mode, task),
        "2026-11-30T10:00:00Z".parse().expect("a stamp"),
    );
    r.repo = Some(repo.to_path_buf());
    r.state = state;
    r.started_at = Some("2026-11-30T10:00:01Z".parse().expect("a stamp"));
    if !state.is_active() {
        r.ended_at = Some("2026-11-30T10:00:09Z".parse().expect("a stamp"));
        r.duration = Some(Duration::from_secs(8));
    }
    r
}

fn write_record(home: &Home, record: &RunRecord) {
    std::fs::create_dir_all(home.run_dir(&record.id)).expect("run dir");
    record
        .write(&home.record_path(&record.id))
        .expect("record written");
}

const DONE: &str = "20261130-100000-000a";
const ISOLATED: &str = "20261130-100100-000b";

/// A finished read run and a finished isolated run with its copy.
fn two_runs(s: &Server0) {
    let mut done = record(
        DONE,
        &s.repo,
        Mode::Read,
        RunState::Done,
        "find the cookie reader",
    );
    done.answer = Some("SUMMARY: the cookie is read in auth.rs:3".into());
    write_record(&s.home, &done);
    let mut iso = record(
        ISOLATED,
        &s.repo,
        Mode::Isolate,
        RunState::Done,
        "add a check",
    );
    let copy = s.home.copies().join(ISOLATED);
    std::fs::create_dir_all(&copy).expect("copy");
    iso.copy = Some(copy);
    write_record(&s.home, &iso);
}

#[test]
fn a_request_naming_another_host_is_refused_with_403() {
    let s = Server::start();
    let other_port = format!("127.0.0.1:{}", s.port.wrapping_add(1));
    for host in [
        "evil.example",
        "attacker.test:80",
        other_port.as_str(),
        "[::1]",
    ] {
        let reply = s.send("GET", "/api/live", &[("Host", host)]);
        assert_eq!(reply.status, 403, "{host}: {}", reply.body);
        assert!(reply.body.contains("answers only to"), "{}", reply.body);
    }
    let named = format!("localhost:{}", s.port);
    assert_eq!(s.send("GET", "/api/live", &[("Host", &named)]).status, 200);
    assert_eq!(s.get("/api/live").status, 200);
}

#[test]
fn the_page_carries_its_token_and_every_answer_the_strict_headers() {
    let s = Server::start();
    let page = s.get("/");
    assert_eq!(page.status, 200);
    assert!(page
        .body
        .contains(&format!("name=\"pitroom-token\" content=\"{}\"", s.token)));
    for reply in [
        page,
        s.get("/api/live"),
        s.get("/nope"),
        s.send("PUT", "/", &[("Host", &s.host())]),
    ] {
        let csp = reply.header("content-security-policy").expect("CSP");
        assert!(csp.contains("default-src 'self'"), "{csp}");
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(
            reply.header("x-content-type-options").as_deref(),
            Some("nosniff")
        );
        assert_eq!(
            reply.header("referrer-policy").as_deref(),
            Some("no-referrer")
        );
        assert_eq!(reply.header("cache-control").as_deref(), Some("no-store"));
    }
}

#[test]
fn an_action_with_a_missing_or_forged_token_is_refused_and_changes_nothing() {
    let s = Server::start_with(two_runs, None);
    let (host, origin) = (s.host(), s.origin());
    let path = format!("/api/run/{ISOLATED}/discard");
    let missing = s.send("POST", &path, &[("Host", &host), ("Origin", &origin)]);
    assert_eq!(missing.status, 403, "{}", missing.body);
    let forged_token = "0".repeat(64);
    let forged = s.send(
        "POST",
        &path,
        &[
            ("Host", &host),
            ("Origin", &origin),
            ("x-pitroom-token", &forged_token),
        ],
    );
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(forged.body.contains("token"), "{}", forged.body);
    assert!(
        s.home.copies().join(ISOLATED).is_dir(),
        "the copy is still there"
    );
}

#[test]
fn an_action_from_a_foreign_origin_is_refused_even_with_the_token() {
    let s = Server::start_with(two_runs, None);
    let host = s.host();
    let path = format!("/api/run/{ISOLATED}/discard");
    for origin in [Some("http://evil.example"), Some("null"), None] {
        let mut headers = vec![
            ("Host", host.as_str()),
            ("x-pitroom-token", s.token.as_str()),
        ];
        if let Some(o) = origin {
            headers.push(("Origin", o));
        }
        let reply = s.send("POST", &path, &headers);
        assert_eq!(reply.status, 403, "{origin:?}: {}", reply.body);
    }
    assert!(s.home.copies().join(ISOLATED).is_dir());
}

#[test]
fn methods_other_than_the_paths_own_get_405() {
    let s = Server::start();
    let host = s.host();
    for (method, path, allow) in [
        ("POST", "/api/live", "get, head"),
        ("PUT", "/", "get, head"),
        ("DELETE", "/api/run/x", "get, head"),
        ("OPTIONS", "/api/run/x/stop", "post"),
        ("GET", "/api/run/x/stop", "post"),
        ("PATCH", "/api/history", "get, head"),
    ] {
        let reply = s.send(method, path, &[("Host", &host)]);
        assert_eq!(reply.status, 405, "{method} {path}: {}", reply.body);
        assert_eq!(
            reply.header("allow").as_deref(),
            Some(allow),
            "{method} {path}"
        );
    }
    assert_eq!(s.send("HEAD", "/", &[("Host", &host)]).status, 200);
}

#[test]
fn asset_and_run_paths_cannot_escape_the_embedded_set_or_the_state_dir() {
    let s = Server::start_with(two_runs, None);
    assert_eq!(s.get("/assets/app.js").status, 200);
    for path in [
        "/assets/../Cargo.toml",
        "/assets/..%2f..%2fCargo.toml",
        "/assets/%2e%2e/lib.rs",
        "/assets/app.js/..",
        "/assets/",
        "/api/run/..%2f..%2fetc%2fpasswd",
        "/api/run/..",
        "/api/run/%2e%2e",
        "/api/run/ABC",
    ] {
        let reply = s.get(path);
        assert_eq!(reply.status, 404, "{path}: {}", reply.body);
    }
    assert_eq!(s.get(&format!("/api/run/{DONE}")).status, 200);
}

#[test]
fn an_action_the_run_cannot_take_is_a_409_with_the_reason() {
    let s = Server::start_with(two_runs, None);
    let stop_done = s.act(DONE, "stop");
    assert_eq!(stop_done.status, 409, "{}", stop_done.body);
    assert!(stop_done.json()["error"]
        .as_str()
        .is_some_and(|e| e.contains("not running")));
    let discard_read = s.act(DONE, "discard");
    assert_eq!(discard_read.status, 409, "{}", discard_read.body);
    assert!(discard_read.body.contains("only an isolated run"));
    assert_eq!(s.act("20991231-000000-000z", "stop").status, 404);
}

#[test]
fn discard_removes_an_isolated_copy_and_a_second_discard_is_a_409() {
    let s = Server::start_with(two_runs, None);
    let first = s.act(ISOLATED, "discard");
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.json()["card"]["discarded"], true);
    assert!(!s.home.copies().join(ISOLATED).exists(), "the copy is gone");
    let record = s.home.load(ISOLATED).expect("record");
    assert!(record.patch.is_discarded());
    let again = s.act(ISOLATED, "discard");
    assert_eq!(again.status, 409, "{}", again.body);
}

#[test]
fn a_stale_running_record_is_settled_and_stopping_it_is_a_409() {
    // No supervisor ever ran for this record: reading it settles it as failed.
    let s = Server::start_with(
        |s| {
            let r = record(DONE, &s.repo, Mode::Read, RunState::Running, "orphan");
            write_record(&s.home, &r);
        },
        None,
    );
    let reply = s.act(DONE, "stop");
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert_eq!(s.home.load(DONE).expect("record").state, RunState::Failed);
}

#[test]
fn secrets_are_redacted_in_every_json_answer() {
    const KEY: &str = "sk-ant-api03-Xq7vL2pR9mK4tN8wB3cF6hJ1zD5gY0s";
    const ENV_VALUE: &str = "correct-horse-battery-staple";
    let s = Server::start_with(
        |s| {
            std::fs::write(s.repo.join(".env"), format!("DB_PASSWORD={ENV_VALUE}\n"))
                .expect(".env");
            let mut r = record(
                DONE,
                &s.repo,
                Mode::Read,
                RunState::Done,
                &format!("use {KEY}"),
            );
            r.answer = Some(format!(
                "SUMMARY: the password is {ENV_VALUE} and the key {KEY}"
            ));
            r.last_step = Some(format!("read {ENV_VALUE}"));
            write_record(&s.home, &r);
        },
        None,
    );
    for path in [
        format!("/api/run/{DONE}"),
        "/api/live".into(),
        "/api/history?q=password".into(),
    ] {
        let reply = s.get(&path);
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        assert!(
            !reply.body.contains(KEY),
            "{path} leaks the key: {}",
            reply.body
        );
        assert!(
            !reply.body.contains(ENV_VALUE),
            "{path} leaks the .env value: {}",
            reply.body
        );
    }
    assert!(s
        .get(&format!("/api/run/{DONE}"))
        .body
        .contains("[REDACTED]"));
}

/// Reads server-sent events until `want` returns a value (or the limit passes).
fn read_events<T>(
    reader: &mut BufReader<TcpStream>,
    mut want: impl FnMut(&str, &str, &str) -> Option<T>,
) -> T {
    let (mut id, mut event, mut data) = (String::new(), String::new(), String::new());
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).expect("the stream stays open");
        assert!(n > 0, "the stream ended");
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if let Some(found) = want(&id, &event, &data) {
                return found;
            }
            event.clear();
            data.clear();
        } else if let Some(v) = l.strip_prefix("id: ").or(l.strip_prefix("id:")) {
            id = v.to_string();
        } else if let Some(v) = l.strip_prefix("event: ").or(l.strip_prefix("event:")) {
            event = v.to_string();
        } else if let Some(v) = l.strip_prefix("data: ").or(l.strip_prefix("data:")) {
            data.push_str(v);
        }
    }
}

fn open_events(s: &Server, last_event_id: Option<&str>) -> BufReader<TcpStream> {
    let mut stream = TcpStream::connect(("127.0.0.1", s.port)).expect("connects");
    stream.set_read_timeout(Some(LIMIT)).expect("timeout");
    let mut request = format!(
        "GET /api/events HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n",
        s.host()
    );
    if let Some(id) = last_event_id {
        request.push_str(&format!("Last-Event-ID: {id}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("sends");
    let mut reader = BufReader::new(stream);
    read_events(&mut reader, |_, event, _| (event == "hello").then_some(()));
    reader
}

fn steps_of(data: &str) -> Option<u64> {
    serde_json::from_str::<Value>(data).ok()?["steps"].as_u64()
}

#[test]
fn a_record_change_is_pushed_and_a_reconnect_resumes_after_its_last_event_id() {
    let s = Server::start_with(
        |s| {
            let mut r = record(DONE, &s.repo, Mode::Read, RunState::Done, "followed");
            r.tally.steps = 1;
            write_record(&s.home, &r);
        },
        None,
    );
    let mut r = s.home.load(DONE).expect("record");
    let mut events = open_events(&s, None);
    // The follower may still be taking note of the runs at start; push until it reports.
    r.tally.steps = 2;
    s.write_record(&r);
    let first_id = read_events(&mut events, |id, event, data| {
        (event == "card" && steps_of(data) == Some(2)).then(|| id.to_string())
    });
    drop(events);
    // Two changes while that page is away, each seen published by another page before the
    // next (a follower that reads after both renames would report only the second).
    let mut watcher = open_events(&s, Some(&first_id));
    for steps in [3, 4] {
        r.tally.steps = steps;
        s.write_record(&r);
        read_events(&mut watcher, |_, event, data| {
            (event == "card" && steps_of(data) == Some(steps as u64)).then_some(())
        });
    }
    let mut resumed = open_events(&s, Some(&first_id));
    let mut got = Vec::new();
    read_events(&mut resumed, |_, event, data| {
        if event == "card" {
            got.extend(steps_of(data));
        }
        (got.last() == Some(&4)).then_some(())
    });
    assert_eq!(got, [3, 4], "exactly what was missed, in order");
    let mut stale = open_events(&s, Some("another-server.7"));
    read_events(&mut stale, |_, event, _| (event == "reset").then_some(()));
}

#[test]
fn a_new_run_directory_is_announced_as_a_card() {
    let s = Server::start();
    let mut events = open_events(&s, None);
    let r = record(
        ISOLATED,
        &s.repo,
        Mode::Isolate,
        RunState::Queued,
        "a new one",
    );
    s.write_record(&r);
    let card: Value = read_events(&mut events, |_, event, data| {
        (event == "card").then(|| serde_json::from_str(data).expect("json"))
    });
    assert_eq!(card["id"], ISOLATED);
    assert_eq!(card["task"], "a new one");
}

#[test]
fn a_card_carries_the_stamps_as_the_record_file_writes_them() {
    let s = Server::start_with(
        |s| {
            let mut r = record(DONE, &s.repo, Mode::Read, RunState::Done, "stamped");
            // A wall-clock stamp has fractional seconds: they are kept as written.
            r.ended_at = Some("2026-11-30T10:00:09.123456789Z".parse().expect("a stamp"));
            write_record(&s.home, &r);
        },
        None,
    );
    let file = std::fs::read_to_string(s.home.record_path(DONE)).expect("record file");
    let live = s.get("/api/live").json();
    let card = live["cards"]
        .as_array()
        .and_then(|cards| cards.iter().find(|c| c["id"] == DONE).cloned())
        .unwrap_or_else(|| panic!("no card {DONE}: {live:#}"));
    for (field, stamp) in [
        ("created_at", "2026-11-30T10:00:00Z"),
        ("started_at", "2026-11-30T10:00:01Z"),
        ("ended_at", "2026-11-30T10:00:09.123456789Z"),
    ] {
        assert_eq!(card[field], stamp, "{field}: {card:#}");
        assert!(
            file.contains(&format!("\"{field}\": \"{stamp}\"")),
            "{field}: {file}"
        );
    }
}

#[test]
fn a_run_held_by_a_rate_limit_shows_on_its_card_until_when() {
    let s = Server::start_with(
        |s| {
            let mut r = record(DONE, &s.repo, Mode::Read, RunState::Queued, "held one");
            r.phase = Some(RunPhase::Held);
            r.held_until = Some("2026-11-30T14:05:00Z".parse().expect("a stamp"));
            write_record(&s.home, &r);
            let waiting = record(ISOLATED, &s.repo, Mode::Read, RunState::Queued, "waiting");
            write_record(&s.home, &waiting);
        },
        None,
    );
    let live = s.get("/api/live").json();
    let card = |id: &str| {
        live["cards"]
            .as_array()
            .and_then(|cards| cards.iter().find(|c| c["id"] == id).cloned())
            .unwrap_or_else(|| panic!("no card {id}: {live:#}"))
    };
    assert_eq!(card(DONE)["state"], "queued");
    assert_eq!(card(DONE)["held_until"], "14:05 UTC");
    assert_eq!(
        card(ISOLATED)["held_until"],
        Value::Null,
        "only waits for a slot"
    );
}

#[test]
fn history_finds_a_finished_run_by_a_word_of_its_answer_and_pages() {
    let s = Server::start_with(
        |s| {
            for n in 0..30 {
                let id = format!("20261130-1000{n:02}-000a");
                let mut r = record(
                    &id,
                    &s.repo,
                    Mode::Read,
                    RunState::Done,
                    &format!("task {n}"),
                );
                r.answer = Some(format!(
                    "SUMMARY: answer {n} mentions {}",
                    if n == 7 { "zanzibar" } else { "nothing" }
                ));
                write_record(&s.home, &r);
            }
        },
        None,
    );
    let found = s.get("/api/history?q=zanzibar").json();
    let ids: Vec<&str> = found["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .filter_map(|h| h["id"].as_str())
        .collect();
    assert_eq!(ids, ["20261130-100007-000a"]);
    let first = s.get("/api/history").json();
    assert_eq!(first["hits"].as_array().map(Vec::len), Some(25));
    assert_eq!(first["has_more"], true);
    let second = s.get("/api/history?page=1").json();
    assert_eq!(second["hits"].as_array().map(Vec::len), Some(5));
    assert_eq!(second["has_more"], false);
    assert_eq!(s.get("/api/history?state=bogus").status, 400);
    let stats = s.get("/api/stats?since=all").json();
    assert_eq!(stats["workers"][0]["runs"], 30);
    assert_eq!(stats["days"][0]["day"], "2026-11-30");
}

#[test]
fn a_server_with_an_idle_limit_stops_by_itself() {
    let mut s = Server::start_with(|_| {}, Some(Duration::from_millis(300)));
    assert_eq!(s.get("/api/ping").status, 200);
    let thread = s.thread.take().expect("serving");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = thread.join();
        let _ = tx.send(());
    });
    rx.recv_timeout(LIMIT)
        .expect("the server ended after its idle limit");
}
