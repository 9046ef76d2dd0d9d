//! Worker processes.
//!
//! The supervisor (the `pitroom run` process) never parents a worker directly. It starts a
//! small **keeper** — the same binary, internal subcommand `__keeper` — which becomes a child
//! subreaper, starts the worker in its own session with the prompt file as stdin, and, when the
//! worker exits, when it is told to stop, or when its supervisor dies, terminates every
//! descendant (including those that escaped into their own sessions) and reaps them. That is
//! what keeps "no worker process outlives its run" true even under SIGKILL of the supervisor.

mod keeper;
pub mod landlock;
mod tree;

pub use keeper::{
    is_keeper_invocation, keeper_main, spawn_keeper, KeeperHandle, KeeperSpec, SpawnError,
    KEEPER_SUBCOMMAND,
};
pub use landlock::{
    enter_sandbox, kernel_abi, looks_like_blocked_write, GitDirState, LandlockState, SandboxReport,
    SandboxSpec, TreeAccess,
};
pub use tree::{
    descendants, is_running, process_start_time, terminate_descendants, terminate_exact,
};

/// Exit code the keeper uses when it stopped the worker on request.
pub const STOPPED_EXIT: i32 = 143;
