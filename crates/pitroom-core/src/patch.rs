//! What can stop a run's patch from landing in the user's tree — `apply` of an isolated run,
//! `revert` of a write run: both check everything first and change all or nothing.

/// Why a patch was not applied (or reverse-applied); nothing of the user's was written.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// Not something this run allows (not isolated, still running, deletions not allowed, …):
    /// exit 3.
    #[error("{0}")]
    Refused(String),
    /// The patch does not fit the current tree (the files changed since the run): exit 1.
    #[error("{0}")]
    Conflict(String),
    /// Paths the patch cannot land exactly (exit 3), found before anything was written: the
    /// message names each path and why, the hint says what to do.
    #[error("{message}")]
    Unsafe { message: String, hint: String },
    #[error(transparent)]
    Git(#[from] pitroom_git::GitError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
