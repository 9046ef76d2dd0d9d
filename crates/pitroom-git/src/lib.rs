//! Git plumbing for Pitroom.
//!
//! Every operation here leaves the user's index, refs, stash and config alone: snapshots are
//! written through a throwaway index and only add blob and tree objects; copies are separate
//! repositories that borrow the user's objects read-only.

mod command;
mod copy;
mod diff;
mod edges;
mod ignored;
mod repo;
mod snapshot;

pub use command::{interrupt_when, interrupted, output_of, Git, GitError, Interrupting, Output};
pub use copy::{
    build_copy, copies_built, ensure_read_copy, prune_read_copies, retire_read_copy, CopyLease,
    KeepPolicy,
};
pub use diff::{apply_patch, diff_trees, ApplyCheck, ChangeStatus, Changes, Direction, FileChange};
pub use edges::{check_edges, parse_patch, quote_path, EdgeCheck, EdgeProblem, PatchEntry};
pub use ignored::FileStamps;
pub use repo::Repo;
pub use snapshot::{
    read_inexact_note, snapshot, snapshot_excluding, snapshot_with, Snapshot, SnapshotOptions,
};

/// The id of git's empty tree.
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
