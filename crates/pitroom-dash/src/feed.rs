//! The feed the page's server-sent events come from: numbered items, the latest kept in a ring
//! so a page that reconnects with `Last-Event-ID` gets exactly what it missed.
//!
//! Ids are `<epoch>.<seq>`: the epoch is random per server start, so an id from an earlier
//! server (or one older than the ring) is answered with `reset` (the page reloads its snapshot)
//! instead of a silent gap.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

/// Items kept for resuming.
const RING: usize = 4096;
/// Items a slow page may fall behind by before it is told to reset.
const CHANNEL: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub seq: u64,
    /// The SSE event name: `card` (a run's card, new or changed) or `gone` (its directory was
    /// removed).
    pub kind: &'static str,
    /// JSON.
    pub data: String,
}

/// Where a reconnecting page stands.
#[derive(Debug, PartialEq, Eq)]
pub enum Resume {
    /// These items, then the live ones.
    From(Vec<Arc<Item>>),
    /// The page's position is unknown here: it must reload its snapshot.
    Reset,
}

pub struct Feed {
    epoch: String,
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<Item>>,
}

struct Inner {
    /// The seq of the latest item (0: none yet).
    last: u64,
    ring: VecDeque<Arc<Item>>,
}

impl Feed {
    pub fn new(epoch: String) -> Feed {
        let (tx, _) = broadcast::channel(CHANNEL);
        Feed {
            epoch,
            inner: Mutex::new(Inner {
                last: 0,
                ring: VecDeque::new(),
            }),
            tx,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// The id of the latest item, for a snapshot to say where it stands.
    pub fn position(&self) -> String {
        self.id(self.lock().last)
    }

    pub fn id(&self, seq: u64) -> String {
        format!("{}.{seq}", self.epoch)
    }

    /// Adds an item and hands it to every open stream.
    pub fn publish(&self, kind: &'static str, data: String) {
        let mut inner = self.lock();
        inner.last += 1;
        let item = Arc::new(Item {
            seq: inner.last,
            kind,
            data,
        });
        if inner.ring.len() == RING {
            inner.ring.pop_front();
        }
        inner.ring.push_back(item.clone());
        // Sent under the lock, so a subscriber sees each item once: in its backlog or live.
        let _ = self.tx.send(item);
    }

    /// A stream's start: what it missed after `after` (an id this feed gave out), and the
    /// receiver of everything later.
    pub fn subscribe(&self, after: Option<&str>) -> (Resume, broadcast::Receiver<Arc<Item>>) {
        let inner = self.lock();
        let rx = self.tx.subscribe();
        let resume = match after.map(|a| self.parse(a)) {
            None => Resume::From(Vec::new()),
            Some(None) => Resume::Reset,
            Some(Some(seq)) => self.backlog(&inner, seq),
        };
        (resume, rx)
    }

    fn backlog(&self, inner: &Inner, after: u64) -> Resume {
        if after > inner.last {
            return Resume::Reset;
        }
        let oldest = inner.ring.front().map(|i| i.seq).unwrap_or(inner.last + 1);
        if after + 1 < oldest {
            return Resume::Reset;
        }
        Resume::From(
            inner
                .ring
                .iter()
                .filter(|i| i.seq > after)
                .cloned()
                .collect(),
        )
    }

    /// The seq of one of this feed's ids; `None` for another server's.
    fn parse(&self, id: &str) -> Option<u64> {
        let (epoch, seq) = id.trim().split_once('.')?;
        (epoch == self.epoch).then_some(())?;
        seq.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seqs(r: &Resume) -> Vec<u64> {
        match r {
            Resume::From(items) => items.iter().map(|i| i.seq).collect(),
            Resume::Reset => panic!("reset"),
        }
    }

    #[test]
    fn a_reconnect_gets_exactly_the_items_after_its_last_id() {
        let feed = Feed::new("e1".into());
        for n in 0..5 {
            feed.publish("card", format!("{n}"));
        }
        let (resume, _) = feed.subscribe(Some("e1.2"));
        assert_eq!(seqs(&resume), [3, 4, 5]);
        let (resume, _) = feed.subscribe(Some(&feed.position()));
        assert_eq!(seqs(&resume), Vec::<u64>::new());
    }

    #[test]
    fn an_id_from_another_server_or_too_old_resets() {
        let feed = Feed::new("e2".into());
        feed.publish("card", "x".into());
        assert_eq!(feed.subscribe(Some("e1.1")).0, Resume::Reset);
        assert_eq!(feed.subscribe(Some("garbage")).0, Resume::Reset);
        assert_eq!(feed.subscribe(Some("e2.9")).0, Resume::Reset);
        for _ in 0..RING + 10 {
            feed.publish("card", "y".into());
        }
        assert_eq!(feed.subscribe(Some("e2.1")).0, Resume::Reset);
    }

    #[test]
    fn items_published_after_subscribing_arrive_live() {
        let feed = Feed::new("e3".into());
        let (_, mut rx) = feed.subscribe(None);
        feed.publish("gone", "{}".into());
        let item = rx.try_recv().expect("delivered");
        assert_eq!((item.seq, item.kind), (1, "gone"));
    }
}
