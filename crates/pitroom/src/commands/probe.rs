//! `pitroom doctor --probe [worker…]`: the run library's probe (`Service::probe`), its
//! progress on the terminal and its result in doctor's style.

use pitroom_service::probe::{Probe, ProbeWatch, TASK};
use pitroom_service::Observer;

use crate::output::say;
use crate::output::{self, Progress};

/// A probe run's progress line on a terminal, and its notes as warnings.
pub(super) struct Shown {
    enabled: bool,
    progress: Progress,
}

impl Shown {
    pub(super) fn new(enabled: bool) -> Shown {
        Shown {
            enabled,
            progress: Progress::new(false),
        }
    }
}

impl ProbeWatch for Shown {
    fn run_starts(&mut self) -> &mut dyn Observer {
        // A fresh line per run: its clock starts with the run.
        self.progress = Progress::new(self.enabled);
        &mut self.progress
    }

    fn run_ended(&mut self) {
        self.progress.finish();
    }

    fn note(&mut self, note: String) {
        output::warning(note);
    }
}

/// `48ms` or `2.3s`, as run reports show times.
fn took(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{}ms", (seconds * 1000.0).round())
    } else {
        format!("{seconds:.1}s")
    }
}

/// One line per probe, in doctor's style: ✔ ok, ✘ a failure that counts, · one that does not.
pub(super) fn print(probes: &[Probe]) {
    say!();
    say!("probe: a read run per worker in a temporary repository: \"{TASK}\"");
    for p in probes {
        let mark = match (p.ok, p.essential) {
            (true, _) => "✔",
            (false, true) => "✘",
            (false, false) => "·",
        };
        let model = match p.model_from {
            "events" => format!("model {} (as the CLI reported)", p.model),
            "requested" => format!("model {}", p.model),
            _ => "model (the CLI's default)".into(),
        };
        let mut line = format!(
            "{mark} {:<12} {} · {} · {model}",
            p.worker,
            if p.ok { "ok" } else { "failed" },
            took(p.seconds)
        );
        if let Some(run) = &p.run {
            line.push_str(&format!(" · run {run}"));
        }
        if let Some(error) = &p.error {
            line.push_str(&format!(" · {error}"));
        }
        if !p.ok && !p.essential {
            line.push_str(" (a fallback target: runs go on without it)");
        }
        say!("{line}");
    }
}
