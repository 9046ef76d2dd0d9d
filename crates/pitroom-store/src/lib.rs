//! Pitroom's ledger and history.
//!
//! Every finished run becomes one row of `$PITROOM_HOME/history.sqlite`: task, worker, model,
//! times, tokens, cost, saving, steps, answer and diff, with an FTS5 index over task, answer and
//! steps. The run directories stay the source of truth: [`Store::import`] rebuilds the rows from
//! them, and a missing, damaged or outdated database is rebuilt rather than trusted. Writing the
//! ledger is best-effort for callers: nothing here may fail a run.

mod card;
mod docs;
mod error;
mod query;
mod row;
mod schema;
mod since;
mod stats;

use std::path::{Path, PathBuf};
use std::time::Duration;

use pitroom_core::{Home, RunRecord};
use rusqlite::Connection;

pub use card::{savings_card, CardData};
pub use docs::{load_docs, RunDocs};
pub use error::StoreError;
pub use query::{Filter, Hit};
pub use row::RunRow;
pub use schema::SCHEMA_VERSION;
pub use since::{parse_since, Since};
pub use stats::{median, ModelSavings, Savings, WorkerStats};

/// The database's file name inside the state directory.
pub const DB_FILE: &str = "history.sqlite";

/// How long a writer waits for another process's lock before giving up. A run's ledger write
/// uses a shorter wait (see [`record_run`]) so a stuck database never holds up a report.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the database lives for `home`.
pub fn db_path(home: &Home) -> PathBuf {
    home.root.join(DB_FILE)
}

/// An open history database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating when missing) the database at `path`: WAL journal, a busy timeout, and
    /// the schema at [`SCHEMA_VERSION`].
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with_timeout(path, BUSY_TIMEOUT)
    }

    pub fn open_with_timeout(path: &Path, busy: Duration) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::io(path, e))?;
        }
        let fresh = std::fs::metadata(path).map_or(true, |m| m.len() == 0);
        let conn = Connection::open(path).map_err(|e| StoreError::sqlite(path, e))?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.configure(busy, fresh)?;
        Ok(store)
    }

    /// `fresh`: the file did not exist or was empty. Creating it (the journal switch, the
    /// schema, the checkpoint at close) then goes without fsyncs: on a new database that costs
    /// a state dir's first run ~40 ms of its overhead, and a new file holds nothing the run
    /// directories cannot rebuild (a damaged one is moved aside and rebuilt from them). Every
    /// later connection syncs as WAL's NORMAL does.
    fn configure(&mut self, busy: Duration, fresh: bool) -> Result<(), StoreError> {
        let path = self.path.clone();
        let fail = |e| StoreError::sqlite(&path, e);
        self.conn.busy_timeout(busy).map_err(fail)?;
        let sync = if fresh { "OFF" } else { "NORMAL" };
        self.conn
            .pragma_update(None, "synchronous", sync)
            .map_err(fail)?;
        self.use_wal(busy).map_err(fail)?;
        self.conn
            .pragma_update(None, "synchronous", sync)
            .map_err(fail)?;
        schema::migrate(&mut self.conn).map_err(|e| match e {
            schema::MigrateError::Sqlite(e) => StoreError::sqlite(&path, e),
            schema::MigrateError::TooNew(found) => StoreError::TooNew {
                path: path.display().to_string(),
                found,
            },
        })
    }

    /// Switches the file to WAL. Reading the mode first is what surfaces a file that is not a
    /// database at all. Switching needs the file to itself, and SQLite answers a busy switch
    /// at once rather than through the busy handler: when several processes open a fresh
    /// database together (a crew's first runs ending at once), the losers retry until `busy`.
    fn use_wal(&self, busy: Duration) -> rusqlite::Result<()> {
        let deadline = std::time::Instant::now() + busy;
        loop {
            let mode: String = self
                .conn
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            if mode.eq_ignore_ascii_case("wal") {
                return Ok(());
            }
            match self
                .conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
            {
                Ok(_) => return Ok(()),
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A transaction that takes the write lock at its start (`BEGIN IMMEDIATE`), waiting for
    /// it through the busy timeout. A deferred one takes it at its first write and, when
    /// another process wrote since, gets `SQLITE_BUSY` at once, without the busy handler: that
    /// failed `pitroom history` while a crew's supervisors were writing their ledger rows.
    fn write_transaction(&mut self) -> rusqlite::Result<rusqlite::Transaction<'_>> {
        self.conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Inserts or replaces one run's row (and its search entry). Idempotent: the same record
    /// twice leaves one row. A row `clean` marked pruned stays marked.
    pub fn upsert(&self, row: &RunRow) -> Result<(), StoreError> {
        row::upsert(&self.conn, row).map_err(|e| StoreError::sqlite(&self.path, e))
    }

    /// Upserts many rows in one transaction (import, benchmarks).
    pub fn upsert_many<'a>(
        &mut self,
        rows: impl IntoIterator<Item = &'a RunRow>,
    ) -> Result<usize, StoreError> {
        let path = self.path.clone();
        let fail = |e| StoreError::sqlite(&path, e);
        let tx = self.write_transaction().map_err(fail)?;
        let mut n = 0;
        for row in rows {
            row::upsert(&tx, row).map_err(fail)?;
            n += 1;
        }
        tx.commit().map_err(fail)?;
        Ok(n)
    }

    /// Every run id the database holds.
    pub fn ids(&self) -> Result<std::collections::HashSet<String>, StoreError> {
        let fail = |e| StoreError::sqlite(&self.path, e);
        let mut stmt = self.conn.prepare("SELECT id FROM runs").map_err(fail)?;
        let ids = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(fail)?
            .collect::<Result<_, _>>()
            .map_err(fail)?;
        Ok(ids)
    }

    pub fn count(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .map_err(|e| StoreError::sqlite(&self.path, e))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Rebuilds every row from the run directories (finished runs only). Rows whose run
    /// directory was removed by `clean` are kept: they are the ledger of what happened.
    pub fn import(&mut self, home: &Home) -> Result<ImportReport, StoreError> {
        let ids = home.run_ids();
        self.import_ids(home, &ids)
    }

    /// Imports only the run directories the database does not know yet: the lazy catch-up
    /// `history` does before it answers.
    pub fn sync(&mut self, home: &Home) -> Result<ImportReport, StoreError> {
        let known = self.ids()?;
        let missing: Vec<String> = home
            .run_ids()
            .into_iter()
            .filter(|id| !known.contains(id))
            .collect();
        self.import_ids(home, &missing)
    }

    fn import_ids(&mut self, home: &Home, ids: &[String]) -> Result<ImportReport, StoreError> {
        let mut report = ImportReport::default();
        let mut rows = Vec::new();
        for id in ids {
            match home.load(id) {
                Ok(record) if record.state.is_active() => report.active += 1,
                Ok(record) => rows.push(RunRow::new(&record, &load_docs(home, &record))),
                Err(e) => report.unreadable.push(format!("{id}: {e}")),
            }
            // Bounded memory on very large homes: write in batches.
            if rows.len() >= 1000 {
                report.imported += self.upsert_many(&rows)?;
                rows.clear();
            }
        }
        report.imported += self.upsert_many(&rows)?;
        Ok(report)
    }

    /// Marks rows whose run directories `clean` removed.
    pub fn mark_pruned(&mut self, ids: &[String]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let fail = |e| StoreError::sqlite(&path, e);
        let tx = self.write_transaction().map_err(fail)?;
        {
            let mut stmt = tx
                .prepare("UPDATE runs SET pruned = 1 WHERE id = ?1")
                .map_err(fail)?;
            for id in ids {
                stmt.execute([id]).map_err(fail)?;
            }
        }
        tx.commit().map_err(fail)
    }

    /// Full-text search with filters, newest first.
    pub fn search(&self, filter: &Filter) -> Result<Vec<Hit>, StoreError> {
        query::search(&self.conn, filter).map_err(|e| StoreError::sqlite(&self.path, e))
    }

    /// Per worker and model: runs, success rate, median time, tokens, cost, saving.
    pub fn stats(&self, since: &Since) -> Result<Vec<WorkerStats>, StoreError> {
        stats::worker_stats(&self.conn, since).map_err(|e| StoreError::sqlite(&self.path, e))
    }

    /// Savings over a period, with per-model rows.
    pub fn savings(&self, since: &Since) -> Result<Savings, StoreError> {
        stats::savings(&self.conn, since).map_err(|e| StoreError::sqlite(&self.path, e))
    }
}

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ImportReport {
    pub imported: usize,
    /// Runs still queued or running: they are upserted when they end.
    pub active: usize,
    /// Run directories whose record could not be read, with the reason.
    pub unreadable: Vec<String>,
}

/// Opens the database for reading commands: a missing one is created and filled from the run
/// directories, a damaged one is moved aside (`history.sqlite.damaged-<time>`) and rebuilt,
/// and run directories it does not know yet are imported. Returns notes worth showing.
pub fn open_synced(home: &Home) -> Result<(Store, Vec<String>), StoreError> {
    let path = db_path(home);
    let mut notes = Vec::new();
    let mut store = match Store::open(&path) {
        Ok(s) => s,
        Err(e) if e.is_damaged() => {
            let aside = move_aside(&path)?;
            notes.push(format!(
                "{e}; moved it to {} and rebuilt the history from the run directories",
                aside.display()
            ));
            Store::open(&path)?
        }
        Err(e) => return Err(e),
    };
    let report = store.sync(home)?;
    if !report.unreadable.is_empty() {
        notes.push(format!(
            "{} run record(s) could not be read and are not in the history: {}",
            report.unreadable.len(),
            report.unreadable.join("; ")
        ));
    }
    Ok((store, notes))
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Renames a damaged database (and its WAL and shared-memory files) out of the way.
fn move_aside(path: &Path) -> Result<PathBuf, StoreError> {
    // Names the file set aside: the wall clock, so two damaged databases never share a name.
    let stamp = jiff::Timestamp::now().as_second();
    let aside = path.with_file_name(format!("{DB_FILE}.damaged-{stamp}"));
    std::fs::rename(path, &aside).map_err(|e| StoreError::io(path, e))?;
    for suffix in ["-wal", "-shm"] {
        let side = PathBuf::from(format!("{}{suffix}", path.display()));
        let _ = std::fs::remove_file(side);
    }
    Ok(aside)
}

/// Puts a finished run into the ledger. Waits at most a second for a lock; callers turn an
/// error into a warning, never into a failed run.
pub fn record_run(home: &Home, record: &RunRecord) -> Result<(), StoreError> {
    if record.state.is_active() {
        return Ok(());
    }
    let store = Store::open_with_timeout(&db_path(home), Duration::from_secs(1))?;
    store.upsert(&RunRow::new(record, &load_docs(home, record)))
}

#[cfg(test)]
mod tests;
