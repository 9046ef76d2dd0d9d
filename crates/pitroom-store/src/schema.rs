//! The schema and its version (`PRAGMA user_version`).
//!
//! Version 1: `runs` holds one row per finished run; `runs_fts` is an external-content FTS5
//! index over task, answer and steps kept in step by triggers, so an upsert is one statement.

use rusqlite::Connection;

/// The schema this build writes. An older database is rebuilt from the run directories; a
/// newer one is refused rather than misread.
pub const SCHEMA_VERSION: i64 = 1;

pub(crate) enum MigrateError {
    Sqlite(rusqlite::Error),
    TooNew(i64),
}

impl From<rusqlite::Error> for MigrateError {
    fn from(e: rusqlite::Error) -> Self {
        MigrateError::Sqlite(e)
    }
}

const SCHEMA: &str = r#"
CREATE TABLE runs (
    rid             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    started_ms      INTEGER NOT NULL,
    ended_ms        INTEGER,
    state           TEXT NOT NULL,
    mode            TEXT NOT NULL,
    backend         TEXT NOT NULL,
    model           TEXT,
    grp             TEXT,
    dir             TEXT NOT NULL,
    task            TEXT NOT NULL,
    duration_ms     INTEGER,
    steps           INTEGER NOT NULL,
    tool_calls      INTEGER NOT NULL,
    tokens          INTEGER NOT NULL,
    returned_tokens INTEGER,
    cost            REAL,
    cost_estimated  INTEGER NOT NULL,
    saved           REAL,
    primary_label   TEXT,
    failure         TEXT,
    files_changed   INTEGER NOT NULL,
    applied         INTEGER NOT NULL,
    discarded       INTEGER NOT NULL,
    error           TEXT,
    answer          TEXT,
    steps_text      TEXT NOT NULL,
    patch           TEXT,
    pruned          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_started ON runs(started_ms);
CREATE INDEX runs_worker ON runs(backend, model);
-- Covers every column `stats` and `savings` read, so they never touch the wide rows (answer,
-- patch, steps): 100,000 runs take tens of milliseconds instead of most of a second.
CREATE INDEX runs_facts ON runs(started_ms, state, backend, model, failure, duration_ms, tokens,
    returned_tokens, cost, cost_estimated, saved, primary_label);
CREATE VIRTUAL TABLE runs_fts USING fts5(
    task, answer, steps_text,
    content = 'runs', content_rowid = 'rid',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER runs_fts_insert AFTER INSERT ON runs BEGIN
    INSERT INTO runs_fts(rowid, task, answer, steps_text)
    VALUES (new.rid, new.task, new.answer, new.steps_text);
END;
CREATE TRIGGER runs_fts_delete AFTER DELETE ON runs BEGIN
    INSERT INTO runs_fts(runs_fts, rowid, task, answer, steps_text)
    VALUES ('delete', old.rid, old.task, old.answer, old.steps_text);
END;
CREATE TRIGGER runs_fts_update AFTER UPDATE OF task, answer, steps_text ON runs BEGIN
    INSERT INTO runs_fts(runs_fts, rowid, task, answer, steps_text)
    VALUES ('delete', old.rid, old.task, old.answer, old.steps_text);
    INSERT INTO runs_fts(rowid, task, answer, steps_text)
    VALUES (new.rid, new.task, new.answer, new.steps_text);
END;
"#;

/// Brings the database to [`SCHEMA_VERSION`]. There is one version so far: an empty database
/// gets the schema; anything older would be dropped and re-imported by the caller.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), MigrateError> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    if found > SCHEMA_VERSION {
        return Err(MigrateError::TooNew(found));
    }
    // Two processes may open a fresh file at once: the immediate transaction makes one wait,
    // and it re-checks the version once it holds the lock.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let again: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if again == 0 {
        tx.execute_batch(SCHEMA)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    }
    tx.commit()?;
    Ok(())
}
