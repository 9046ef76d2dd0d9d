//! `pitroom dash`: a local page of every run, on 127.0.0.1 only (see
//! docs/dashboard.md).
//!
//! - **Live**: running and recent runs as cards, crews grouped, stop and discard.
//! - **A run**: task, step timeline, answer (markdown), the diff file by file (highlighted),
//!   refs, receipt, attempts, `--verify` tail, warnings, safety layers.
//! - **History** (search, filters, paging) and **Stats** (inline SVG charts), from the ledger.
//!
//! Changes are pushed over server-sent events fed by inotify on the state directory
//! (`follow`), with `Last-Event-ID` resume ([`feed`]); the page never polls. Everything is
//! read and done through the run library (`pitroom_service`); this crate holds no run logic.
//! The security rules are in [`security`]. This is the only place in Pitroom that runs an
//! async runtime.

mod api;
pub mod assets;
mod error;
pub mod feed;
mod follow;
mod history;
pub mod registry;
pub mod security;
mod server;
pub mod steps;
pub mod view;

pub use error::DashError;
pub use server::{Dash, Options, Stopper};

/// The port `pitroom dash` tries first.
pub const DEFAULT_PORT: u16 = 7878;

/// The idle limit of a detached server.
pub const DETACHED_IDLE: std::time::Duration = std::time::Duration::from_secs(3600);
