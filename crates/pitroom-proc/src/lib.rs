//! Worker processes.
//!
//! The supervisor (the `pitroom run` process) never parents a worker directly. It starts a
//! small **keeper** — the same binary, internal subcommand `__keeper` — which becomes a child
//! subreaper, starts the worker in its own session with the prompt file as stdin, and, when the
//! worker exits, when it is told to stop, or when its supervisor dies, terminates every
//! descendant (including those that escaped into their own sessions) and reaps them. That is
//! what keeps "no worker process outlives its run" true even under SIGKILL of the supervisor.
//!
//! Where the kernel allows it, the worker's tree also lives in a PID namespace of its own whose
//! PID 1 is a Pitroom **init** (`__init`) that dies with the keeper: then the kernel itself
//! ends the tree even when the supervisor and the keeper are SIGKILLed together
//! (the `contain` module).

mod contain;
mod drive;
mod harden;
#[cfg(target_os = "linux")]
mod hide_state;
mod init;
mod keeper;
pub mod landlock;
mod notify;
mod platform;
pub mod private_dir;
pub mod seatbelt;
mod tree;

pub use contain::{
    portable, portable_value, ContainmentReport, Mechanism, NO_PID_NAMESPACE_ENV, PORTABLE_ENV,
};
pub use drive::{drive, AfterLine, Bounds, Decision, Driven, Watcher, POLL};
pub use harden::Hardening;
pub use init::INIT_SUBCOMMAND;
pub use keeper::{
    internal_main, keeper_main, spawn_keeper, KeeperHandle, KeeperSpec, SpawnError,
    KEEPER_SUBCOMMAND,
};
pub use landlock::{
    enter_sandbox, kernel_abi, looks_like_blocked_write, GitDirState, LandlockState, SandboxReport,
    SandboxSpec, TreeAccess,
};
pub use notify::desktop_notification;
pub use tree::{
    descendants, is_running, process_start_time, sweep_marked_orphans, terminate_descendants,
    terminate_exact, worker_tree_holder,
};

/// Makes this process the subreaper of everything it starts (Linux: orphans of its tree come
/// back to it). macOS has none; the keeper's sweep hunts the worker's session there.
pub fn become_subreaper() {
    platform::become_subreaper();
}

/// Exit code the keeper uses when it stopped the worker on request.
pub const STOPPED_EXIT: i32 = 143;
