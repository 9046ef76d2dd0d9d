//! Per-command rules: the read-only forms of commands that can also write.

use crate::scan::{abbreviates, before_dashdash, scan, short_cluster, split_eq, Spec, NO_OPTIONS};
use crate::{CONFIG, DISCARD, HISTORY, INDEX, OBJECTS, PUBLISHES, REFLOG, REFS, SUBMODULES};

/// Plain `git apply` only touches the work tree; `--index`, `--cached`, `--3way` and
/// `--intent-to-add` touch the index. Long options may be abbreviated.
pub(super) fn apply_rule(rest: &[String]) -> Result<(), &'static str> {
    const INDEX_OPTIONS: &[&str] = &["index", "cached", "3way", "intent-to-add"];
    for arg in before_dashdash(rest) {
        if let Some(long) = arg.strip_prefix("--") {
            if abbreviates(split_eq(long).0, INDEX_OPTIONS) {
                return Err(INDEX);
            }
        } else if let Some(cluster) = short_cluster(arg) {
            for c in cluster.chars() {
                match c {
                    '3' | 'N' => return Err(INDEX),
                    // -p<n> and -C<n>: the rest of the cluster is a number.
                    'p' | 'C' => break,
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// Listing only: no positional name unless a flag puts branch in list mode.
pub(super) fn branch_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &[
            "--list",
            "--all",
            "--remotes",
            "--verbose",
            "--show-current",
            "--ignore-case",
            "--omit-empty",
            "--quiet",
            "--no-color",
            "--no-column",
            "--no-abbrev",
        ],
        // The filters take an optional argument; a separate one is left for the scan to see.
        optional: &[
            "--color",
            "--column",
            "--abbrev",
            "--contains",
            "--no-contains",
            "--with",
            "--without",
            "--merged",
            "--no-merged",
        ],
        valued: &["--points-at", "--format", "--sort"],
        short_flags: "larvqi",
        ..NO_OPTIONS
    };
    ref_listing(rest, &SPEC, &["-l", "--list"])
}

/// Listing and verifying only.
pub(super) fn tag_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &[
            "--list",
            "--verify",
            "--ignore-case",
            "--omit-empty",
            "--no-color",
            "--no-column",
        ],
        optional: &[
            "--color",
            "--column",
            "--contains",
            "--no-contains",
            "--with",
            "--without",
            "--merged",
            "--no-merged",
        ],
        valued: &["--points-at", "--format", "--sort"],
        short_flags: "lvi",
        short_optional: "n",
        ..NO_OPTIONS
    };
    ref_listing(rest, &SPEC, &["-l", "--list", "-v", "--verify", "-n"])
}

/// The filters of git's ref listings (`branch`, `tag`): any of them puts the command in list
/// mode, where a positional is a pattern, not a ref to create.
const REF_FILTERS: &[&str] = &[
    "--contains",
    "--no-contains",
    "--with",
    "--without",
    "--merged",
    "--no-merged",
    "--points-at",
];

/// A ref listing (`branch`, `tag`) under `spec`: allowed when it names no ref, or when one of
/// the command's `list_mode` options or a ref filter says its positionals are patterns.
fn ref_listing(rest: &[String], spec: &Spec, list_mode: &[&str]) -> Result<(), &'static str> {
    match scan(rest, spec) {
        Some(s) if s.positionals.is_empty() || s.saw(list_mode) || s.saw(REF_FILTERS) => Ok(()),
        _ => Err(REFS),
    }
}

/// Reads only: `get`/`list`, the legacy `--get*`/`--list` actions, or a single key.
pub(super) fn config_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &[
            "--get",
            "--get-all",
            "--get-regexp",
            "--get-urlmatch",
            "--get-color",
            "--get-colorbool",
            "--list",
            "--show-origin",
            "--show-scope",
            "--name-only",
            "--null",
            "--global",
            "--system",
            "--local",
            "--worktree",
            "--bool",
            "--int",
            "--bool-or-int",
            "--path",
            "--expiry-date",
            "--includes",
            "--no-includes",
            "--fixed-value",
            "--no-type",
        ],
        valued: &["--file", "--blob", "--type", "--default"],
        short_flags: "lz",
        short_valued: "f",
        ..NO_OPTIONS
    };
    const GETS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "--list",
        "-l",
    ];
    match rest.first().map(String::as_str) {
        Some("get" | "list") => return Ok(()),
        Some("set" | "unset" | "rename-section" | "remove-section" | "edit") => return Err(CONFIG),
        _ => {}
    }
    match scan(rest, &SPEC) {
        Some(s) if s.saw(GETS) || s.positionals.len() <= 1 => Ok(()),
        _ => Err(CONFIG),
    }
}

/// `git clean` is allowed as a dry run only.
pub(super) fn clean_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &["--dry-run", "--quiet"],
        valued: &["--exclude"],
        short_flags: "ndxXq",
        short_valued: "e",
        ..NO_OPTIONS
    };
    match scan(rest, &SPEC) {
        Some(s) if s.saw(&["-n", "--dry-run"]) => Ok(()),
        _ => Err(DISCARD),
    }
}

/// Every fetch updates remote-tracking refs or FETCH_HEAD, except a dry run.
pub(super) fn fetch_rule(rest: &[String]) -> Result<(), &'static str> {
    /// Write refs, config or the shallow file even in a dry run (abbreviations count).
    const RISKY: &[&str] = &[
        "set-upstream",
        "write-commit-graph",
        "unshallow",
        "update-shallow",
        "depth",
        "deepen",
        "shallow-since",
        "shallow-exclude",
        "refetch",
        "update-head-ok",
    ];
    /// Take a separate value, which might itself read `--dry-run`.
    const VALUED: &[&str] = &[
        "upload-pack",
        "refmap",
        "server-option",
        "negotiation-tip",
        "filter",
        "jobs",
        "submodule-prefix",
        "recurse-submodules-default",
    ];
    let mut dry_run = false;
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = split_eq(long);
            if name == "dry-run" {
                dry_run = true;
            } else if name.len() >= 4 && "no-dry-run".starts_with(name) {
                dry_run = false;
            } else if abbreviates(name, RISKY) {
                return Err(REFS);
            } else if value.is_none() && abbreviates(name, VALUED) {
                i += 1;
            }
        } else if let Some(cluster) = short_cluster(arg) {
            for (at, c) in cluster.char_indices() {
                match c {
                    'u' => return Err(REFS),
                    'o' | 'j' => {
                        if at + c.len_utf8() == cluster.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
        i += 1;
    }
    if dry_run {
        Ok(())
    } else {
        Err(REFS)
    }
}

pub(super) fn hash_object_rule(rest: &[String]) -> Result<(), &'static str> {
    for arg in before_dashdash(rest) {
        if let Some(cluster) = short_cluster(arg) {
            for c in cluster.chars() {
                match c {
                    'w' => return Err(OBJECTS),
                    // -t <type>: the rest of the cluster (or the next argument) is the type.
                    't' => break,
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

pub(super) fn lfs_rule(rest: &[String]) -> Result<(), &'static str> {
    match rest.first().map(String::as_str) {
        Some("push" | "lock" | "unlock") => Err(PUBLISHES),
        Some("migrate") => Err(HISTORY),
        Some("pull" | "checkout" | "prune" | "dedup") => Err(DISCARD),
        Some("install" | "uninstall" | "update") => Err(CONFIG),
        _ => Ok(()),
    }
}

pub(super) fn notes_rule(rest: &[String]) -> Result<(), &'static str> {
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        if arg == "--ref" {
            i += 2;
        } else if arg.starts_with("--ref=") {
            i += 1;
        } else {
            break;
        }
    }
    match rest.get(i).map(String::as_str) {
        None | Some("list" | "show" | "get-ref") => Ok(()),
        Some(_) => Err(REFS),
    }
}

pub(super) fn reflog_rule(rest: &[String]) -> Result<(), &'static str> {
    match rest.first().map(String::as_str) {
        Some("expire" | "delete" | "drop" | "write") => Err(REFLOG),
        _ => Ok(()),
    }
}

pub(super) fn remote_rule(rest: &[String]) -> Result<(), &'static str> {
    let mut i = 0;
    while matches!(rest.get(i).map(String::as_str), Some("-v" | "--verbose")) {
        i += 1;
    }
    match rest.get(i).map(String::as_str) {
        None | Some("show" | "get-url") => Ok(()),
        Some("prune" | "update") => Err(REFS),
        Some(_) => Err(CONFIG),
    }
}

pub(super) fn replace_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &["--list"],
        valued: &["--format"],
        short_flags: "l",
        ..NO_OPTIONS
    };
    match scan(rest, &SPEC) {
        Some(s) if s.positionals.is_empty() || s.saw(&["-l", "--list"]) => Ok(()),
        _ => Err(REFS),
    }
}

pub(super) fn submodule_rule(rest: &[String]) -> Result<(), &'static str> {
    let mut i = 0;
    while matches!(
        rest.get(i).map(String::as_str),
        Some("-q" | "--quiet" | "--cached")
    ) {
        i += 1;
    }
    match rest.get(i).map(String::as_str) {
        None | Some("status" | "summary") => Ok(()),
        Some(_) => Err(SUBMODULES),
    }
}

/// Reading is one name; two names or `--delete` write.
pub(super) fn symbolic_ref_rule(rest: &[String]) -> Result<(), &'static str> {
    const SPEC: Spec = Spec {
        flags: &["--quiet", "--short", "--recurse", "--no-recurse"],
        short_flags: "q",
        ..NO_OPTIONS
    };
    match scan(rest, &SPEC) {
        Some(s) if s.positionals.len() <= 1 => Ok(()),
        _ => Err(REFS),
    }
}
