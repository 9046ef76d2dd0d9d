//! Unit tests: schema, upsert, search, stats, import, damage.

use pitroom_core::record::{ChangedFile, PatchFate, Receipt, Tally};
use pitroom_core::{Home, RunRecord, RunSpec, RunState};
use pitroom_workers::{FailureKind, Usage};

use super::*;

fn spec(task: &str, model: Option<&str>) -> RunSpec {
    // Built from JSON so fields added later with serde defaults need no change here.
    serde_json::from_value(serde_json::json!({
        "task": task, "mode": "read", "backend": "opencode", "model": model, "effort": null,
        "web": false, "dir": "/repo", "timeout_secs": 60.0, "watchdog_secs": 60.0,
        "background": false, "allow_non_git": false, "parent": null, "primary": "sonnet",
        "price": null,
    }))
    .unwrap()
}

/// A finished run started `at` (RFC 3339), lasting `ms`, with `tokens` and a saving.
fn record(
    id: &str,
    task: &str,
    model: Option<&str>,
    state: RunState,
    at: &str,
    ms: u64,
) -> RunRecord {
    let at: jiff::Timestamp = at.parse().expect("a test stamp");
    let mut r = RunRecord::new(id.into(), spec(task, model), at);
    r.state = state;
    r.started_at = Some(at);
    r.ended_at = Some(at);
    r.duration = Some(std::time::Duration::from_millis(ms));
    r.tally = Tally {
        usage: Usage {
            input: 1000,
            output: 100,
            ..Usage::default()
        },
        steps: 2,
        tool_calls: 3,
        cost: Some(0.01),
        ..Tally::default()
    };
    r.receipt = Some(Receipt {
        worker_tokens: 1100,
        returned_tokens: 50,
        compression: 22.0,
        cost: Some(0.01),
        primary: "Claude Sonnet".into(),
        saved: Some(0.5),
    });
    r.answer = Some(format!("answer for {task}"));
    r
}

fn row(r: &RunRecord) -> RunRow {
    RunRow::new(r, &RunDocs::default())
}

fn store() -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(&d.path().join(DB_FILE)).unwrap();
    (d, s)
}

fn search(s: &Store, text: Option<&str>) -> Vec<String> {
    s.search(&Filter {
        text: text.map(str::to_string),
        ..Filter::default()
    })
    .unwrap()
    .into_iter()
    .map(|h| h.id)
    .collect()
}

const T0: &str = "2026-11-20T10:00:00Z";

#[test]
fn a_new_database_gets_the_schema_version_and_wal() {
    let (d, s) = store();
    let version: i64 = s
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = s
        .conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(s);
    // Reopening an up-to-date database changes nothing.
    let s = Store::open(&d.path().join(DB_FILE)).unwrap();
    assert_eq!(s.count().unwrap(), 0);
}

/// The connection that creates the file skips fsyncs (nothing in it yet that the run
/// directories cannot rebuild); every connection to an existing database syncs as NORMAL.
#[test]
fn only_the_connection_that_creates_the_database_skips_fsyncs() {
    let (d, s) = store();
    let sync = |s: &Store| -> i64 {
        s.conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(sync(&s), 0, "OFF while the file is created");
    s.upsert(&row(&record(
        "20261101-000000-000a",
        "first",
        None,
        RunState::Done,
        "2026-11-01T00:00:00Z",
        1,
    )))
    .unwrap();
    drop(s);
    let s = Store::open(&d.path().join(DB_FILE)).unwrap();
    assert_eq!(sync(&s), 1, "NORMAL once it exists");
    assert_eq!(s.count().unwrap(), 1, "the first connection's row is kept");
}

#[test]
fn a_newer_schema_is_refused_not_misread() {
    let (d, s) = store();
    s.conn.pragma_update(None, "user_version", 99).unwrap();
    drop(s);
    let err = Store::open(&d.path().join(DB_FILE)).err().unwrap();
    assert!(matches!(err, StoreError::TooNew { found: 99, .. }), "{err}");
}

#[test]
fn upserting_the_same_run_twice_leaves_one_row_with_the_latest_values() {
    let (_d, s) = store();
    let mut r = record("r1", "count the parsers", None, RunState::Done, T0, 1000);
    s.upsert(&row(&r)).unwrap();
    s.upsert(&row(&r)).unwrap();
    assert_eq!(s.count().unwrap(), 1);
    r.spec.task = "list the lexers".into();
    r.answer = Some("two lexers".into());
    r.patch = PatchFate::Applied;
    s.upsert(&row(&r)).unwrap();
    assert_eq!(s.count().unwrap(), 1);
    // The search index follows the update: the old words are gone, the new ones found.
    assert!(search(&s, Some("parsers")).is_empty());
    assert_eq!(search(&s, Some("lexers")), vec!["r1"]);
}

#[test]
fn search_finds_words_in_task_answer_and_steps_as_prefixes() {
    let (_d, s) = store();
    let a = record(
        "a",
        "where is the config loaded",
        None,
        RunState::Done,
        T0,
        1,
    );
    let mut b = record("b", "explain the scheduler", None, RunState::Done, T0, 1);
    b.answer = Some("The scheduler lives in src/sched.rs:40".into());
    let c = record("c", "rename a variable", None, RunState::Done, T0, 1);
    s.upsert(&row(&a)).unwrap();
    s.upsert(&row(&b)).unwrap();
    s.upsert(&RunRow::new(
        &c,
        &RunDocs {
            steps: "grep tokenizer\nread src/lex.rs\n".into(),
            patch: None,
        },
    ))
    .unwrap();
    assert_eq!(search(&s, Some("config")), vec!["a"]);
    assert_eq!(search(&s, Some("sched")), vec!["b"], "prefix match");
    assert_eq!(
        search(&s, Some("sched.rs:40")),
        vec!["b"],
        "punctuation is not syntax"
    );
    assert_eq!(
        search(&s, Some("tokenizer")),
        vec!["c"],
        "steps are searched"
    );
    assert!(
        search(&s, Some("config scheduler")).is_empty(),
        "all words must match"
    );
    let hits = s
        .search(&Filter {
            text: Some("scheduler".into()),
            ..Filter::default()
        })
        .unwrap();
    assert!(hits[0].snippet.as_deref().unwrap().contains("[scheduler]"));
}

#[test]
fn filters_narrow_by_model_state_and_time_and_limit_counts() {
    let (_d, s) = store();
    let rows = [
        record(
            "1",
            "task one",
            Some("m/a"),
            RunState::Done,
            "2026-11-01T00:00:00Z",
            1,
        ),
        record(
            "2",
            "task two",
            Some("m/b"),
            RunState::Failed,
            "2026-11-10T00:00:00Z",
            1,
        ),
        record(
            "3",
            "task three",
            None,
            RunState::Done,
            "2026-11-20T00:00:00Z",
            1,
        ),
    ];
    for r in &rows {
        s.upsert(&row(r)).unwrap();
    }
    let find =
        |f: Filter| -> Vec<String> { s.search(&f).unwrap().into_iter().map(|h| h.id).collect() };
    assert_eq!(find(Filter::default()), vec!["3", "2", "1"], "newest first");
    let model = |m: &str| Filter {
        model: Some(m.into()),
        ..Filter::default()
    };
    assert_eq!(find(model("m/a")), vec!["1"]);
    assert_eq!(find(model("opencode:m/b")), vec!["2"]);
    assert_eq!(find(model("opencode")), vec!["3", "2", "1"]);
    assert_eq!(
        find(Filter {
            state: Some("failed".into()),
            ..Filter::default()
        }),
        vec!["2"]
    );
    let now: jiff::Timestamp = "2026-11-21T00:00:00Z".parse().unwrap();
    assert_eq!(
        find(Filter {
            since: parse_since("15d", now).unwrap(),
            ..Filter::default()
        }),
        vec!["3", "2"]
    );
    assert_eq!(
        find(Filter {
            text: Some("task".into()),
            limit: 2,
            ..Filter::default()
        })
        .len(),
        2
    );
}

#[test]
fn median_of_odd_and_even_counts() {
    assert_eq!(median(&mut []), None);
    assert_eq!(median(&mut [5]), Some(5));
    assert_eq!(median(&mut [9, 1, 5]), Some(5));
    assert_eq!(median(&mut [4, 1, 3, 2]), Some(2), "(2+3)/2 rounds down");
    assert_eq!(median(&mut [10, 20]), Some(15));
    assert_eq!(
        median(&mut [u64::MAX, u64::MAX]),
        Some(u64::MAX),
        "no overflow"
    );
}

#[test]
fn stats_count_rate_limits_apart_from_the_success_rate_and_median() {
    let (_d, s) = store();
    let mut runs = vec![
        record("1", "t", Some("m/a"), RunState::Done, T0, 1000),
        record("2", "t", Some("m/a"), RunState::Done, T0, 3000),
        record("3", "t", Some("m/a"), RunState::Failed, T0, 2000),
        record("4", "t", Some("m/a"), RunState::Failed, T0, 90_000),
        record("5", "t", Some("m/b"), RunState::Timeout, T0, 500),
    ];
    runs[3].failure = Some(FailureKind::RateLimited);
    runs[3].receipt = None;
    runs[3].tally = Tally::default();
    runs[2].receipt.as_mut().unwrap().cost = None;
    runs[2].tally.cost = None;
    for r in &runs {
        s.upsert(&row(r)).unwrap();
    }
    let stats = s.stats(&Since::all()).unwrap();
    assert_eq!(stats.len(), 2);
    let a = &stats[0];
    assert_eq!(a.worker, "opencode:m/a");
    assert_eq!((a.runs, a.done, a.rate_limited), (4, 2, 1));
    assert_eq!(a.success_rate, Some(2.0 / 3.0), "the 429 is not judged");
    assert_eq!(
        a.median_ms,
        Some(2000),
        "median of 1000, 2000, 3000; the 429 left out"
    );
    assert_eq!(a.tokens, 3 * 1100);
    assert!((a.cost - 0.02).abs() < 1e-12, "{}", a.cost);
    assert_eq!(a.cost_unknown_runs, 1);
    assert!((a.saved - 1.5).abs() < 1e-12);
    let b = &stats[1];
    assert_eq!((b.runs, b.done, b.success_rate), (1, 0, Some(0.0)));
}

#[test]
fn savings_add_up_per_period_and_per_model() {
    let (_d, s) = store();
    let mut old = record(
        "old",
        "t",
        Some("m/a"),
        RunState::Done,
        "2026-10-01T00:00:00Z",
        1,
    );
    old.receipt.as_mut().unwrap().saved = Some(2.0);
    let new = record(
        "new",
        "t",
        Some("m/b"),
        RunState::Done,
        "2026-11-29T00:00:00Z",
        1,
    );
    let mut estimated = record(
        "est",
        "t",
        Some("m/b"),
        RunState::Done,
        "2026-11-29T00:00:00Z",
        1,
    );
    estimated.tally.cost = None; // the receipt's cost came from worker_prices
    let mut empty = record(
        "none",
        "t",
        None,
        RunState::Failed,
        "2026-11-29T00:00:00Z",
        1,
    );
    empty.receipt = None;
    empty.tally = Tally::default();
    for r in [&old, &new, &estimated, &empty] {
        s.upsert(&row(r)).unwrap();
    }
    let all = s.savings(&Since::all()).unwrap();
    assert_eq!(all.runs, 3, "a run without tokens is no delegated task");
    assert!((all.saved - 3.0).abs() < 1e-12);
    assert_eq!(all.tokens, 3300);
    assert_eq!(all.returned_tokens, 150);
    assert_eq!(all.compression, Some(22.0));
    assert_eq!(all.cost_estimated_runs, 1);
    assert_eq!(all.primaries, vec!["Claude Sonnet"]);
    assert_eq!(
        all.per_model[0].worker, "opencode:m/a",
        "largest saving first"
    );
    assert_eq!(all.per_model[1].runs, 2);
    let now: jiff::Timestamp = "2026-11-30T00:00:00Z".parse().unwrap();
    let week = s.savings(&Since::days(7, now)).unwrap();
    assert_eq!(week.runs, 2);
    assert!((week.saved - 1.0).abs() < 1e-12);
}

/// A home in a temporary directory (kept while the `TempDir` lives).
fn temp_home() -> (tempfile::TempDir, Home) {
    let d = tempfile::tempdir().unwrap();
    let home = Home {
        root: d.path().to_path_buf(),
    };
    (d, home)
}

/// A finished run of `task`, written to its directory under `home` with no events or patch.
fn written_done_run(home: &Home, task: &str) -> RunRecord {
    let r = record("20261120-100000-000a", task, None, RunState::Done, T0, 5);
    write_run(home, &r, "", "");
    r
}

fn write_run(home: &Home, r: &RunRecord, events: &str, patch: &str) {
    std::fs::create_dir_all(home.run_dir(&r.id)).unwrap();
    r.write(&home.record_path(&r.id)).unwrap();
    std::fs::write(home.run_dir(&r.id).join("events.jsonl"), events).unwrap();
    std::fs::write(home.run_dir(&r.id).join("changes.patch"), patch).unwrap();
}

const TOOL_EVENT: &str = r#"{"type":"tool_use","timestamp":1,"sessionID":"s","part":{"id":"p","sessionID":"s","messageID":"m","type":"tool","callID":"c","tool":"grep","state":{"status":"completed","input":{"pattern":"frobnicate"},"output":"x","title":"frobnicate","metadata":{},"time":{"start":1,"end":2}}}}"#;

#[test]
fn import_rebuilds_finished_runs_from_their_directories() {
    let (_d, home) = temp_home();
    let mut done = record(
        "20261120-100000-000a",
        "fix the parser",
        None,
        RunState::Done,
        T0,
        5,
    );
    done.changes = vec![ChangedFile {
        status: 'M',
        path: "src/a.rs".into(),
        old_path: None,
        added: Some(1),
        deleted: Some(1),
    }];
    write_run(
        &home,
        &done,
        &format!("{TOOL_EVENT}\n"),
        "diff --git a/src/a.rs b/src/a.rs\n",
    );
    let mut running = record(
        "20261120-100001-000a",
        "still going",
        None,
        RunState::Running,
        T0,
        5,
    );
    running.ended_at = None;
    write_run(&home, &running, "", "");
    std::fs::create_dir_all(home.run_dir("20261120-100002-000a")).unwrap();
    std::fs::write(home.record_path("20261120-100002-000a"), "{ not json").unwrap();

    let mut s = Store::open(&db_path(&home)).unwrap();
    let report = s.import(&home).unwrap();
    assert_eq!(report.imported, 1);
    assert_eq!(report.active, 1);
    assert_eq!(report.unreadable.len(), 1, "{report:?}");
    assert_eq!(search(&s, Some("parser")), vec!["20261120-100000-000a"]);
    assert_eq!(
        search(&s, Some("frobnicate")),
        vec!["20261120-100000-000a"],
        "steps come from events.jsonl through the adapter"
    );
    let patch: String = s
        .conn
        .query_row("SELECT patch FROM runs", [], |r| r.get(0))
        .unwrap();
    assert!(patch.starts_with("diff --git"));
    // Importing again is idempotent; sync only adds what is missing.
    assert_eq!(s.import(&home).unwrap().imported, 1);
    assert_eq!(s.count().unwrap(), 1);
    assert_eq!(s.sync(&home).unwrap().imported, 0);
}

/// A `[workers.x]` CLI's steps go into the index too: the store reads them through the run's
/// own adapter (its spec carries the definition), not only the built-in ones.
#[test]
fn a_custom_workers_steps_are_searchable() {
    let (_d, home) = temp_home();
    let mut r = record(
        "20261120-100000-000a",
        "custom task",
        None,
        RunState::Done,
        T0,
        5,
    );
    r.spec.backend = "mycli".into();
    let def = serde_json::json!({
        "command": "/bin/true",
        "read": ["run"],
        "events": {"kind": "/type", "tool": "tool", "tool_name": "/name", "tool_input": "/input"},
    });
    r.spec.custom_workers.insert(
        "mycli".into(),
        pitroom_workers::WorkerDef::from_value("mycli", &def).unwrap(),
    );
    write_run(
        &home,
        &r,
        "{\"type\":\"tool\",\"name\":\"grep\",\"input\":\"quuxify\"}\n",
        "",
    );
    let mut s = Store::open(&db_path(&home)).unwrap();
    assert_eq!(s.import(&home).unwrap().imported, 1);
    assert_eq!(
        search(&s, Some("quuxify")),
        vec!["20261120-100000-000a"],
        "the custom worker's tool call is in the steps text"
    );
}

#[test]
fn pruned_rows_survive_a_reimport() {
    let (_d, home) = temp_home();
    let r = written_done_run(&home, "old work");
    let mut s = Store::open(&db_path(&home)).unwrap();
    s.import(&home).unwrap();
    s.mark_pruned(std::slice::from_ref(&r.id)).unwrap();
    std::fs::remove_dir_all(home.run_dir(&r.id)).unwrap();
    s.import(&home).unwrap();
    let hits = s.search(&Filter::default()).unwrap();
    assert_eq!(hits.len(), 1);
    assert!(hits[0].pruned);
}

#[test]
fn a_damaged_database_is_an_error_for_the_ledger_and_rebuilt_for_history() {
    let (d, home) = temp_home();
    let r = written_done_run(&home, "survive damage");
    std::fs::write(
        db_path(&home),
        b"this is not a database, just junk bytes.....",
    )
    .unwrap();

    let err = record_run(&home, &r).unwrap_err();
    assert!(err.is_damaged(), "{err}");

    let (s, notes) = open_synced(&home).unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("damaged-"), "{notes:?}");
    assert_eq!(search(&s, Some("damage")), vec![r.id.clone()]);
    let aside = std::fs::read_dir(d.path()).unwrap().flatten().any(|e| {
        e.file_name()
            .to_string_lossy()
            .starts_with("history.sqlite.damaged-")
    });
    assert!(aside, "the damaged file is kept for inspection");
}

#[test]
fn a_locked_database_makes_the_ledger_write_fail_as_busy_not_hang() {
    let (_d, home) = temp_home();
    let holder = Store::open(&db_path(&home)).unwrap();
    holder.conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let r = record("20261120-100000-000a", "t", None, RunState::Done, T0, 5);
    let err = record_run(&home, &r).unwrap_err();
    assert!(err.is_busy(), "{err}");
}

#[test]
fn record_run_skips_active_runs_and_writes_finished_ones() {
    let (_d, home) = temp_home();
    let mut r = record("20261120-100000-000a", "t", None, RunState::Running, T0, 5);
    record_run(&home, &r).unwrap();
    assert!(
        !db_path(&home).exists(),
        "nothing written for a running run"
    );
    r.state = RunState::Done;
    record_run(&home, &r).unwrap();
    assert_eq!(Store::open(&db_path(&home)).unwrap().count().unwrap(), 1);
}

#[test]
fn text_search_lists_the_newest_matching_run_first() {
    let (_d, s) = store();
    for (id, at) in [
        ("20261101-000000-000a", "2026-11-01T00:00:00Z"),
        ("20261102-000000-000a", "2026-11-02T00:00:00Z"),
        ("20261103-000000-000a", "2026-11-03T00:00:00Z"),
    ] {
        s.upsert(&row(&record(
            id,
            "tidy the parser",
            None,
            RunState::Done,
            at,
            1,
        )))
        .unwrap();
    }
    assert_eq!(
        search(&s, Some("parser")),
        vec![
            "20261103-000000-000a",
            "20261102-000000-000a",
            "20261101-000000-000a"
        ]
    );
}

#[test]
fn a_run_without_a_pinned_model_is_filed_under_the_model_the_cli_reported() {
    let mut unpinned = record("r1", "t", None, RunState::Done, "2026-12-01T10:00:00Z", 10);
    assert_eq!(
        row(&unpinned).worker(),
        "opencode",
        "nothing known: the backend alone"
    );
    unpinned.reported_model = Some("claude-sonnet-9".into());
    assert_eq!(row(&unpinned).worker(), "opencode:claude-sonnet-9");
    let mut pinned = record(
        "r2",
        "t",
        Some("m/x"),
        RunState::Done,
        "2026-12-01T10:00:00Z",
        10,
    );
    pinned.reported_model = Some("m/x-2026".into());
    assert_eq!(row(&pinned).worker(), "opencode:m/x", "a pinned model wins");
}

#[test]
fn many_processes_opening_a_fresh_database_at_once_all_get_in() {
    // A crew's first runs end together on a fresh state dir: each opens the database that
    // does not exist yet, and the switch to WAL must not fail any of them.
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.sqlite");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let store = Store::open(&path)?;
                    let r = record(
                        &format!("r{i}"),
                        "t",
                        None,
                        RunState::Done,
                        "2026-12-01T10:00:00Z",
                        1,
                    );
                    store.upsert(&row(&r))
                })
            })
            .collect();
        for h in handles {
            let outcome = h.join().expect("no panic");
            assert!(outcome.is_ok(), "round {round}: {outcome:?}");
        }
        assert_eq!(Store::open(&path).unwrap().count().unwrap(), 8);
    }
}

#[test]
fn a_history_import_racing_a_crews_ledger_writes_waits_for_them_instead_of_failing_busy() {
    // `pitroom_info` / `pitroom history` read the ids and import the runs they do not know yet
    // while the crew's supervisors, ending together, each write their own row.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.sqlite");
    Store::open(&path).unwrap();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(5));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (path, barrier) = (path.clone(), barrier.clone());
            std::thread::spawn(move || -> Result<(), StoreError> {
                barrier.wait();
                for i in 0..40 {
                    let store = Store::open(&path)?;
                    let id = format!("w{w}-{i}");
                    store.upsert(&row(&record(&id, "t", None, RunState::Done, T0, 1)))?;
                }
                Ok(())
            })
        })
        .collect();
    barrier.wait();
    for round in 0..40 {
        let mut store = Store::open(&path).unwrap();
        let known = store.ids().unwrap();
        let rows: Vec<RunRow> = (0..5)
            .map(|i| format!("import-{round}-{i}"))
            .filter(|id| !known.contains(id))
            .map(|id| row(&record(&id, "t", None, RunState::Done, T0, 1)))
            .collect();
        let imported = store.upsert_many(&rows);
        assert!(imported.is_ok(), "round {round}: {imported:?}");
    }
    for w in writers {
        let outcome = w.join().expect("no panic");
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    assert_eq!(
        Store::open(&path).unwrap().count().unwrap(),
        4 * 40 + 40 * 5
    );
}
