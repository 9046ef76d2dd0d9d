//! The ledger row written when a run ends, and the history every front end reads (search,
//! stats, savings, per day, import). The ledger lives in `pitroom-store`; the run directories
//! stay the source of truth.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pitroom_core::config::FlagValues;
use pitroom_core::receipt::{apply_worker_prices, WorkerPrices};
use pitroom_core::RunRecord;
use pitroom_store::{
    median, open_synced, Filter, Hit, ImportReport, Savings, Since, Store, StoreError, WorkerStats,
};
use serde::Serialize;

use crate::{Service, ServiceError};

impl Service {
    /// After a run ends (foreground or background supervisor): writes the ledger row. A record
    /// written before runs carried their worker prices (the engine prices those runs itself)
    /// gets a cost from today's `worker_prices` when the CLI reported none. Best-effort: a
    /// problem goes into the returned notes (and never fails the run, whose directory is
    /// intact and is re-imported by the next reader).
    pub fn settle(&self, record: &mut RunRecord) -> Vec<String> {
        let mut notes = Vec::new();
        if record.state.is_active() {
            return notes;
        }
        let unpriced = record.spec.worker_prices.is_none();
        if let Some(config) = unpriced
            .then(|| self.config(&FlagValues::default()).ok())
            .flatten()
        {
            // Bad entries were already reported when the run started; stay quiet here.
            let (prices, _) = WorkerPrices::from_config(&config);
            if apply_worker_prices(record, &prices) {
                if let Err(e) = record.write(&self.home().record_path(&record.id)) {
                    notes.push(format!(
                        "could not store the estimated worker cost in the record: {e}"
                    ));
                }
            }
        }
        if let Err(e) = pitroom_store::record_run(self.home(), record) {
            notes.push(format!(
                "{e}; the run itself is fine and `pitroom history import` rebuilds the history"
            ));
        }
        notes
    }

    /// The worker cost the history records for today (UTC, by the stamping clock), as
    /// `savings` counts it: what `budget.daily_usd` is held to. Nothing without a history.
    pub fn spent_today(&self) -> Result<f64, ServiceError> {
        let home = self.home();
        if !pitroom_store::db_path(home).exists() && home.run_ids().is_empty() {
            return Ok(0.0);
        }
        let today = pitroom_core::clock::now()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .date()
            .to_string();
        let window = since(&today).map_err(ServiceError::refused)?;
        let (history, _) = self.history()?;
        Ok(history.savings(&window)?.worker_cost)
    }

    /// The config's `budget.daily_usd` and today's spend against it, for `savings`; `None`
    /// without a daily cap.
    pub fn daily_budget(&self) -> Result<Option<DailyBudget>, ServiceError> {
        let config = self.config(&FlagValues::default())?;
        let Some(daily_usd) = crate::request::daily_cap(&config)? else {
            return Ok(None);
        };
        Ok(Some(DailyBudget {
            daily_usd,
            spent_today_usd: self.spent_today()?,
        }))
    }

    /// The history, with the run directories it lacks imported; the notes say what was
    /// repaired (a damaged database set aside, records that could not be read).
    pub fn history(&self) -> Result<(History, Vec<String>), ServiceError> {
        let (store, notes) = open_synced(self.home()).map_err(|e| {
            ServiceError::refused(format!(
                "{e}; the run directories are intact (pitroom ls, pitroom show)"
            ))
        })?;
        Ok((History { store }, notes))
    }

    /// The history's figures per model of `backend` (the key `None`: runs on the CLI's
    /// default model); empty when there is no history or it cannot be read (usage columns
    /// beside a listing, never worth failing it).
    pub fn model_usage(&self, backend: &str) -> BTreeMap<Option<String>, WorkerStats> {
        let home = self.home();
        if !pitroom_store::db_path(home).exists() && home.run_ids().is_empty() {
            return BTreeMap::new();
        }
        let Ok((store, _)) = open_synced(home) else {
            return BTreeMap::new();
        };
        store
            .stats(&Since::all())
            .unwrap_or_default()
            .into_iter()
            .filter(|s| s.backend == backend)
            .map(|s| (s.model.clone(), s))
            .collect()
    }

    /// Rebuilds the history from the run directories (`pitroom history import`): where the
    /// database is, and what was imported. A damaged database is set aside and rebuilt; the
    /// notes say so.
    pub fn import_history(&self) -> Result<Imported, ServiceError> {
        let home = self.home();
        let database = pitroom_store::db_path(home);
        let (mut store, notes) = match Store::open(&database) {
            Ok(store) => (store, Vec::new()),
            // Opening for reading moves the damaged file aside and rebuilds it.
            Err(e) if e.is_damaged() => {
                let (history, notes) = self.history()?;
                (history.store, notes)
            }
            Err(e) => return Err(refused(e)),
        };
        let report = store.import(home).map_err(refused)?;
        Ok(Imported {
            database,
            report,
            notes,
        })
    }
}

/// What `import_history` did.
#[derive(Debug)]
pub struct Imported {
    pub database: PathBuf,
    pub report: ImportReport,
    /// What was repaired on the way (a damaged database set aside).
    pub notes: Vec<String>,
}

/// The history database, open and up to date with the run directories: full-text search,
/// per-worker stats, savings and a per-day summary. A store error is a refusal in the store's
/// words (it names the file and what went wrong).
pub struct History {
    store: Store,
}

/// How many rows the per-day summary reads.
const DAY_SCAN: usize = 200_000;

impl History {
    /// Runs matching `filter`, newest first.
    pub fn search(&self, filter: &Filter) -> Result<Vec<Hit>, ServiceError> {
        self.store.search(filter).map_err(refused)
    }

    /// Per worker and model: runs, success rate, median time, tokens, cost and saving.
    pub fn stats(&self, since: &Since) -> Result<Vec<WorkerStats>, ServiceError> {
        self.store.stats(since).map_err(refused)
    }

    /// What delegating saved over `since`.
    pub fn savings(&self, since: &Since) -> Result<Savings, ServiceError> {
        self.store.savings(since).map_err(refused)
    }

    /// Per UTC day of `since`: runs (done and not), tokens, cost, saving and median time.
    pub fn days(&self, since: &Since) -> Result<Vec<Day>, ServiceError> {
        let hits = self.search(&Filter {
            since: since.clone(),
            limit: DAY_SCAN,
            ..Filter::default()
        })?;
        Ok(per_day(&hits))
    }
}

/// A window of the history from its text (`7d`, `30d`, `12h`, `2w`, `all`, a date), or why it
/// is not one. Windows are over stamped records, so they end at the stamping clock's now (a
/// fixed clock's runs are recent).
pub fn since(text: &str) -> Result<Since, String> {
    pitroom_store::parse_since(text, pitroom_core::clock::now())
}

/// The last `days` days, by the stamping clock.
pub fn last_days(days: i64) -> Since {
    Since::days(days, pitroom_core::clock::now())
}

/// A self-contained SVG card of `savings`.
pub fn savings_card(savings: &Savings) -> String {
    pitroom_store::savings_card(&pitroom_store::CardData::from_savings(savings))
}

fn refused(e: StoreError) -> ServiceError {
    ServiceError::refused(e.to_string())
}

/// Today's spend against `budget.daily_usd` (docs/budgets.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DailyBudget {
    pub daily_usd: f64,
    pub spent_today_usd: f64,
}

/// One UTC day of the history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Day {
    /// `YYYY-MM-DD`.
    pub day: String,
    pub runs: u64,
    pub done: u64,
    /// Ended in any state but done (queued and running runs count in neither).
    pub failed: u64,
    pub tokens: u64,
    pub cost: f64,
    pub saved: f64,
    /// The median duration of the day's runs that recorded one.
    pub median_ms: Option<u64>,
}

fn per_day(hits: &[Hit]) -> Vec<Day> {
    let mut days: BTreeMap<&str, (Day, Vec<u64>)> = BTreeMap::new();
    for h in hits.iter().filter(|h| h.started_at.len() >= 10) {
        let (d, times) = days.entry(&h.started_at[..10]).or_default();
        d.runs += 1;
        if h.state == "done" {
            d.done += 1;
        } else if !matches!(h.state.as_str(), "queued" | "running") {
            d.failed += 1;
        }
        d.tokens += u64::try_from(h.tokens).unwrap_or(0);
        d.cost += h.cost.unwrap_or(0.0);
        d.saved += h.saved.unwrap_or(0.0);
        if let Some(ms) = h.duration_ms.and_then(|ms| u64::try_from(ms).ok()) {
            times.push(ms);
        }
    }
    days.into_iter()
        .map(|(day, (d, mut times))| Day {
            day: day.to_string(),
            median_ms: median(&mut times),
            ..d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use pitroom_core::{RunSpec, RunState};
    use pitroom_workers::Mode;

    use super::*;

    const ID: &str = "20261120-100000-000a";

    /// A service over a fresh state directory holding one finished read run of `task`.
    fn service_with_a_run(task: &str) -> (tempfile::TempDir, Service) {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("state");
        let env = vec![
            ("PITROOM_HOME".to_string(), root.display().to_string()),
            ("HOME".to_string(), dir.path().display().to_string()),
        ];
        let service = Service::new(env, "/nonexistent/pitroom".into());
        let home = service.home();
        let spec = RunSpec::new(task, Mode::Read, "opencode", dir.path().to_path_buf());
        let start: jiff::Timestamp = "2026-11-20T10:00:00Z".parse().expect("a stamp");
        let mut record = RunRecord::new(ID.into(), spec, start);
        record.state = RunState::Done;
        record.started_at = Some(start);
        record.ended_at = Some("2026-11-20T10:00:05Z".parse().expect("a stamp"));
        record.duration = Some(std::time::Duration::from_secs(5));
        record.receipt = Some(pitroom_core::record::Receipt {
            worker_tokens: 2400,
            returned_tokens: 60,
            compression: 40.0,
            cost: Some(0.02),
            primary: "Claude Opus".into(),
            saved: Some(1.25),
        });
        std::fs::create_dir_all(home.run_dir(ID)).expect("run dir");
        record.write(&home.record_path(ID)).expect("record");
        (dir, service)
    }

    #[test]
    fn the_history_imports_what_it_lacks_and_answers_search_stats_savings_and_days() {
        let (_dir, service) = service_with_a_run("tidy the frobnicator");
        let (history, notes) = service.history().expect("history");
        assert!(notes.is_empty(), "{notes:?}");
        let hits = history
            .search(&Filter {
                text: Some("frobnicator".into()),
                ..Filter::default()
            })
            .expect("search");
        assert_eq!(hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), [ID]);
        let stats = history.stats(&Since::all()).expect("stats");
        assert_eq!(
            stats
                .iter()
                .map(|s| (s.backend.as_str(), s.runs))
                .collect::<Vec<_>>(),
            [("opencode", 1)]
        );
        let savings = history.savings(&Since::all()).expect("savings");
        assert_eq!((savings.runs, savings.saved), (1, 1.25));
        let days = history.days(&Since::all()).expect("days");
        assert_eq!(
            days,
            [Day {
                day: "2026-11-20".into(),
                runs: 1,
                done: 1,
                tokens: 2400,
                cost: 0.02,
                saved: 1.25,
                median_ms: Some(5000),
                ..Day::default()
            }]
        );
        let usage = service.model_usage("opencode");
        assert_eq!(usage.get(&None).map(|s| s.runs), Some(1), "{usage:?}");
        assert!(service.model_usage("codex").is_empty());
    }

    #[test]
    fn an_import_says_where_the_database_is_and_what_it_took_in() {
        let (_dir, service) = service_with_a_run("a task");
        let imported = service.import_history().expect("import");
        assert_eq!(imported.report.imported, 1);
        assert_eq!(imported.database, pitroom_store::db_path(service.home()));
        assert!(imported.database.is_file());
    }

    #[test]
    fn a_history_that_cannot_be_opened_is_refused_and_says_the_runs_are_intact() {
        let (_dir, service) = service_with_a_run("a task");
        // A directory where the database file should be: no database can open there.
        std::fs::create_dir_all(pitroom_store::db_path(service.home())).expect("dir");
        let Err(e) = service.history() else {
            panic!("a directory is no database");
        };
        assert_eq!(e.kind, crate::ErrorKind::Refused);
        assert!(
            e.message
                .ends_with("; the run directories are intact (pitroom ls, pitroom show)"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_window_is_read_from_its_text_or_refused_with_why() {
        assert_eq!(since("all").expect("all").label, Since::all().label);
        assert!(since("7d").is_ok());
        assert!(since("fortnight").is_err());
        assert!(last_days(7).from_ms.is_some());
    }

    #[test]
    fn per_day_counts_ended_runs_as_done_or_failed_and_active_ones_as_neither() {
        let hit = |state: &str, at: &str, ms: Option<i64>| Hit {
            id: at.into(),
            started_at: at.into(),
            state: state.into(),
            mode: "read".into(),
            worker: "opencode".into(),
            model: None,
            task: "t".into(),
            duration_ms: ms,
            tokens: 10,
            cost: None,
            cost_estimated: false,
            saved: None,
            failure: None,
            snippet: None,
            pruned: false,
        };
        let days = per_day(&[
            hit("done", "2026-11-20T10:00:00Z", Some(1000)),
            hit("failed", "2026-11-20T11:00:00Z", Some(3000)),
            hit("running", "2026-11-20T12:00:00Z", None),
            hit("timeout", "2026-11-21T10:00:00Z", Some(7000)),
            hit("done", "short", Some(1)),
        ]);
        assert_eq!(days.len(), 2, "{days:?}");
        assert_eq!(
            (days[0].runs, days[0].done, days[0].failed, days[0].tokens),
            (3, 1, 1, 30)
        );
        assert_eq!(days[0].median_ms, Some(2000));
        assert_eq!((days[1].day.as_str(), days[1].failed), ("2026-11-21", 1));
    }
}
