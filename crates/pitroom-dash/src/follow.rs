//! Follows every run of the state directory for the Live view, driven by inotify like `watch`
//! (docs/crews.md, "watch --json"), and publishes a run's card whenever it changes.
//!
//! `pitroom_service::events` follows one selection and re-reads all of it on every wake-up;
//! the dashboard follows every run, so it watches `runs/` for new run directories and each
//! run directory for its record's rename (`IN_MOVED_TO`: a supervisor publishes a record by
//! renaming a new file into place), and re-reads only the run an event names. A slow tick
//! re-reads the active runs, which is also when a run whose supervisor died is settled.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pitroom_service::fs_watch::{Interest, Watch, WatchId};

use crate::server::Shared;

/// How often active runs are re-read without an event.
const TICK: Duration = Duration::from_secs(2);
/// The longest sleep between looks at the stop flag (a stopping server waits for it).
const STOP_CHECK: Duration = Duration::from_millis(200);
/// How many of the newest run directories are watched from the start (new ones always are).
const WATCH_NEWEST: usize = 400;

pub struct Follower {
    shared: Arc<Shared>,
    ino: Option<Watch>,
    runs_wd: Option<WatchId>,
    dirs: HashMap<WatchId, String>,
    watched: HashSet<String>,
    /// The card last published (or found at start) per run, as JSON.
    cards: HashMap<String, String>,
    active: HashSet<String>,
}

impl Follower {
    /// Watches the state directory and takes note of the newest runs as they are now (no
    /// items: the page's snapshot already has them).
    pub fn new(shared: Arc<Shared>) -> Follower {
        let home = shared.service.home().clone();
        let runs = home.runs();
        // Without the directory there is nothing to watch; creating it costs nothing.
        let _ = std::fs::create_dir_all(&runs);
        let ino = Watch::new().ok();
        let runs_wd = ino.as_ref().and_then(|i| {
            i.add(
                &runs,
                Interest::CREATE.with_moved_to().with_delete().only_dir(),
            )
            .ok()
        });
        let mut follower = Follower {
            shared,
            ino,
            runs_wd,
            dirs: HashMap::new(),
            watched: HashSet::new(),
            cards: HashMap::new(),
            active: HashSet::new(),
        };
        let ids = home.run_ids();
        for id in ids.iter().rev().take(WATCH_NEWEST) {
            follower.watch(id);
            follower.refresh(id, false);
        }
        follower
    }

    /// Runs until `stop` is set (checked at least every tick).
    pub fn run(mut self, stop: &AtomicBool) {
        let mut last_tick = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            let changed = self.wait(TICK.saturating_sub(last_tick.elapsed()).min(STOP_CHECK));
            for id in changed {
                self.refresh(&id, true);
            }
            if last_tick.elapsed() >= TICK {
                let active: Vec<String> = self.active.iter().cloned().collect();
                for id in active {
                    self.refresh(&id, true);
                }
                if self.ino.is_none() {
                    self.rescan();
                }
                last_tick = Instant::now();
            }
        }
    }

    fn watch(&mut self, id: &str) {
        let Some(ino) = &self.ino else { return };
        if self.watched.contains(id) {
            return;
        }
        let dir = self.shared.service.home().run_dir(id);
        if let Ok(wd) = ino.add(&dir, Interest::MOVED_TO.only_dir()) {
            self.dirs.insert(wd, id.to_string());
            self.watched.insert(id.to_string());
        }
    }

    /// Sleeps until inotify reports something (or `limit` passes); returns the runs to re-read.
    fn wait(&mut self, limit: Duration) -> Vec<String> {
        let Some(ino) = &self.ino else {
            std::thread::sleep(limit.min(Duration::from_millis(500)));
            return Vec::new();
        };
        // A failed wait (EINTR) only means an early look.
        let _ = ino.wait(limit);
        let mut changed = Vec::new();
        let mut created = Vec::new();
        let mut removed = Vec::new();
        // A change of `runs/` that names no entry (kqueue): list the directory instead.
        let mut relist = false;
        while let Ok(events) = ino.read() {
            if events.is_empty() {
                break;
            }
            for event in events {
                let unnamed = event.name.is_none();
                let name = event.name.as_ref().and_then(|n| n.to_str()).unwrap_or("");
                if Some(event.watch) == self.runs_wd {
                    if unnamed {
                        relist = true;
                    } else if event.deleted {
                        removed.push(name.to_string());
                    } else if !name.starts_with('.') && !name.is_empty() {
                        created.push(name.to_string());
                    }
                } else if event.ignored {
                    self.dirs.remove(&event.watch);
                } else if name == "record.json" || unnamed {
                    if let Some(id) = self.dirs.get(&event.watch) {
                        changed.push(id.clone());
                    }
                }
            }
        }
        if relist {
            let (new, gone) = self.relist();
            created.extend(new);
            removed.extend(gone);
        }
        for id in created {
            // Watch first, then read: a record renamed in between is still seen.
            self.watch(&id);
            changed.push(id);
        }
        for id in removed {
            self.gone(&id);
        }
        changed.dedup();
        changed
    }

    /// The run directories that appeared (not watched yet) and that went (watched, no longer
    /// listed) since the last look: for a watch that does not name entries.
    fn relist(&self) -> (Vec<String>, Vec<String>) {
        let ids = self.shared.service.home().run_ids();
        let listed: HashSet<&String> = ids.iter().collect();
        let gone = self
            .watched
            .iter()
            .filter(|id| !listed.contains(id))
            .cloned()
            .collect();
        let new = ids
            .iter()
            .rev()
            .take(WATCH_NEWEST)
            .filter(|id| !self.watched.contains(*id))
            .cloned()
            .collect();
        (new, gone)
    }

    /// Without inotify: notice new runs by listing the directory on the tick.
    fn rescan(&mut self) {
        let ids = self.shared.service.home().run_ids();
        for id in ids.iter().rev().take(WATCH_NEWEST) {
            if !self.cards.contains_key(id) {
                self.refresh(id, true);
            }
        }
    }

    /// Re-reads one run and publishes its card if it changed.
    fn refresh(&mut self, id: &str, publish: bool) {
        let home = self.shared.service.home();
        // A directory without its record yet: the record's rename will bring us back.
        let Ok(record) = home.load_settled(id) else {
            return;
        };
        if record.state.is_active() {
            self.active.insert(id.to_string());
        } else {
            self.active.remove(id);
        }
        let redactor = self.shared.redactors.for_record(&record);
        let json = crate::view::card(&self.shared.service, &record, &redactor).to_string();
        if self.cards.get(id) == Some(&json) {
            return;
        }
        if publish {
            self.shared.feed.publish("card", json.clone());
        }
        self.cards.insert(id.to_string(), json);
    }

    fn gone(&mut self, id: &str) {
        self.active.remove(id);
        self.watched.remove(id);
        if self.cards.remove(id).is_some() {
            let data = serde_json::json!({ "id": id }).to_string();
            self.shared.feed.publish("gone", data);
        }
    }
}
