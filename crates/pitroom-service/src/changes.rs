//! A run's changes: the patch as shown (redacted), apply (one run or a group, all or nothing
//! per run), discard, revert.

use pitroom_core::exit::Exit;
use pitroom_core::landing::{self, UnseenFile};
pub use pitroom_core::patches::Allow;
use pitroom_core::{patches, revert, RunRecord};
use pitroom_workers::Mode;

use crate::{ErrorKind, Service, ServiceError};

/// What `apply -g` did: the runs applied in start order, and the one that stopped it.
#[derive(Debug)]
pub struct GroupApply {
    pub group: String,
    pub applied: Vec<String>,
    /// The runs not applied, from the one that failed on.
    pub not_applied: Vec<String>,
    pub error: Option<(String, ServiceError)>,
}

/// One file of the worker's output, as a front end may show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunFile {
    Patch,
    Events,
    Stderr,
}

impl RunFile {
    pub fn name(self) -> &'static str {
        match self {
            RunFile::Patch => "changes.patch",
            RunFile::Events => "events.jsonl",
            RunFile::Stderr => "stderr.log",
        }
    }
}

impl Service {
    /// The run's patch with secrets redacted (the stored patch stays exact: apply and revert
    /// need it). `None` when the run changed nothing. `apply` refuses a patch whose files this
    /// text shows redacted, or binary, unless allowed (`patches::Allow`).
    pub fn patch(&self, record: &RunRecord) -> Result<Option<String>, ServiceError> {
        Ok(self
            .run_file(record, RunFile::Patch)?
            .map(|bytes| landing::shown_patch(&bytes, &landing::redactor_for(record))))
    }

    /// The files of a run's patch whose content lands as binary, which no preview shows;
    /// empty when the run has no patch.
    pub fn unseen_files(&self, record: &RunRecord) -> Result<Vec<UnseenFile>, ServiceError> {
        Ok(self
            .run_file(record, RunFile::Patch)?
            .map(|bytes| landing::unseen_files(&bytes))
            .unwrap_or_default())
    }

    /// The lines a run's report adds when its patch holds what its preview does not show:
    /// binary files (executables and `#!` scripts named as such) and files shown redacted,
    /// with the flag `apply` needs for each. `None` when there are none, or nothing is left to
    /// apply (not an isolated run, or applied already: the flags would mean nothing).
    pub fn landing_note(&self, record: &RunRecord) -> Option<String> {
        if record.spec.mode != Mode::Isolate || record.patch.is_applied() {
            return None;
        }
        let bytes = self.run_file(record, RunFile::Patch).ok().flatten()?;
        let unseen = landing::unseen_files(&bytes);
        let redacted = landing::redacted_files(&bytes, &landing::redactor_for(record));
        let mut note = String::new();
        if !unseen.is_empty() {
            note.push_str(
                "── binary content the patch does not show (apply needs --allow-binary):\n",
            );
            for u in &unseen {
                note.push_str(&format!("   {}: {}\n", u.path, u.describe()));
            }
        }
        if !redacted.is_empty() {
            note.push_str(
                "── shown redacted, the real bytes would land (apply needs --allow-redacted):\n",
            );
            for path in &redacted {
                note.push_str(&format!("   {path}\n"));
            }
        }
        (!note.is_empty()).then_some(note)
    }

    /// The raw bytes of one of the run's files; `None` when the run has none.
    pub fn run_file(
        &self,
        record: &RunRecord,
        file: RunFile,
    ) -> Result<Option<Vec<u8>>, ServiceError> {
        let path = self.home().run_dir(&record.id).join(file.name());
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ServiceError::refused(format!(
                "run {} has no readable {}: {e}",
                record.id,
                file.name()
            ))),
        }
    }

    /// Lands an isolated run's patch in the user's tree: checked first, all or nothing;
    /// deletions, text its preview shows redacted and binary content only as `allow` says.
    /// Returns the updated record and the files changed.
    pub fn apply(
        &self,
        given: Option<&str>,
        allow: Allow,
    ) -> Result<(RunRecord, usize), ServiceError> {
        let mut record = self.load_of_mode(given, Mode::Isolate)?;
        if given.is_none() {
            // The latest isolated run is a race's contender: the race's winner is what lands.
            if let Some(winner) = self.race_winner_of(&record).filter(|w| *w != record.id) {
                record = self.load(Some(&winner))?;
            }
        }
        let files = patches::apply(self.home(), &mut record, allow)?;
        Ok((record, files))
    }

    /// Applies a group's unapplied isolated runs with changes in start order, stopping at the
    /// first that fails.
    pub fn apply_group(&self, group: &str, allow: Allow) -> Result<GroupApply, ServiceError> {
        let home = self.home();
        let mut pending: Vec<RunRecord> = home
            .run_ids()
            .iter()
            .filter_map(|id| home.load_settled(id).ok())
            .filter(|r| r.spec.group.as_deref() == Some(group) && r.spec.mode == Mode::Isolate)
            .filter(|r| !r.patch.is_applied() && !r.changes.is_empty())
            .collect();
        if pending.iter().any(|r| r.spec.race) {
            // A race's contenders are rival answers to one task: only the winner lands.
            let winner = self.race(group).winner;
            pending.retain(|r| Some(&r.id) == winner.as_ref());
        }
        if pending.is_empty() {
            return Err(ServiceError::refused(format!(
                "group {group} has no unapplied isolated runs with changes"
            )));
        }
        let mut outcome = GroupApply {
            group: group.to_string(),
            applied: Vec::new(),
            not_applied: Vec::new(),
            error: None,
        };
        for (index, record) in pending.iter_mut().enumerate() {
            if let Err(e) = patches::apply(home, record, allow) {
                outcome.not_applied = pending[index..].iter().map(|r| r.id.clone()).collect();
                outcome.error = Some((pending[index].id.clone(), e.into()));
                break;
            }
            outcome.applied.push(record.id.clone());
        }
        Ok(outcome)
    }

    /// Removes an isolated run's copy; its patch is kept.
    pub fn discard(&self, given: Option<&str>) -> Result<RunRecord, ServiceError> {
        let mut record = self.load_of_mode(given, Mode::Isolate)?;
        patches::discard(self.home(), &mut record)?;
        Ok(record)
    }

    /// Undoes exactly a write run's edits (checked first; refused if the files changed since).
    pub fn revert(&self, given: Option<&str>) -> Result<(RunRecord, usize), ServiceError> {
        let mut record = self.load_of_mode(given, Mode::Write)?;
        let files = revert::revert(self.home(), &mut record)?;
        Ok((record, files))
    }
}

impl Service {
    /// The run `given`, or with none the latest run of `mode`: after `pitroom review` the
    /// latest run is the review, and `pitroom apply` still means the change it reviewed.
    fn load_of_mode(&self, given: Option<&str>, mode: Mode) -> Result<RunRecord, ServiceError> {
        if given.is_some() {
            return self.load(given);
        }
        let home = self.home();
        let latest = home.run_ids().into_iter().rev().find(|id| {
            home.load(id)
                .is_ok_and(|r| r.spec.mode == mode && r.spec.review_of.is_none())
        });
        match latest {
            Some(id) => Ok(home.load_settled(&id)?),
            // No run of that mode: the latest run, whose refusal says what it is instead.
            None => self.load(None),
        }
    }
}

impl GroupApply {
    /// How the process ends: ok when everything landed, else as the failure does.
    pub fn exit(&self) -> Exit {
        match &self.error {
            None => Exit::Ok,
            Some((_, e)) => e.exit(),
        }
    }

    pub fn failed_kind(&self) -> Option<ErrorKind> {
        self.error.as_ref().map(|(_, e)| e.kind)
    }
}
