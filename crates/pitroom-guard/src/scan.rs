//! Option scanning for subcommands.

/// The read-only options a subcommand accepts. Anything else (including abbreviations and
/// negations not listed) makes [`scan`] fail, which the rules treat as a write.
pub(super) struct Spec {
    /// Long options without a value.
    pub(super) flags: &'static [&'static str],
    /// Long options with an optional attached value (`--color`, `--color=always`).
    pub(super) optional: &'static [&'static str],
    /// Long options with a required value, attached or the next argument.
    pub(super) valued: &'static [&'static str],
    /// Short options without a value, combinable (`-av`).
    pub(super) short_flags: &'static str,
    /// Short options with a value: the rest of the cluster, else the next argument.
    pub(super) short_valued: &'static str,
    /// Short options with an optional value in the rest of the cluster (`-n5`).
    pub(super) short_optional: &'static str,
}

pub(super) const NO_OPTIONS: Spec = Spec {
    flags: &[],
    optional: &[],
    valued: &[],
    short_flags: "",
    short_valued: "",
    short_optional: "",
};

pub(super) struct Scan<'a> {
    pub(super) positionals: Vec<&'a str>,
    /// Options seen, normalised: `--name` for long ones, `-c` for each short one.
    pub(super) seen: Vec<String>,
}

impl Scan<'_> {
    pub(super) fn saw(&self, options: &[&str]) -> bool {
        self.seen.iter().any(|s| options.contains(&s.as_str()))
    }
}

pub(super) fn scan<'a>(args: &'a [String], spec: &Spec) -> Option<Scan<'a>> {
    let mut out = Scan {
        positionals: Vec::new(),
        seen: Vec::new(),
    };
    let mut dashdash = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let arg = arg.as_str();
        if dashdash || arg == "-" || !arg.starts_with('-') {
            out.positionals.push(arg);
        } else if arg == "--" {
            dashdash = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = split_eq(long);
            let option = format!("--{name}");
            let option_ref = option.as_str();
            if spec.valued.contains(&option_ref) {
                if value.is_none() {
                    i += 1;
                }
            } else if !(spec.optional.contains(&option_ref)
                || (spec.flags.contains(&option_ref) && value.is_none()))
            {
                return None;
            }
            out.seen.push(option);
        } else {
            let cluster = arg.strip_prefix('-').unwrap_or(arg);
            for (at, c) in cluster.char_indices() {
                out.seen.push(format!("-{c}"));
                if spec.short_flags.contains(c) {
                    continue;
                }
                if spec.short_valued.contains(c) {
                    if at + c.len_utf8() == cluster.len() {
                        i += 1;
                    }
                    break;
                }
                if spec.short_optional.contains(c) {
                    break;
                }
                return None;
            }
        }
        i += 1;
    }
    Some(out)
}

pub(super) fn before_dashdash(args: &[String]) -> impl Iterator<Item = &str> {
    args.iter()
        .map(String::as_str)
        .take_while(|arg| *arg != "--")
}

/// The letters of a short-option cluster (`-abc` → `abc`), if `arg` is one.
pub(super) fn short_cluster(arg: &str) -> Option<&str> {
    if arg.starts_with("--") {
        return None;
    }
    arg.strip_prefix('-').filter(|cluster| !cluster.is_empty())
}

/// `name=value` → (`name`, Some(`value`)).
pub(super) fn split_eq(text: &str) -> (&str, Option<&str>) {
    match text.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (text, None),
    }
}

/// Whether `name` is one of `options` or a prefix of one (git accepts unique abbreviations of
/// long options).
pub(super) fn abbreviates(name: &str, options: &[&str]) -> bool {
    !name.is_empty() && options.iter().any(|option| option.starts_with(name))
}
