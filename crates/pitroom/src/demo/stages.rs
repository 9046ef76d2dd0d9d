//! The demo's stages, in order: each prints a header that says the worker (or, with
//! `--worker`, the model) is scripted, then runs the real commands with the script for that
//! stage.

use std::path::PathBuf;

use super::scripts::{self, CREW_TASKS};
use super::worker::{Action, Script};
use super::{write, Demo, MODEL};
use crate::output::say;

/// How many stages there are with the scripted worker, for the "stage n/N" headers.
const STAGES: usize = 8;
/// With a real CLI the repair and race stages are left out: they need answers that change with
/// the round and the contender, which the scripted model server does not give.
const REAL_STAGES: usize = 6;
/// What every header says about the worker.
const WORKER: &str = "worker: scripted, not a model";
/// The review stage's header: its reviewer is the same scripted stand-in.
const REVIEWER: &str = "worker and reviewer: scripted, not a model";

impl Demo {
    pub(super) fn stages(&mut self) -> Result<(), String> {
        let dir = self.project.display().to_string();
        let (backend, model) = self.backend_and_model();
        let target = [
            "-W",
            backend.as_str(),
            "-m",
            model.as_str(),
            "-d",
            dir.as_str(),
        ];
        self.read(&target)?;
        let isolated = self.isolate(&target)?;
        self.review_and_apply(&isolated)?;
        self.write_and_revert(&target)?;
        self.crew(&target)?;
        // `watch` ends when the crew's records are final; their supervisors then still write
        // the ledger rows that `savings` reads (and writes, importing), so let them finish.
        let (limit, watch_limit) = self.limits();
        self.wait_for_supervisors(watch_limit);
        if self.real.is_none() {
            self.repair_round(&dir)?;
            self.race(&dir)?;
            self.wait_for_supervisors(watch_limit);
        }

        self.header(
            self.stage_count(),
            "savings",
            "what the runs above would have saved, from their scripted token counts",
        );
        self.pitroom(&["savings"], None, limit)?;
        Ok(())
    }

    /// The backend and model the runs name: the scripted worker as OpenCode, or the real CLI
    /// with the scripted model.
    fn backend_and_model(&self) -> (String, String) {
        match &self.real {
            Some(real) => (real.worker.backend.to_string(), real.worker.model()),
            None => ("opencode".into(), MODEL.into()),
        }
    }

    /// What a header says about who works: the scripted worker, or the real CLI and the
    /// scripted model.
    fn who(&self, reviewer: bool) -> String {
        match (&self.real, reviewer) {
            (None, false) => WORKER.into(),
            (None, true) => REVIEWER.into(),
            (Some(real), false) => format!(
                "worker: {} (the real CLI) · model: scripted, not a model",
                real.worker.backend
            ),
            (Some(real), true) => format!(
                "worker and reviewer: {} (the real CLI) · model: scripted, not a model",
                real.worker.backend
            ),
        }
    }

    fn read(&mut self, target: &[&str]) -> Result<(), String> {
        self.header(
            1,
            "read",
            "the answer cites calc.py twice; one citation is wrong, and Pitroom checks every path:line",
        );
        self.scripted(
            "1-read",
            scripts::read_script(),
            &[target, &[scripts::READ_TASK]].concat(),
        )?;
        self.scripted(
            "1-follow-up",
            scripts::follow_up_script(),
            &["run", "--continue", "last", scripts::FOLLOW_UP_TASK],
        )
    }

    /// The isolated edit; returns its run id, which the review and `apply` name (after the
    /// review, `last` is the review run).
    fn isolate(&mut self, target: &[&str]) -> Result<String, String> {
        self.header(
            2,
            "isolate",
            "the worker edits a private copy; its patch holds only its own edit, not your README.md",
        );
        self.scripted(
            "2-isolate",
            scripts::isolate_script(),
            &[&["-i"], target, &[scripts::ISOLATE_TASK]].concat(),
        )?;
        let id = self.latest_run()?;
        self.pitroom(&["show", "--patch"], None, self.limits().0)?;
        Ok(id)
    }

    fn review_and_apply(&mut self, isolated: &str) -> Result<(), String> {
        let who = self.who(true);
        self.header_for(
            3,
            "review + apply",
            &who,
            "a second run reviews the isolated change from a package (brief, report, diff); its verdict says whether to apply",
        );
        let (backend, model) = self.backend_and_model();
        let reviewer = format!("{backend}:{model}");
        self.scripted(
            "3-review",
            scripts::review_script(),
            &["review", isolated, "-W", reviewer.as_str()],
        )?;
        self.pitroom(&["apply", isolated], None, self.limits().0)
    }

    fn write_and_revert(&mut self, target: &[&str]) -> Result<(), String> {
        self.header(
            4,
            "write + revert",
            "the worker edits the project in place; revert undoes exactly its edits",
        );
        self.scripted(
            "4-write",
            scripts::write_script(),
            &[&["-w"], target, &[scripts::WRITE_TASK]].concat(),
        )?;
        self.pitroom(&["revert"], None, self.limits().0)
    }

    fn crew(&mut self, target: &[&str]) -> Result<(), String> {
        self.header(
            5,
            "crew + watch",
            "three read runs in the background as group demo, followed as NDJSON",
        );
        let script = self.script("5-crew", scripts::crew_script())?;
        let mut crew = vec!["crew", "-g", "demo"];
        crew.extend(target);
        crew.extend(CREW_TASKS.iter().map(|(task, _)| *task));
        let (limit, watch_limit) = self.limits();
        self.pitroom(&crew, Some(&script), limit)?;
        // `watch`'s own timeout, under the demo's backstop.
        let timeout = (watch_limit.as_secs() - 15).to_string();
        self.pitroom(
            &[
                "watch",
                "-g",
                "demo",
                "--json",
                "--timeout",
                timeout.as_str(),
            ],
            None,
            watch_limit,
        )
    }

    /// Stage 6: `--attempts`; the first round's failed check goes back to the worker.
    fn repair_round(&mut self, dir: &str) -> Result<(), String> {
        self.header(
            6,
            "repair round",
            "the check fails after round 1; its output goes back to the worker, which fixes it in round 2",
        );
        let script = self.script("6-repair", scripts::repair_script())?;
        let target = format!("opencode:{MODEL}");
        self.pitroom(
            &[
                "-i",
                "-W",
                target.as_str(),
                "-d",
                dir,
                "--verify",
                scripts::MEAN_CHECK,
                "--attempts",
                "2",
                scripts::MEAN_TASK,
            ],
            Some(&script),
            self.limits().0,
        )?;
        let id = self.latest_run()?;
        self.pitroom(&["discard", id.as_str()], None, self.limits().0)
    }

    /// Stage 7: `--race`; two contenders, and the one whose check passes is landed.
    fn race(&mut self, dir: &str) -> Result<(), String> {
        self.header(
            7,
            "race",
            "two models take the same task in their own copies; only one passes the check, and apply lands it",
        );
        let script = self.script("7-race", scripts::race_script())?;
        let contenders = scripts::RACE_MODELS
            .iter()
            .map(|model| format!("opencode:{model}"))
            .collect::<Vec<_>>()
            .join(",");
        let (limit, _) = self.limits();
        self.pitroom(
            &[
                "run",
                "--race",
                contenders.as_str(),
                "-d",
                dir,
                "--verify",
                scripts::MEAN_CHECK,
                scripts::MEAN_TASK,
            ],
            Some(&script),
            limit,
        )?;
        self.pitroom(&["apply"], None, limit)
    }

    /// How many stages this demo has.
    fn stage_count(&self) -> usize {
        if self.real.is_some() {
            REAL_STAGES
        } else {
            STAGES
        }
    }

    fn header(&mut self, n: usize, name: &str, about: &str) {
        let who = self.who(false);
        self.header_for(n, name, &who, about);
    }

    fn header_for(&mut self, n: usize, name: &str, who: &str, about: &str) {
        let of = self.stage_count();
        self.stage = format!("stage {n}/{of} ({name})");
        say!();
        say!("▶ stage {n}/{of} · {name} · {who}");
        say!("  {about}");
    }

    /// The newest run in the demo's state dir.
    fn latest_run(&self) -> Result<String, String> {
        self.home().run_ids().pop().ok_or_else(|| {
            format!(
                "{}: the run left no record in {}",
                self.stage,
                self.state.display()
            )
        })
    }

    /// Runs `pitroom args` with the worker script `name` of these actions, within the run limit.
    fn scripted(&mut self, name: &str, actions: Vec<Action>, args: &[&str]) -> Result<(), String> {
        let script = self.script(name, Script::Actions(actions))?;
        self.pitroom(args, Some(&script), self.limits().0)
    }

    /// Writes a script for the worker and returns its path.
    fn script(&self, name: &str, script: Script) -> Result<PathBuf, String> {
        let path = self.scripts.join(format!("{name}.json"));
        let text = serde_json::to_string_pretty(&script)
            .map_err(|e| format!("could not encode the {name} script: {e}"))?;
        write(&path, &text)?;
        Ok(path)
    }
}
