//! Pitroom's run engine.
//!
//! Configuration with sources, targets, the state directory and run records, the life cycle of
//! a run (prepare the tree → launch through the keeper → stream events → snapshot and diff →
//! judge → receipt), the prompt contract and the report. Knows no particular CLI's flags: those
//! live in `pitroom-workers`.

pub mod budget;
pub mod citations;
pub mod claims;
pub mod clock;
pub mod config;
pub mod cooldown;
pub mod duration;
pub mod exit;
pub mod fs_watch;
#[cfg(test)]
mod fuzz;
pub mod guard_env;
pub mod home;
pub mod landing;
pub mod log;
mod patch;
pub mod patches;
pub mod plan;
pub mod prompt;
pub mod receipt;
pub mod record;
pub mod redact;
pub mod report;
pub mod revert;
pub mod run;
pub mod secrets;
pub mod slots;
pub mod target;
pub mod terminal;
pub mod verdict;
mod worker_adapter;

pub use home::{Home, HomeError};
pub use record::{Attempt, RunRecord, RunSpec, RunState};
pub use run::{
    Checked, Engine, EngineError, Observer, Prepared, Silent, STOP_REQUESTED, SUPERVISE_SUBCOMMAND,
};
