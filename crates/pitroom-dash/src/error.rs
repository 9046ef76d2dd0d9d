//! What can keep the dashboard from starting or serving. Each message says what happened and
//! what to do about it.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DashError {
    #[error("port {port} on 127.0.0.1 is already in use; pick another with --port N (--port 0 takes any free port)")]
    PortInUse { port: u16 },
    #[error("cannot listen on 127.0.0.1:{port}: {source}; pick another port with --port N (0 = any free port)")]
    Bind {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the dashboard's event loop: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot write the dashboard registry {}: {source}; check that the state directory is writable", path.display())]
    Registry {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read random bytes for the dashboard's secret token from /dev/urandom: {0}")]
    Token(#[source] std::io::Error),
    /// The run library could not be set up (its message says what to do).
    #[error("{0}")]
    Setup(String),
    #[error("the dashboard server failed: {0}")]
    Serve(#[source] std::io::Error),
}
