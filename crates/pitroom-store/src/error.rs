//! The store's errors. Callers decide what is fatal: for a run, nothing here is.

use std::path::Path;

use rusqlite::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("history database {path}: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("history database {path} has schema version {found}, newer than this pitroom knows ({}); upgrade pitroom", crate::SCHEMA_VERSION)]
    TooNew { path: String, found: i64 },
    #[error("history database {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    pub(crate) fn sqlite(path: &Path, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: path.display().to_string(),
            source,
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    /// The file is not a database or is corrupt: rebuilding from the run directories is the
    /// cure (a locked or full disk is not).
    pub fn is_damaged(&self) -> bool {
        self.sqlite_code_is(&[ErrorCode::NotADatabase, ErrorCode::DatabaseCorrupt])
    }

    /// Another process holds the database's lock longer than the busy timeout.
    pub fn is_busy(&self) -> bool {
        self.sqlite_code_is(&[ErrorCode::DatabaseBusy, ErrorCode::DatabaseLocked])
    }

    /// A SQLite error whose primary code is one of `codes`.
    fn sqlite_code_is(&self, codes: &[ErrorCode]) -> bool {
        match self {
            StoreError::Sqlite { source, .. } => source
                .sqlite_error_code()
                .is_some_and(|code| codes.contains(&code)),
            _ => false,
        }
    }
}
