//! `pitroom review`: a second model reviews a run's change (or a commit range). The package —
//! the brief, the implementer's report, earlier findings and the diff with ±10 lines of
//! context — is written to the state directory with secrets redacted and attached to a read
//! run on another backend, so the diff never passes through the primary's context. The
//! reviewer must end with a verdict line (`pitroom_core::verdict`), or the review fails.

use std::path::{Path, PathBuf};

use pitroom_core::config::{Config, FlagValues};
use pitroom_core::redact::Redactor;
use pitroom_core::target::Target;
use pitroom_core::verdict::VERDICT_FORMAT;
use pitroom_core::RunRecord;
use pitroom_git::Git;
use pitroom_workers::Mode;

use crate::request::DEFAULT_BACKEND;
use crate::{Resolved, RunRequest, Service, ServiceError};

/// Lines of context around each change in the package.
const CONTEXT_LINES: &str = "-U10";
/// The tiers tried for a reviewer, in order, when none is named.
const REVIEW_TIERS: [&str; 3] = ["review", "standard", "capable"];

/// What to review and by whom.
#[derive(Debug, Clone, Default)]
pub struct ReviewRequest {
    /// The run to review (an id, a prefix or `last`; `None` with no range: the latest run).
    pub run: Option<String>,
    /// A commit range `A..B` instead of a run.
    pub range: Option<String>,
    /// The reviewer (`backend[:model]`), else a tier, else the review tiers of the config.
    pub worker: Option<String>,
    pub tier: Option<String>,
    /// The repository of a range review (default: the current directory).
    pub dir: Option<PathBuf>,
    pub timeout: Option<String>,
    pub background: bool,
}

impl Service {
    /// Builds the review package and the reviewer's read run, ready to start.
    pub fn prepare_review(&self, review: &ReviewRequest) -> Result<Resolved, ServiceError> {
        let (package, brief_dir, review_of, implementer) = match &review.range {
            Some(range) => self.range_package(range, review.dir.as_deref())?,
            None => self.run_package(review.run.as_deref())?,
        };
        let config = self.config(&FlagValues::default())?;
        let (worker, mut warnings) = reviewer(
            &config,
            review.worker.as_deref(),
            review.tier.as_deref(),
            &implementer,
        )?;
        let request = RunRequest {
            task: reviewer_task(&review_of),
            mode: Some(Mode::Read),
            worker: worker.clone(),
            tier: if worker.is_none() {
                review.tier.clone()
            } else {
                None
            },
            dir: Some(brief_dir),
            timeout: review.timeout.clone(),
            background: review.background,
            files: vec![package],
            ..RunRequest::default()
        };
        let mut resolved = self.resolve(&request)?;
        resolved.spec.review_of = Some(review_of);
        resolved.warnings.append(&mut warnings);
        Ok(resolved)
    }

    /// The package of a finished run with changes: written into its run directory.
    fn run_package(
        &self,
        given: Option<&str>,
    ) -> Result<(PathBuf, PathBuf, String, String), ServiceError> {
        let record = self.load(given)?;
        let id = record.id.clone();
        record.ensure_finished().map_err(ServiceError::refused)?;
        if record.changes.is_empty() {
            return Err(ServiceError::refused(format!(
                "run {id} changed nothing, so there is no change to review; review a run that edited files (-i or -w)"
            )));
        }
        let diff = self.run_diff(&record)?;
        let previous = record
            .spec
            .parent
            .as_deref()
            .and_then(|parent| self.latest_review_of(parent));
        let mut text = format!(
            "# Review package for run {id}\n\n## The brief (what the implementer was asked)\n\n{}\n\n## The implementer's report\n\n{}\n",
            record.spec.task.trim(),
            record.answer.as_deref().unwrap_or("(no answer)").trim()
        );
        if let Some(previous) = previous {
            text.push_str(&format!(
                "\n## Findings of the previous review ({}): this round is a fix; check each one was addressed\n\n{}\n",
                previous.id,
                previous.answer.as_deref().unwrap_or("").trim()
            ));
        }
        text.push_str(&format!(
            "\n## The change (±10 lines of context)\n\n```diff\n{}\n```\n",
            diff.trim_end()
        ));
        // A binary file's content is base85 above: say what it is, so it is not skimmed over.
        if let Some(note) = self.landing_note(&record) {
            text.push_str(&format!("\n## What the diff above does not show\n\n{note}"));
        }
        let path = self
            .home()
            .run_dir(&id)
            .join(format!("review-package-{}.md", stamp()));
        self.write_package(&path, &text, record.repo.as_deref())?;
        let dir = record
            .copy
            .clone()
            .filter(|c| record.spec.mode == Mode::Isolate && c.is_dir())
            .unwrap_or_else(|| record.spec.dir.clone());
        let implementer = record.spec.backend.clone();
        Ok((path, dir, id, implementer))
    }

    /// The diff of a run with wide context from its trees, else its stored patch.
    fn run_diff(&self, record: &RunRecord) -> Result<String, ServiceError> {
        let repo_dir = record
            .copy
            .clone()
            .filter(|c| c.is_dir())
            .or(record.repo.clone());
        if let (Some(dir), Some(base), Some(after)) =
            (repo_dir, &record.base_tree, &record.after_tree)
        {
            let wide = Git::in_dir(&dir).run([
                "diff",
                "--no-ext-diff",
                "--binary",
                CONTEXT_LINES,
                base.as_str(),
                after.as_str(),
            ]);
            if let Ok(bytes) = wide {
                return Ok(String::from_utf8_lossy(&bytes).into_owned());
            }
        }
        match self.patch(record)? {
            Some(patch) => Ok(patch),
            None => Err(ServiceError::refused(format!(
                "run {} has no patch to review",
                record.id
            ))),
        }
    }

    /// The newest finished review of `run`, for a follow-up round.
    fn latest_review_of(&self, run: &str) -> Option<RunRecord> {
        let home = self.home();
        home.run_ids()
            .iter()
            .rev()
            .take(500)
            .filter_map(|id| home.load(id).ok())
            .find(|r| r.spec.review_of.as_deref() == Some(run) && !r.state.is_active())
    }

    /// The package of a commit range `A..B`: its commits and its diff from the merge base.
    fn range_package(
        &self,
        range: &str,
        dir: Option<&Path>,
    ) -> Result<(PathBuf, PathBuf, String, String), ServiceError> {
        let Some((from, to)) = range
            .split_once("..")
            .filter(|(a, b)| !a.is_empty() && !b.is_empty() && !b.starts_with('.'))
        else {
            return Err(ServiceError::usage(format!(
                "--range {range}: give two commits as A..B (e.g. main..HEAD)"
            )));
        };
        let dir = match dir {
            Some(d) => d.to_path_buf(),
            None => std::env::current_dir().map_err(|e| {
                ServiceError::refused(format!("cannot read the current directory: {e}"))
            })?,
        };
        let repo = pitroom_git::Repo::discover(&dir)
            .map_err(|e| ServiceError::refused(e.to_string()))?
            .ok_or_else(|| {
                ServiceError::refused(format!(
                    "{} is not in a git repository; --range reviews commits",
                    dir.display()
                ))
            })?;
        let git = Git::in_dir(&repo.toplevel);
        let text_of = |args: &[&str]| -> Result<String, ServiceError> {
            git.run(args)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| ServiceError::usage(format!("--range {range}: {e}")))
        };
        let base = text_of(&["merge-base", from, to])?.trim().to_string();
        let log = text_of(&[
            "log",
            "--no-color",
            "--format=%h %s",
            &format!("{from}..{to}"),
        ])?;
        let diff = text_of(&["diff", "--no-ext-diff", CONTEXT_LINES, &base, to])?;
        if diff.trim().is_empty() {
            return Err(ServiceError::refused(format!(
                "--range {range} changes nothing; there is nothing to review"
            )));
        }
        let text = format!(
            "# Review package for {range}\n\n## The brief\n\nReview the commits {range} (from their merge base {}).\n\n## The commits\n\n{}\n\n## The change (±10 lines of context)\n\n```diff\n{}\n```\n",
            &base[..base.len().min(12)],
            log.trim(),
            diff.trim_end()
        );
        let reviews = self.home().root.join("reviews");
        std::fs::create_dir_all(&reviews)
            .map_err(|e| ServiceError::refused(format!("{}: {e}", reviews.display())))?;
        let name: String = range
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let path = reviews.join(format!("{name}-{}.md", stamp()));
        self.write_package(&path, &text, Some(&repo.toplevel))?;
        Ok((
            path,
            repo.toplevel.clone(),
            range.to_string(),
            String::new(),
        ))
    }

    fn write_package(
        &self,
        path: &Path,
        text: &str,
        repo: Option<&Path>,
    ) -> Result<(), ServiceError> {
        let dirs: Vec<&Path> = repo.into_iter().collect();
        let clean = Redactor::for_dirs(&dirs).redact(text);
        pitroom_core::record::write_atomic(path, clean.as_bytes()).map_err(|e| {
            ServiceError::refused(format!(
                "cannot write the review package {}: {e}",
                path.display()
            ))
        })
    }
}

/// What the reviewer is asked.
fn reviewer_task(review_of: &str) -> String {
    format!(
        "Review the change of {review_of}, described in the attached review package (the brief, the implementer's report, any earlier findings, and the diff). \
Check it against the brief: does it do what was asked, are cases missed, are there bugs, risks or missing tests? \
List each issue with its severity (critical, important or minor) and a path:line citation. \
Do not change any file. End your answer with exactly one verdict line:\n{VERDICT_FORMAT}"
    )
}

/// The reviewer's target: the one named, else the first review tier on another backend than
/// the implementer, else the first fallback on another backend, else the default worker (with
/// a warning that it is the implementer's backend).
fn reviewer(
    config: &Config,
    worker: Option<&str>,
    tier: Option<&str>,
    implementer: &str,
) -> Result<(Option<String>, Vec<String>), ServiceError> {
    if worker.is_some() || tier.is_some() {
        return Ok((worker.map(str::to_string), Vec::new()));
    }
    let backend_of = |t: &str| Target::parse(t, DEFAULT_BACKEND).ok().map(|t| t.backend);
    let other = |t: &String| backend_of(t).is_some_and(|b| b != implementer);
    let tiered = REVIEW_TIERS
        .iter()
        .filter_map(|name| config.map_value("tiers", name))
        .find(other);
    if let Some(t) = tiered.or_else(|| config.list("fallback").into_iter().find(other)) {
        return Ok((Some(t), Vec::new()));
    }
    Ok((
        None,
        vec![format!(
            "no reviewer on another backend than {implementer} is configured ([tiers] review = \"backend:model\" in the config, or -W); the review runs on the default worker"
        )],
    ))
}

/// Names files that must not overwrite each other: the wall clock, since a fixed clock would
/// give every review of a test the same name.
fn stamp() -> String {
    crate::wall_stamp()
}
