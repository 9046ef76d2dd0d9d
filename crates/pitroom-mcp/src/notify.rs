//! Resource notifications, fed by the same file-system events as `watch` (inotify on the state
//! dir), not by polling: a new run directory → `notifications/resources/list_changed`; a
//! subscribed run's record published again (a rename into its directory) →
//! `notifications/resources/updated` for `pitroom://run/{id}` (and its `/patch`).
//!
//! Two ways in, one watcher: a client that used `initialize` subscribes with
//! `resources/subscribe` and is told through its session; a client of the 2026-07-28 revision
//! opens a `subscriptions/listen` stream whose accepted filter names the URIs, and is told on
//! that stream.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pitroom_service::fs_watch::{Interest, Watch, WatchId};
use rmcp::model::{
    ResourceListChangedNotification, ResourceUpdatedNotification, ResourceUpdatedNotificationParam,
    ServerNotification, SubscriptionFilter,
};
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};

/// The resource URIs a client subscribed to.
pub type Subscriptions = Arc<Mutex<HashSet<String>>>;

/// How often the watcher picks up new subscriptions when no event comes (a subscription
/// needs a watch on its run's directory before that run's next change).
const RESUBSCRIBE_MS: u16 = 200;

/// The run id of a `pitroom://run/{id}` or `pitroom://run/{id}/patch` URI.
pub fn run_of(uri: &str) -> Option<&str> {
    let rest = uri.strip_prefix("pitroom://run/")?;
    let id = rest.strip_suffix("/patch").unwrap_or(rest);
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// Where the watcher's notifications go.
pub enum Outlet {
    /// The session of a client that used `initialize` (`resources/subscribe` chose the URIs).
    Session(Peer<RoleServer>),
    /// One 2026-07-28 `subscriptions/listen` stream (its accepted filter chose them).
    Listen(SubscriptionSink),
}

impl Outlet {
    /// Tells the client the resource list changed; false once it can be told nothing more.
    async fn list_changed(&self) -> bool {
        match self {
            Outlet::Session(peer) => peer.notify_resource_list_changed().await.is_ok(),
            // A stream that did not ask for list changes is not sent them (the sink would refuse).
            Outlet::Listen(sink) if sink.accepted().resources_list_changed != Some(true) => true,
            Outlet::Listen(sink) => sink
                .send(ServerNotification::ResourceListChangedNotification(
                    ResourceListChangedNotification::default(),
                ))
                .await
                .is_ok(),
        }
    }

    /// Tells the client `uri` changed; false once it can be told nothing more.
    async fn updated(&self, uri: String) -> bool {
        let param = ResourceUpdatedNotificationParam::new(uri);
        match self {
            Outlet::Session(peer) => peer.notify_resource_updated(param).await.is_ok(),
            Outlet::Listen(sink) => sink
                .send(ServerNotification::ResourceUpdatedNotification(
                    ResourceUpdatedNotification::new(param),
                ))
                .await
                .is_ok(),
        }
    }
}

/// What a `subscriptions/listen` stream gets: resource list changes if asked, and updates of
/// the Pitroom resources among the URIs asked for (nothing else exists here).
pub fn accepted_filter(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut accepted = SubscriptionFilter::default();
    accepted.resources_list_changed = requested.resources_list_changed.filter(|asked| *asked);
    accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
        uris.iter()
            .filter(|uri| run_of(uri).is_some())
            .cloned()
            .collect()
    });
    accepted
}

/// Watches the runs directory until the client goes away or `stopped` is set. Runs on its own
/// thread; the notifications go out through the runtime's handle.
pub fn watch(
    runs: &Path,
    subscriptions: Subscriptions,
    outlet: Outlet,
    runtime: tokio::runtime::Handle,
    stopped: &AtomicBool,
) {
    let Ok(inotify) = Watch::new() else {
        return;
    };
    if std::fs::create_dir_all(runs).is_err() {
        return;
    }
    let Ok(runs_watch) = inotify.add(runs, Interest::CREATE.with_moved_to()) else {
        return;
    };
    let mut watched: HashMap<WatchId, String> = HashMap::new();
    while !stopped.load(Ordering::SeqCst) {
        follow_subscribed(&inotify, runs, &subscriptions, &mut watched);
        if inotify
            .wait(Duration::from_millis(u64::from(RESUBSCRIBE_MS)))
            .is_err()
        {
            continue;
        }
        let Ok(events) = inotify.read() else {
            continue;
        };
        let mut list_changed = false;
        let mut updated: HashSet<String> = HashSet::new();
        for event in events {
            if event.watch == runs_watch {
                // A change without a name (kqueue) may be a new run: the list is re-read.
                list_changed |= event.is_dir || event.name.is_none();
            } else if let Some(id) = watched.get(&event.watch) {
                updated.insert(id.clone());
            }
        }
        let subscribed = subscriptions.lock().map(|s| s.clone()).unwrap_or_default();
        let sent = runtime.block_on(async {
            if list_changed && !outlet.list_changed().await {
                return false;
            }
            for id in &updated {
                for uri in [
                    format!("pitroom://run/{id}"),
                    format!("pitroom://run/{id}/patch"),
                ] {
                    if subscribed.contains(&uri) && !outlet.updated(uri).await {
                        return false;
                    }
                }
            }
            true
        });
        if !sent {
            // The client is gone: nothing more to tell anyone.
            return;
        }
    }
}

/// Adds a watch on the directory of every subscribed run that has none yet.
fn follow_subscribed(
    inotify: &Watch,
    runs: &Path,
    subscriptions: &Subscriptions,
    watched: &mut HashMap<WatchId, String>,
) {
    let wanted: Vec<String> = subscriptions
        .lock()
        .map(|s| {
            s.iter()
                .filter_map(|u| run_of(u))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    for id in wanted {
        if watched.values().any(|w| *w == id) {
            continue;
        }
        if let Ok(wd) = inotify.add(&runs.join(&id), Interest::MOVED_TO) {
            watched.insert(wd, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{accepted_filter, run_of};
    use rmcp::model::SubscriptionFilter;

    #[test]
    fn a_listen_stream_gets_list_changes_if_asked_and_only_pitroom_run_uris() {
        let mut requested = SubscriptionFilter::default();
        requested.tools_list_changed = Some(true);
        requested.resource_subscriptions = Some(vec![
            "pitroom://run/20261201-000000-001a".into(),
            "file:///etc/passwd".into(),
        ]);
        let accepted = accepted_filter(&requested);
        assert_eq!(accepted.tools_list_changed, None);
        assert_eq!(accepted.resources_list_changed, None);
        assert_eq!(
            accepted.resource_subscriptions,
            Some(vec!["pitroom://run/20261201-000000-001a".to_string()])
        );
        requested.resources_list_changed = Some(true);
        assert_eq!(
            accepted_filter(&requested).resources_list_changed,
            Some(true)
        );
    }

    #[test]
    fn a_run_resource_names_its_run() {
        assert_eq!(
            run_of("pitroom://run/20261201-000000-001a"),
            Some("20261201-000000-001a")
        );
        assert_eq!(
            run_of("pitroom://run/20261201-000000-001a/patch"),
            Some("20261201-000000-001a")
        );
        assert_eq!(run_of("pitroom://run/"), None);
        assert_eq!(run_of("pitroom://run/a/b/patch"), None);
        assert_eq!(run_of("file:///etc/passwd"), None);
    }
}
