//! `pitroom review`: a second model reviews a change — a run's, a commit range, the branch since
//! its merge base with a ref, or the uncommitted work in the tree. The package — the brief, the
//! implementer's report, earlier findings and the diff with ±10 lines of context — is written to
//! the state directory with secrets redacted and attached to a read run on another backend, so
//! the diff never passes through the primary's context. The reviewer must end with a verdict
//! line (`pitroom_core::verdict`), or the review fails. A panel is several reviewers on the same
//! package at once, as one group; their verdicts merge into the strictest.

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
    /// The repository of a range, base or uncommitted review (default: the current directory).
    pub dir: Option<PathBuf>,
    pub timeout: Option<String>,
    pub background: bool,
    /// Review the uncommitted work in the tree (tracked changes and untracked files) against
    /// `HEAD`, instead of a run.
    pub uncommitted: bool,
    /// Review the branch: `HEAD` from its merge base with this ref.
    pub base: Option<String>,
    /// What the reviewer should look at most closely.
    pub focus: Option<String>,
    /// Reviewers (`backend[:model]`) to run at once on the same package; empty for one.
    pub panel: Vec<String>,
}

/// What a review looks at, and the package and directory it has.
struct Package {
    path: PathBuf,
    dir: PathBuf,
    /// What the record's `review_of` says: a run id, `A..B`, `uncommitted`.
    review_of: String,
    /// The implementer's backend, for a run (a reviewer on another one is preferred).
    implementer: String,
}

/// The two trees an uncommitted review compares.
pub(crate) struct UncommittedTrees {
    pub head: String,
    pub snapshot: pitroom_git::Snapshot,
}

impl Service {
    /// Builds the review package and the reviewer's read run, ready to start.
    pub fn prepare_review(&self, review: &ReviewRequest) -> Result<Resolved, ServiceError> {
        if !review.panel.is_empty() {
            return Err(ServiceError::usage(
                "a panel is several reviews: prepare it with prepare_panel",
            ));
        }
        let package = self.package(review)?;
        let config = self.config(&FlagValues::default())?;
        let (worker, warnings) = reviewer(
            &config,
            review.worker.as_deref(),
            review.tier.as_deref(),
            &package.implementer,
        )?;
        self.reviewer_run(review, &package, worker, warnings)
    }

    /// Builds one package and a reviewer's read run per member of the panel, in one group, ready
    /// to start together.
    pub fn prepare_panel(
        &self,
        review: &ReviewRequest,
    ) -> Result<(String, Vec<Resolved>), ServiceError> {
        let members = panel_members(&review.panel)?;
        let package = self.package(review)?;
        let group = format!("panel-{}", stamp());
        let mut runs = Vec::new();
        for member in members {
            let one = ReviewRequest {
                tier: None,
                background: true,
                ..review.clone()
            };
            let mut resolved = self.reviewer_run(&one, &package, Some(member), Vec::new())?;
            resolved.spec.group = Some(group.clone());
            // The panel is followed in the foreground: its report is the news.
            resolved.spec.notify = false;
            runs.push(resolved);
        }
        Ok((group, runs))
    }

    /// The package the request names.
    fn package(&self, review: &ReviewRequest) -> Result<Package, ServiceError> {
        let chosen = [
            review.range.is_some(),
            review.base.is_some(),
            review.uncommitted,
            review.run.is_some(),
        ];
        if chosen.iter().filter(|c| **c).count() > 1 {
            return Err(ServiceError::usage(
                "review one thing: a run, --range A..B, --base REF or --uncommitted",
            ));
        }
        let dir = review.dir.as_deref();
        if let Some(range) = &review.range {
            return self.range_package(range, dir);
        }
        if let Some(base) = &review.base {
            return self.range_package(&format!("{base}..HEAD"), dir);
        }
        if review.uncommitted {
            return self.uncommitted_package(dir);
        }
        self.run_package(review.run.as_deref())
    }

    /// The reviewer's read run of `package`, by `worker` (else the request's tier).
    fn reviewer_run(
        &self,
        review: &ReviewRequest,
        package: &Package,
        worker: Option<String>,
        mut warnings: Vec<String>,
    ) -> Result<Resolved, ServiceError> {
        let request = RunRequest {
            task: reviewer_task(&package.review_of, review.focus.as_deref()),
            mode: Some(Mode::Read),
            worker: worker.clone(),
            tier: if worker.is_none() {
                review.tier.clone()
            } else {
                None
            },
            dir: Some(package.dir.clone()),
            timeout: review.timeout.clone(),
            background: review.background,
            files: vec![package.path.clone()],
            ..RunRequest::default()
        };
        let mut resolved = self.resolve(&request)?;
        resolved.spec.review_of = Some(package.review_of.clone());
        resolved.warnings.append(&mut warnings);
        Ok(resolved)
    }

    /// The package of the uncommitted work in the tree: every change to tracked files and every
    /// untracked file git does not ignore, against `HEAD`. The tree is snapshotted into a
    /// throwaway index with secret-looking files kept out (never staged, so never in the
    /// object store, and never in the package); the user's index is only read.
    fn uncommitted_package(&self, dir: Option<&Path>) -> Result<Package, ServiceError> {
        let repo = discover(dir, "--uncommitted reviews the work in a git tree")?;
        let trees = self.uncommitted_trees(&repo)?;
        let git = Git::in_dir(&repo.toplevel);
        let diff = git
            .run([
                "diff",
                "--no-ext-diff",
                "--binary",
                CONTEXT_LINES,
                trees.head.as_str(),
                trees.snapshot.tree.as_str(),
            ])
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| ServiceError::refused(format!("diffing the tree against HEAD: {e}")))?;
        let snap = trees.snapshot;
        if diff.trim().is_empty() {
            return Err(ServiceError::refused(
                "the tree has no uncommitted changes; there is nothing to review",
            ));
        }
        let mut text = format!(
            "# Review package for the uncommitted work\n\n## The brief\n\nReview the uncommitted work in {} against HEAD: changes to tracked files and new files not yet added.\n\n## The change (±10 lines of context)\n\n```diff\n{}\n```\n",
            repo.toplevel.display(),
            diff.trim_end()
        );
        if !snap.dropped.is_empty() {
            text.push_str(&format!(
                "\n## What the diff above does not show\n\nSecret-looking files are left out of the package: {}\n",
                snap.dropped.join(", ")
            ));
        }
        let path = self
            .reviews_dir()?
            .join(format!("uncommitted-{}.md", stamp()));
        self.write_package(&path, &text, Some(&repo.toplevel))?;
        Ok(Package {
            path,
            dir: repo.toplevel.clone(),
            review_of: "uncommitted".to_string(),
            implementer: String::new(),
        })
    }

    /// The tree of `HEAD` (the empty tree before the first commit) and a snapshot of the work
    /// tree beside it, as `--uncommitted` reviews them: the pair names the change exactly.
    pub(crate) fn uncommitted_trees(
        &self,
        repo: &pitroom_git::Repo,
    ) -> Result<UncommittedTrees, ServiceError> {
        let reviews = self.reviews_dir()?;
        // The process id too: two gates of one stop snapshot in the same millisecond.
        let index = reviews.join(format!(
            ".uncommitted-index-{}-{}",
            stamp(),
            std::process::id()
        ));
        let snapped = pitroom_core::secrets::snapshot_without_secrets(repo, &index);
        // The throwaway index has served once the tree is written.
        if let Err(e) = std::fs::remove_file(&index) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!("could not remove {}: {e}", index.display());
            }
        }
        let snapshot =
            snapped.map_err(|e| ServiceError::refused(format!("snapshotting the tree: {e}")))?;
        let head = Git::in_dir(&repo.toplevel)
            .run(["rev-parse", "--verify", "--quiet", "HEAD^{tree}"])
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .unwrap_or_else(|_| pitroom_git::EMPTY_TREE.to_string());
        Ok(UncommittedTrees { head, snapshot })
    }

    /// Where packages of ranges and uncommitted work are kept.
    fn reviews_dir(&self) -> Result<PathBuf, ServiceError> {
        let reviews = self.home().root.join("reviews");
        std::fs::create_dir_all(&reviews)
            .map_err(|e| ServiceError::refused(format!("{}: {e}", reviews.display())))?;
        Ok(reviews)
    }

    /// The package of a finished run with changes: written into its run directory.
    fn run_package(&self, given: Option<&str>) -> Result<Package, ServiceError> {
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
        Ok(Package {
            path,
            dir,
            review_of: id,
            implementer: record.backend().to_string(),
        })
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
    pub(crate) fn latest_review_of(&self, run: &str) -> Option<RunRecord> {
        let home = self.home();
        home.run_ids()
            .iter()
            .rev()
            .take(500)
            .filter_map(|id| home.load(id).ok())
            .find(|r| r.spec.review_of.as_deref() == Some(run) && !r.state.is_active())
    }

    /// The package of a commit range `A..B`: its commits and its diff from the merge base.
    fn range_package(&self, range: &str, dir: Option<&Path>) -> Result<Package, ServiceError> {
        let Some((from, to)) = range
            .split_once("..")
            .filter(|(a, b)| !a.is_empty() && !b.is_empty() && !b.starts_with('.'))
        else {
            return Err(ServiceError::usage(format!(
                "--range {range}: give two commits as A..B (e.g. main..HEAD)"
            )));
        };
        let repo = discover(dir, "--range and --base review commits")?;
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
        let reviews = self.reviews_dir()?;
        let name: String = range
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let path = reviews.join(format!("{name}-{}.md", stamp()));
        self.write_package(&path, &text, Some(&repo.toplevel))?;
        Ok(Package {
            path,
            dir: repo.toplevel.clone(),
            review_of: range.to_string(),
            implementer: String::new(),
        })
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

/// The repository `dir` (default: the current directory) is in; `why` says what needs one.
fn discover(dir: Option<&Path>, why: &str) -> Result<pitroom_git::Repo, ServiceError> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(|e| {
            ServiceError::refused(format!("cannot read the current directory: {e}"))
        })?,
    };
    pitroom_git::Repo::discover(&dir)
        .map_err(|e| ServiceError::refused(e.to_string()))?
        .ok_or_else(|| {
            ServiceError::refused(format!(
                "{} is not in a git repository; {why}",
                dir.display()
            ))
        })
}

/// The most reviewers a panel may have: each is a full worker session.
pub const MAX_PANEL: usize = 5;

/// The panel's reviewers, each a target given once; two to [`MAX_PANEL`] of them.
fn panel_members(given: &[String]) -> Result<Vec<String>, ServiceError> {
    let members = crate::request::distinct_targets(given);
    if !(2..=MAX_PANEL).contains(&members.len()) {
        return Err(ServiceError::usage(format!(
            "--panel takes 2 to {MAX_PANEL} different reviewers, comma-separated (e.g. --panel claude,gemini,codex); got {}",
            members.len()
        )));
    }
    Ok(members)
}

/// What the reviewer is asked.
fn reviewer_task(review_of: &str, focus: Option<&str>) -> String {
    let what = match review_of {
        "uncommitted" => "the uncommitted work in this tree".to_string(),
        other => format!("the change of {other}"),
    };
    let focus = focus
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(|f| format!("Focus above all on: {f}\n"))
        .unwrap_or_default();
    format!(
        "Review {what}, described in the attached review package (the brief, the implementer's report, any earlier findings, and the diff). \
Check it against the brief: does it do what was asked, are cases missed, are there bugs, risks or missing tests? \
List each issue with its severity (critical, important or minor) and a path:line citation. \
Do not change any file.\n{focus}End your answer with exactly one verdict line:\n{VERDICT_FORMAT}"
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
