//! The probe (`pitroom doctor --probe [worker…]`): one real, read-only round trip through each
//! worker. A `--version` line says a CLI is installed, not that it can log in, reach its
//! provider and answer headless under Pitroom's rules; the probe finds out with a tiny read run
//! in a temporary git repository, through the same calls as `pitroom run`. The probe's runs are
//! real runs (they stay in the state dir, with their receipts); the repository is removed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pitroom_core::{Observer, RunRecord, RunSpec, RunState};
use pitroom_git::Git;
use pitroom_workers::Mode;
use serde::Serialize;

use crate::{RunRequest, Service, ServiceError};

/// The word a worker must answer with.
pub const WORD: &str = "PITROOM-PROBE-OK";
/// The probe's task: nothing to read, one word to say, so a failure is the worker's set-up.
pub const TASK: &str = "Reply with exactly the word PITROOM-PROBE-OK";
/// A cold CLI (first start, a slow provider) may take a while; a probe must still end.
const TIMEOUT: &str = "180s";

/// What one worker's round trip showed.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    /// `backend[:model][#effort]`, as probed.
    pub worker: String,
    /// The configured default worker.
    pub default: bool,
    /// A failure here makes doctor exit 3: the default worker, or one named on the command line.
    pub essential: bool,
    pub ok: bool,
    /// The first line of what went wrong.
    pub error: Option<String>,
    /// From the request to the final record, the worker's start-up included.
    pub seconds: f64,
    /// The model the CLI used, as well as it can be told.
    pub model: String,
    /// Where `model` comes from: `events` (the CLI reported it), `requested` (the run's
    /// `spec.model`), or `default` (none was asked for and the CLI did not say).
    pub model_from: &'static str,
    /// The probe's run, when one was created.
    pub run: Option<String>,
}

/// What a probe tells its caller while it goes.
pub trait ProbeWatch {
    /// A probe run is about to start: the observer of its progress.
    fn run_starts(&mut self) -> &mut dyn Observer;
    /// That run ended (its progress display may be cleared).
    fn run_ended(&mut self);
    /// Something worth showing (a run's notes, a repository that could not be removed).
    fn note(&mut self, note: String);
}

/// A [`ProbeWatch`] for a caller that shows nothing while the probe goes (the MCP server): the
/// runs' progress is dropped, their notes kept for the answer.
pub struct Notes {
    pub notes: Vec<String>,
    silent: pitroom_core::Silent,
}

impl Default for Notes {
    fn default() -> Self {
        Notes {
            notes: Vec::new(),
            silent: pitroom_core::Silent,
        }
    }
}

impl ProbeWatch for Notes {
    fn run_starts(&mut self) -> &mut dyn Observer {
        &mut self.silent
    }
    fn run_ended(&mut self) {}
    fn note(&mut self, note: String) {
        self.notes.push(note);
    }
}

impl Service {
    /// Probes each named worker, or else the configured worker and its fallback targets, in
    /// turn. `Err` is a probe that could not start at all (no temporary repository).
    pub fn probe(
        &self,
        named: &[String],
        watch: &mut dyn ProbeWatch,
    ) -> Result<Vec<Probe>, String> {
        let repo = ProbeRepo::create()?;
        let probes = probe_in(self, repo.path(), named, watch);
        if let Err(e) = repo.remove() {
            watch.note(e);
        }
        Ok(probes)
    }
}

fn probe_in(
    service: &Service,
    repo: &Path,
    named: &[String],
    watch: &mut dyn ProbeWatch,
) -> Vec<Probe> {
    let configured = configured_targets(service, repo);
    let default = configured.as_ref().ok().map(|(d, _)| d.clone());
    let wanted = match wanted(named, &configured) {
        Ok(wanted) => wanted,
        Err(e) => return vec![unresolved("the configured worker", e, true)],
    };
    let mut probes: Vec<Probe> = Vec::new();
    for (worker, essential) in wanted {
        let given = worker.as_deref().unwrap_or("the configured worker");
        let spec = match service.resolve(&request(worker.as_deref(), repo)) {
            Ok(resolved) => resolved.spec,
            Err(e) => {
                probes.push(unresolved(given, &e, essential));
                continue;
            }
        };
        // A fallback target that is the default again (or a worker named twice) is probed once.
        if probes.iter().any(|p| p.worker == target_of(&spec)) {
            continue;
        }
        let mut probe = round_trip(service, spec, watch);
        probe.default = default.as_deref() == Some(probe.worker.as_str());
        probe.essential = essential || probe.default;
        let stopped = probe.error.as_deref() == Some(STOPPED);
        probes.push(probe);
        if stopped {
            break;
        }
    }
    probes
}

/// What to probe, each with whether its failure counts: the named workers (all of them count),
/// or the configured one (`None`: it counts) and its fallback targets (they do not).
fn wanted<'a>(
    named: &[String],
    configured: &'a Result<(String, Vec<String>), ServiceError>,
) -> Result<Vec<(Option<String>, bool)>, &'a ServiceError> {
    if !named.is_empty() {
        return Ok(named.iter().map(|t| (Some(t.clone()), true)).collect());
    }
    let (_, fallback) = configured.as_ref()?;
    Ok(std::iter::once((None, true))
        .chain(fallback.iter().map(|t| (Some(t.clone()), false)))
        .collect())
}

/// The text of a probe run that was stopped (Ctrl-C, `pitroom stop`): the rest are not probed.
const STOPPED: &str = "the probe was stopped";

/// The configured worker as `backend[:model][#effort]`, and its fallback targets.
fn configured_targets(
    service: &Service,
    dir: &Path,
) -> Result<(String, Vec<String>), ServiceError> {
    let chain = RunRequest {
        no_fallback: false,
        ..request(None, dir)
    };
    let resolved = service.resolve(&chain)?;
    let fallback = resolved.spec.fallback.iter().map(ToString::to_string);
    Ok((target_of(&resolved.spec), fallback.collect()))
}

fn request(worker: Option<&str>, dir: &Path) -> RunRequest {
    RunRequest {
        task: TASK.into(),
        mode: Some(Mode::Read),
        worker: worker.map(str::to_string),
        dir: Some(dir.to_path_buf()),
        timeout: Some(TIMEOUT.into()),
        // The probe tests this worker, not the chain: another target answering proves nothing.
        no_fallback: true,
        ..RunRequest::default()
    }
}

/// One run of the probe's task, judged.
fn round_trip(service: &Service, spec: RunSpec, watch: &mut dyn ProbeWatch) -> Probe {
    let target = target_of(&spec);
    let requested = spec.model.clone();
    let started = Instant::now();
    let outcome = service.run_foreground(spec, watch.run_starts());
    watch.run_ended();
    let seconds = started.elapsed().as_secs_f64();
    let record = match outcome {
        Ok((record, notes)) => {
            for note in notes {
                watch.note(note);
            }
            record
        }
        // It could not start: the CLI is missing, the repository is busy…
        Err(e) => {
            let mut probe = unresolved(&target, &e, false);
            probe.seconds = seconds;
            if let Some(model) = requested {
                (probe.model, probe.model_from) = (model, "requested");
            }
            return probe;
        }
    };
    let (model, model_from) = model_used(&record);
    let error = judge(
        record.state,
        record.error.as_deref(),
        record.answer.as_deref(),
    )
    .err();
    Probe {
        worker: target,
        default: false,
        essential: false,
        ok: error.is_none(),
        error,
        seconds,
        model,
        model_from,
        run: Some(record.id),
    }
}

/// A probe that failed before its run existed.
fn unresolved(worker: &str, e: &ServiceError, essential: bool) -> Probe {
    Probe {
        worker: worker.to_string(),
        default: false,
        essential,
        ok: false,
        error: Some(first_line(&e.message)),
        seconds: 0.0,
        model: "the CLI's default".into(),
        model_from: "default",
        run: None,
    }
}

/// Ok when the run is done and its answer holds the word; else the first line of why not.
fn judge(state: RunState, error: Option<&str>, answer: Option<&str>) -> Result<(), String> {
    if state == RunState::Stopped {
        return Err(STOPPED.into());
    }
    if state != RunState::Done {
        return Err(error.map_or_else(|| format!("the run ended {}", state.as_str()), first_line));
    }
    match answer {
        Some(answer) if answer.contains(WORD) => Ok(()),
        Some(answer) => Err(format!("answered without {WORD}: {}", first_line(answer))),
        None => Err("the worker gave no answer".into()),
    }
}

/// The model the CLI reported (in its events or its session data, as the run recorded it),
/// else the one the run asked for, else its default.
fn model_used(record: &RunRecord) -> (String, &'static str) {
    if let Some(model) = &record.reported_model {
        return (model.clone(), "events");
    }
    match &record.spec.model {
        Some(model) => (model.clone(), "requested"),
        None => ("the CLI's default".into(), "default"),
    }
}

/// `backend[:model][#effort]` of a resolved run.
fn target_of(spec: &RunSpec) -> String {
    spec.worker().to_string()
}

fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// A new directory named `prefix…` in the temp dir, kept (its owner removes it), or what to do
/// when none can be made.
pub fn fresh_temp_dir(prefix: &str) -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&base)
        .map(tempfile::TempDir::keep)
        .map_err(|e| {
            format!(
                "could not create a directory in {} ({e}); set TMPDIR to a writable directory",
                base.display()
            )
        })
}

/// The probe's repository: one committed file, removed when the probe ends.
struct ProbeRepo {
    dir: PathBuf,
}

impl ProbeRepo {
    fn create() -> Result<ProbeRepo, String> {
        let repo = ProbeRepo {
            dir: fresh_temp_dir("pitroom-probe-")?,
        };
        std::fs::write(
            repo.dir.join("README.md"),
            "A scratch repository for `pitroom doctor --probe`; it is removed when the probe ends.\n",
        )
        .map_err(|e| format!("could not write the probe's repository {}: {e}", repo.dir.display()))?;
        // The user's own hooks, signing and templates have no business in a scratch commit.
        let git = Git::in_dir(&repo.dir);
        let steps: [&[&str]; 3] = [
            &["-c", "init.defaultBranch=main", "init", "-q"],
            &["add", "-A"],
            &[
                "-c",
                "user.name=pitroom",
                "-c",
                "user.email=probe@pitroom.invalid",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "core.hooksPath=/dev/null",
                "commit",
                "-q",
                "-m",
                "pitroom doctor --probe",
            ],
        ];
        for args in steps {
            git.run(args).map_err(|e| {
                format!(
                    "could not set up the probe's repository {}: {e}",
                    repo.dir.display()
                )
            })?;
        }
        Ok(repo)
    }

    fn path(&self) -> &Path {
        &self.dir
    }
}

impl ProbeRepo {
    /// Removes the repository, or says why it could not.
    fn remove(mut self) -> Result<(), String> {
        // Taken, so the drop that follows has nothing left to remove.
        let dir = std::mem::take(&mut self.dir);
        std::fs::remove_dir_all(&dir).map_err(|e| {
            format!(
                "could not remove the probe's repository {}: {e}",
                dir.display()
            )
        })
    }
}

impl Drop for ProbeRepo {
    /// A repository whose set-up failed: removed, best effort (the failure is what the probe
    /// reports).
    fn drop(&mut self) {
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_the_one_the_run_recorded_as_reported_else_the_one_asked_for() {
        let spec = pitroom_core::RunSpec {
            model: Some("asked/model".into()),
            ..pitroom_core::RunSpec::new("t", pitroom_workers::Mode::Read, "opencode", "/r")
        };
        let mut record = RunRecord::new(
            "r1".into(),
            spec,
            "2026-11-30T00:00:00Z".parse().expect("a stamp"),
        );
        assert_eq!(model_used(&record), ("asked/model".into(), "requested"));
        record.reported_model = Some("ran-model".into());
        assert_eq!(model_used(&record), ("ran-model".into(), "events"));
        record.reported_model = None;
        record.spec.model = None;
        assert_eq!(model_used(&record), ("the CLI's default".into(), "default"));
    }

    #[test]
    fn a_probe_passes_only_when_the_run_is_done_and_says_the_word() {
        let said = format!("SUMMARY: {WORD}");
        assert_eq!(judge(RunState::Done, None, Some(&said)), Ok(()));
        assert_eq!(
            judge(RunState::Done, None, Some("Hello!\nHow can I help?")),
            Err(format!("answered without {WORD}: Hello!"))
        );
        assert_eq!(
            judge(RunState::Done, None, None),
            Err("the worker gave no answer".into())
        );
        assert_eq!(
            judge(RunState::Failed, Some("\nInvalid API key\nmore"), None),
            Err("Invalid API key".into())
        );
        assert_eq!(
            judge(RunState::Timeout, None, None),
            Err("the run ended timeout".into())
        );
        assert_eq!(
            judge(RunState::Stopped, None, Some(&said)),
            Err(STOPPED.into())
        );
    }
}
