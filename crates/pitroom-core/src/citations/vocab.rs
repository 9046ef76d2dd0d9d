//! The vocabulary of citations: which names are files, which words define, and the limits.

/// File extensions that make a bare `name.ext:12` a citation (compared in lower case).
#[rustfmt::skip]
pub(super) const KNOWN_EXTENSIONS: &[&str] = &[
    "rs", "ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "py", "pyi", "pyx", "go", "java",
    "kt", "kts", "rb", "php", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "cs", "fs", "fsx",
    "swift", "m", "mm", "scala", "sc", "sh", "bash", "zsh", "fish", "ps1", "psm1", "bat", "cmd",
    "sql", "html", "htm", "css", "scss", "sass", "less", "vue", "svelte", "astro", "json", "json5",
    "jsonc", "yaml", "yml", "toml", "ini", "cfg", "conf", "xml", "xsd", "plist", "md", "mdx",
    "markdown", "rst", "adoc", "txt", "lock", "gradle", "properties", "proto", "graphql", "gql",
    "tf", "tfvars", "hcl", "lua", "dart", "ex", "exs", "erl", "hrl", "hs", "lhs", "ml", "mli",
    "nix", "zig", "r", "jl", "pl", "pm", "rkt", "clj", "cljs", "cljc", "edn", "el", "elm", "nim",
    "cr", "sol", "asm", "wat", "cmake", "mk", "bazel", "bzl", "gn", "gni", "ipynb", "csv", "tsv",
    "diff", "patch", "pug", "hbs", "ejs", "erb", "j2", "jinja", "twig", "liquid", "tmpl", "tpl",
    "mustache", "groovy", "vb", "xaml", "csproj", "sln", "fsproj", "vcxproj", "cu", "cuh", "metal",
    "glsl", "hlsl", "wgsl", "frag", "vert", "prisma", "svg",
];

/// File names cited as they are, without a known extension (also as `Name.suffix`).
#[rustfmt::skip]
pub(super) const KNOWN_NAMES: &[&str] = &[
    "go.mod", "go.sum", "go.work", "Makefile", "makefile", "GNUmakefile", "Dockerfile",
    "Containerfile", "Rakefile", "Gemfile", "Procfile", "Justfile", "justfile", "Vagrantfile",
    "Brewfile", "Podfile", "Jenkinsfile", "Caddyfile", "Earthfile", "Tiltfile", "Pipfile",
    "Snakefile", "Guardfile", "Capfile", "Berksfile", "Fastfile", "Dangerfile", "BUILD",
    "WORKSPACE", "LICENSE", "LICENCE", "README", "CHANGELOG", "CONTRIBUTING", "AUTHORS", "NOTICE",
    "COPYING", "CODEOWNERS", "OWNERS", "VERSION",
];

/// Dot files cited by name (`.env:3`, `.gitignore:2`, `.env.local:1`), without the dot.
#[rustfmt::skip]
pub(super) const DOT_FILES: &[&str] = &[
    "env", "envrc", "gitignore", "gitattributes", "gitmodules", "dockerignore", "editorconfig",
    "npmrc", "nvmrc", "yarnrc", "prettierrc", "eslintrc", "babelrc", "stylelintrc",
    "browserslistrc", "mocharc", "swcrc", "bashrc", "zshrc", "profile", "bash_profile", "vimrc",
    "htaccess", "tool-versions", "python-version", "node-version", "ruby-version", "clang-format",
    "clang-tidy",
];

/// Names that look like files but are products (`Node.js:20` is a version, not a line).
#[rustfmt::skip]
pub(super) const PRODUCT_NAMES: &[&str] = &[
    "node.js", "next.js", "nuxt.js", "vue.js", "react.js", "express.js", "three.js", "d3.js",
    "chart.js", "ember.js", "backbone.js", "angular.js", "socket.io", "deno.js", "bun.js",
];

/// Top-level domains that mark a first path segment as a host (`example.com/a.rs:3`).
#[rustfmt::skip]
pub(super) const HOST_SUFFIXES: &[&str] = &[
    "com", "org", "net", "io", "dev", "app", "ai", "co", "gov", "edu", "info", "biz", "me", "us",
    "uk", "de", "fr", "jp", "cn", "ru", "xyz", "cloud", "local", "localhost", "internal",
];

/// Directories the index never enters (besides every hidden directory).
#[rustfmt::skip]
pub(super) const SKIPPED_DIRS: &[&str] = &[
    ".git", "node_modules", "target", "dist", "build", "out", "vendor", ".venv", "venv",
    "__pycache__", ".next", ".cache",
];

/// Words that, right before a name, make the line a definition of it.
#[rustfmt::skip]
pub(super) const DEF_KEYWORDS: &[&str] = &[
    "fn", "def", "function", "function*", "func", "fun", "class", "struct", "enum", "trait", "impl",
    "interface", "type", "typealias", "const", "let", "var", "val", "mod", "module", "macro_rules!",
    "union", "protocol", "object", "record", "namespace", "sub", "defmodule", "defp", "defmacro",
    "static", "extension", "actor",
];

/// Words that may precede the name inside a backticked identifier (`pub fn parse`).
#[rustfmt::skip]
pub(super) const SYMBOL_PREFIX_WORDS: &[&str] = &[
    "pub", "async", "unsafe", "extern", "export", "default", "public", "private", "protected",
    "internal", "abstract", "final", "override", "virtual", "inline", "static", "fn", "def",
    "function", "func", "fun", "class", "struct", "enum", "trait", "impl", "interface", "type",
    "const", "let", "var", "val", "mod", "module", "macro", "union", "protocol", "object", "record",
    "namespace", "sub",
];

/// First words of lines that call rather than define (`return parse(x)`).
pub(super) const CONTROL_WORDS: &[&str] = &[
    "return", "if", "else", "elif", "while", "for", "await", "yield", "throw", "raise", "new",
    "case", "print", "echo", "assert", "del", "not", "and", "or", "match", "when", "unless",
    "until", "with", "do", "go", "defer",
];

/// Words that, ending the gap between an identifier and the next reference, tie them together
/// (`parse` at src/a.rs:3).
pub(super) const LINKING_WORDS: &[&str] = &["at", "in", "on", "from", "see"];

/// How far back (in chars) the URL check looks for the start of a reference's word.
pub(super) const MAX_WORD_LOOKBACK: usize = 2048;
/// How many words may separate an identifier from its reference.
pub(super) const MAX_GAP_WORDS: usize = 4;
/// How far (in lines) around the range an identifier may appear.
pub(super) const SYMBOL_SLACK: u32 = 3;
/// How far above the range a definition may enclose it.
pub(super) const DEFINITION_REACH: u32 = 200;
/// Stop indexing after this many files.
pub(super) const MAX_INDEXED_FILES: usize = 200_000;
/// Files larger than this only get their lines counted, by streaming.
pub(super) const STREAM_ABOVE_BYTES: u64 = 20 * 1024 * 1024;
