//! The registry file `$PITROOM_HOME/dash.json`: which process serves the dashboard, on which
//! port. A second `pitroom dash` reuses that server instead of starting another; `--stop` ends
//! it. Written through a temp file and a rename, mode 0600, and removed only once its process is
//! gone (a reader that finds a dead process removes it).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use pitroom_service::{Home, ProcessMark};
use serde::{Deserialize, Serialize};

use crate::DashError;

/// The file's name in the state directory.
pub const REGISTRY_FILE: &str = "dash.json";

/// One running dashboard server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub pid: u32,
    /// The process's start time (clock ticks since boot), so a reused pid is never taken for it.
    pub pid_start: u64,
    pub port: u16,
    /// Started by `--detach` (it stops itself after an idle hour).
    pub detached: bool,
    pub started_at: String,
}

impl Entry {
    /// The entry for this process, serving on `port`.
    pub fn for_this_process(port: u16, detached: bool) -> Entry {
        let this = ProcessMark::this_process();
        Entry {
            pid: this.pid,
            pid_start: this.start,
            port,
            detached,
            started_at: pitroom_service::clock::stamp(),
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// Whether the process that wrote the entry still runs (the same process, not a reuse).
    pub fn is_alive(&self) -> bool {
        ProcessMark {
            pid: self.pid,
            start: self.pid_start,
        }
        .is_alive()
    }
}

pub fn path(home: &Home) -> PathBuf {
    home.root.join(REGISTRY_FILE)
}

/// The running server, if any. A stale entry (its process gone) is removed.
pub fn running(home: &Home) -> Option<Entry> {
    let path = path(home);
    let entry: Entry = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    if entry.is_alive() {
        return Some(entry);
    }
    let _ = std::fs::remove_file(&path);
    None
}

/// Whether a Pitroom dashboard answers on 127.0.0.1:`port` (a plain HTTP request to
/// `/api/ping`, with a short time limit).
pub fn answers(port: u16) -> bool {
    use std::io::Read;
    use std::net::{SocketAddr, TcpStream};
    let limit = std::time::Duration::from_secs(2);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, limit) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(limit));
    let _ = stream.set_write_timeout(Some(limit));
    let request =
        format!("GET /api/ping HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut reply = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    reply.starts_with("HTTP/1.1 200") && reply.contains(r#""pitroom":"dash""#)
}

/// Writes this server's entry (0600, atomically).
pub fn write(home: &Home, entry: &Entry) -> Result<(), DashError> {
    let path = path(home);
    let fail = |source| DashError::Registry {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(&home.root).map_err(fail)?;
    let tmp = home
        .root
        .join(format!(".{REGISTRY_FILE}.{}.tmp", std::process::id()));
    let json = serde_json::to_vec_pretty(entry).map_err(|e| fail(std::io::Error::other(e)))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(fail)?;
    file.write_all(&json).map_err(fail)?;
    drop(file);
    std::fs::rename(&tmp, &path).map_err(fail)
}

/// Removes the entry if it is this process's own (a newer server's entry is left alone).
pub fn remove_own(home: &Home) {
    let path = path(home);
    if is_own(&path) {
        let _ = std::fs::remove_file(&path);
    }
}

fn is_own(path: &Path) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|raw| serde_json::from_slice::<Entry>(&raw).ok())
        .is_some_and(|e| e.pid == std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_registry_is_private_and_names_this_process() {
        let dir = tempfile::tempdir().expect("temp dir");
        let home = Home {
            root: dir.path().to_path_buf(),
        };
        write(&home, &Entry::for_this_process(4321, true)).expect("written");
        let mode = std::fs::metadata(path(&home))
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let entry = running(&home).expect("this process is alive");
        assert_eq!((entry.port, entry.pid), (4321, std::process::id()));
        remove_own(&home);
        assert!(!path(&home).exists());
    }

    #[test]
    fn an_entry_whose_process_is_gone_is_removed_on_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let home = Home {
            root: dir.path().to_path_buf(),
        };
        let mut entry = Entry::for_this_process(4321, false);
        entry.pid_start += 1; // the same pid, another process: gone
        write(&home, &entry).expect("written");
        assert_eq!(running(&home), None);
        assert!(!path(&home).exists());
    }
}
