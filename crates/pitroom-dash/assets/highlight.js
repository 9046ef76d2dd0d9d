// A small tokenizer-based highlighter, written for Pitroom's dashboard (no library). It turns
// one line of code into [class, text] pairs, carrying block comments and multi-line strings to
// the next line through a state value. The page builds spans with textContent, so nothing here
// is ever parsed as HTML.
//
// Classes: k keyword, l literal, t type, f function, s string, c comment, n number,
// a attribute/decorator, v variable, p property/key, m macro, h heading.
(function () {
  "use strict";
  var words = function (s) { var o = Object.create(null); s.split(" ").forEach(function (w) { o[w] = 1; }); return o; };

  var CK = "auto break case char const continue default do double else enum extern float for goto if inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while";
  var LANGS = {
    rust: {
      kw: words("as async await break const continue crate dyn else enum extern fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait type unsafe use where while yield"),
      lit: words("true false None Some Ok Err"),
      line: ["//"], block: ["/*", "*/"], str: ['"'], rustChar: true, macro: true, attr: "#", types: true
    },
    python: {
      kw: words("and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case self"),
      lit: words("True False None"),
      line: ["#"], str: ['"""', "'''", '"', "'"], multi: { '"""': 1, "'''": 1 }, deco: true, types: true
    },
    js: {
      kw: words("async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch this throw try typeof var void while with yield type interface enum implements private protected public readonly abstract declare namespace as keyof satisfies"),
      lit: words("true false null undefined NaN Infinity"),
      line: ["//"], block: ["/*", "*/"], str: ['"', "'", "`"], multi: { "`": 1 }, deco: true, types: true
    },
    go: {
      kw: words("break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var"),
      lit: words("true false nil iota"),
      line: ["//"], block: ["/*", "*/"], str: ['"', "'", "`"], multi: { "`": 1 }, raw: { "`": 1 }, types: true
    },
    java: {
      kw: words("abstract assert boolean break byte case catch char class const continue default do double else enum extends final finally float for goto if implements import instanceof int interface long native new package private protected public return short static strictfp super switch synchronized this throw throws transient try void volatile while var record sealed permits yield"),
      lit: words("true false null"),
      line: ["//"], block: ["/*", "*/"], str: ['"""', '"', "'"], multi: { '"""': 1 }, deco: true, types: true
    },
    c: {
      kw: words(CK + " bool class namespace template typename public private protected virtual override new delete this using try catch throw operator friend constexpr nullptr noexcept auto explicit mutable static_cast dynamic_cast reinterpret_cast const_cast"),
      lit: words("true false NULL nullptr"),
      line: ["//"], block: ["/*", "*/"], str: ['"', "'"], pre: true, types: true
    },
    csharp: {
      kw: words("abstract as async await base bool break byte case catch char checked class const continue decimal default delegate do double else enum event explicit extern finally fixed float for foreach goto if implicit in int interface internal is lock long namespace new object operator out override params private protected public readonly record ref return sbyte sealed short sizeof stackalloc static string struct switch this throw try typeof uint ulong unchecked unsafe ushort using var virtual void volatile while get set init value yield"),
      lit: words("true false null"),
      line: ["//"], block: ["/*", "*/"], str: ['"', "'"], pre: true, types: true, attrBracket: true
    },
    ruby: {
      kw: words("alias and begin break case class def defined? do else elsif end ensure for if in module next not or redo rescue retry return self super then undef unless until when while yield require require_relative attr_accessor attr_reader puts"),
      lit: words("true false nil"),
      line: ["#"], str: ['"', "'"], symbols: true, rubyVars: true, types: true
    },
    shell: {
      kw: words("if then else elif fi for while until do done case esac in function select return exit export local readonly declare set unset shift source alias echo printf cd test trap eval exec"),
      lit: words("true false"),
      line: ["#"], hashAfterSpace: true, str: ['"', "'"], noEscape: { "'": 1 }, shellVars: true
    },
    json: { kw: {}, lit: words("true false null"), str: ['"'], keys: true },
    yaml: { kw: {}, lit: words("true false null yes no on off ~"), line: ["#"], hashAfterSpace: true, str: ['"', "'"], yamlKeys: true },
    toml: { kw: {}, lit: words("true false inf nan"), line: ["#"], str: ['"""', "'''", '"', "'"], multi: { '"""': 1, "'''": 1 }, tomlKeys: true },
    markdown: { markdown: true }
  };

  var EXT = {
    rs: "rust", py: "python", pyi: "python", js: "js", mjs: "js", cjs: "js", jsx: "js", ts: "js", tsx: "js", mts: "js", cts: "js",
    go: "go", java: "java", kt: "java", c: "c", h: "c", cc: "c", cpp: "c", cxx: "c", hpp: "c", hh: "c", hxx: "c", cs: "csharp",
    rb: "ruby", rake: "ruby", gemspec: "ruby", sh: "shell", bash: "shell", zsh: "shell", ksh: "shell", json: "json", jsonl: "json", json5: "json",
    yaml: "yaml", yml: "yaml", toml: "toml", md: "markdown", markdown: "markdown", mdx: "markdown"
  };
  var NAMES = { Makefile: "shell", Dockerfile: "shell", Gemfile: "ruby", Rakefile: "ruby", "Cargo.lock": "toml", ".bashrc": "shell", ".profile": "shell" };
  var ALIAS = { rs: "rust", py: "python", javascript: "js", typescript: "js", ts: "js", tsx: "js", jsx: "js", golang: "go", cpp: "c", "c++": "c", cc: "c", h: "c", cs: "csharp", "c#": "csharp", rb: "ruby", sh: "shell", bash: "shell", zsh: "shell", console: "shell", shellsession: "shell", yml: "yaml", md: "markdown", kotlin: "java" };

  function langFor(path) {
    if (!path) return null;
    var base = path.split("/").pop();
    if (NAMES[base]) return NAMES[base];
    var dot = base.lastIndexOf(".");
    return dot >= 0 ? EXT[base.slice(dot + 1).toLowerCase()] || null : null;
  }

  function langNamed(name) {
    if (!name) return null;
    name = String(name).toLowerCase();
    return LANGS[name] ? name : ALIAS[name] || null;
  }

  var ID_START = /[A-Za-z_$]/;
  var ID = /[\w$]/;
  var NUM = /^(?:0[xX][\da-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)[A-Za-z\d_]*/;

  // Reads a string that opens at `i` with quote `q`; returns [end, closed].
  function readString(text, i, q, escapes) {
    var j = i + q.length;
    while (j < text.length) {
      if (escapes && text[j] === "\\") { j += 2; continue; }
      if (text.startsWith(q, j)) return [j + q.length, true];
      j++;
    }
    return [text.length, false];
  }

  function markdownLine(text, state) {
    if (state && state.fence) {
      if (/^\s*(```|~~~)/.test(text)) return { tokens: [["s", text]], state: null };
      return { tokens: [["s", text]], state: state };
    }
    if (/^\s*(```|~~~)/.test(text)) return { tokens: [["s", text]], state: { fence: true } };
    if (/^#{1,6}\s/.test(text)) return { tokens: [["h", text]], state: null };
    var out = [];
    var m = /^(\s*(?:[-*+]|\d+[.)])\s+|\s*>\s?)/.exec(text);
    var i = 0;
    if (m) { out.push(["k", m[0]]); i = m[0].length; }
    var re = /(`[^`]+`)|(\*\*[^*]+\*\*|__[^_]+__)|(\[[^\]]+\]\([^)]+\))/g;
    re.lastIndex = i;
    var r;
    while ((r = re.exec(text))) {
      if (r.index > i) out.push(["", text.slice(i, r.index)]);
      out.push([r[1] ? "s" : r[2] ? "k" : "a", r[0]]);
      i = r.index + r[0].length;
    }
    if (i < text.length) out.push(["", text.slice(i)]);
    return { tokens: out, state: null };
  }

  // One line of `lang`; `state` is what the previous line left open (null: nothing).
  function line(langName, text, state) {
    var L = LANGS[langName];
    if (!L) return { tokens: [["", text]], state: null };
    if (L.markdown) return markdownLine(text, state);
    var out = [];
    var plain = "";
    var push = function (cls, s) {
      if (!s) return;
      if (!cls) { plain += s; return; }
      if (plain) { out.push(["", plain]); plain = ""; }
      out.push([cls, s]);
    };
    var i = 0;
    var n = text.length;
    if (state && state.block) {
      var e = text.indexOf(L.block[1]);
      if (e < 0) return { tokens: [["c", text]], state: state };
      push("c", text.slice(0, e + L.block[1].length));
      i = e + L.block[1].length;
      state = null;
    } else if (state && state.str) {
      var close = text.indexOf(state.str);
      if (!(L.raw && L.raw[state.str])) {
        // The first closing quote that is not escaped.
        close = -1;
        for (var k = 0; k < n; k++) {
          if (text[k] === "\\") { k++; continue; }
          if (text.startsWith(state.str, k)) { close = k; break; }
        }
      }
      if (close < 0) return { tokens: [["s", text]], state: state };
      push("s", text.slice(0, close + state.str.length));
      i = close + state.str.length;
      state = null;
    }
    if (L.pre && /^\s*#\s*\w+/.test(text) && i === 0) {
      var pm = /^\s*#\s*\w+/.exec(text);
      push("a", pm[0]);
      i = pm[0].length;
    }
    if (L.yamlKeys && i === 0) {
      var ym = /^(\s*(?:-\s+)?)([^\s#:'"][^:#]*?|"[^"]*"|'[^']*')(\s*:)(?=\s|$)/.exec(text);
      if (ym) { push("", ym[1]); push("p", ym[2]); push("", ym[3]); i = ym[0].length; }
      else if (/^\s*(---|\.\.\.)\s*$/.test(text)) { push("k", text); i = n; }
    }
    if (L.tomlKeys && i === 0) {
      var th = /^\s*\[\[?[^\]]*\]\]?/.exec(text);
      var tk = /^(\s*)([A-Za-z0-9_.\-"' ]+?)(\s*=)/.exec(text);
      if (th) { push("t", th[0]); i = th[0].length; }
      else if (tk) { push("", tk[1]); push("p", tk[2]); push("", tk[3]); i = tk[0].length; }
    }
    while (i < n) {
      var ch = text[i];
      var rest = text.slice(i);
      var lc = L.line && L.line.find(function (t) { return rest.startsWith(t); });
      if (lc && (!L.hashAfterSpace || i === 0 || /\s/.test(text[i - 1]))) { push("c", rest); break; }
      if (L.block && rest.startsWith(L.block[0])) {
        var be = text.indexOf(L.block[1], i + L.block[0].length);
        if (be < 0) { push("c", rest); return { tokens: flush(), state: { block: true } }; }
        push("c", text.slice(i, be + L.block[1].length));
        i = be + L.block[1].length;
        continue;
      }
      if (L.rustChar && ch === "'") {
        var cm = /^'(?:\\.[^']*|[^\\'])'/.exec(rest);
        if (cm) { push("s", cm[0]); i += cm[0].length; continue; }
        var lt = /^'[A-Za-z_]\w*/.exec(rest);
        if (lt) { push("a", lt[0]); i += lt[0].length; continue; }
      }
      var q = L.str && L.str.find(function (t) { return rest.startsWith(t); });
      if (q) {
        var esc = !(L.noEscape && L.noEscape[q]) && !(L.raw && L.raw[q]);
        var rs = readString(text, i, q, esc);
        var cls = "s";
        if (L.keys && /^\s*:/.test(text.slice(rs[0]))) cls = "p";
        push(cls, text.slice(i, rs[0]));
        i = rs[0];
        if (!rs[1] && L.multi && L.multi[q]) return { tokens: flush(), state: { str: q } };
        continue;
      }
      if (/\d/.test(ch) && (i === 0 || !ID.test(text[i - 1]))) {
        var nm = NUM.exec(rest);
        if (nm) { push("n", nm[0]); i += nm[0].length; continue; }
      }
      if (L.shellVars && ch === "$") {
        var sv = /^\$(?:\{[^}]*\}|[A-Za-z_]\w*|[0-9@#?$!*-])/.exec(rest);
        if (sv) { push("v", sv[0]); i += sv[0].length; continue; }
      }
      if (L.rubyVars && (ch === "@" || ch === "$")) {
        var rv = /^[@$]{1,2}[A-Za-z_]\w*/.exec(rest);
        if (rv) { push("v", rv[0]); i += rv[0].length; continue; }
      }
      if (L.symbols && ch === ":" && /^:[A-Za-z_]\w*[?!]?/.test(rest) && (i === 0 || !/[\w:]/.test(text[i - 1]))) {
        var sym = /^:[A-Za-z_]\w*[?!]?/.exec(rest)[0];
        push("l", sym); i += sym.length; continue;
      }
      if (L.deco && ch === "@") {
        var dm = /^@[A-Za-z_][\w.]*/.exec(rest);
        if (dm) { push("a", dm[0]); i += dm[0].length; continue; }
      }
      if (L.attr && (rest.startsWith("#[") || rest.startsWith("#!["))) {
        var am = /^#!?\[[^\]]*\]?/.exec(rest);
        push("a", am[0]); i += am[0].length; continue;
      }
      if (ID_START.test(ch)) {
        var w = /^[A-Za-z_$][\w$]*[?!]?/.exec(rest)[0];
        if (!L.symbols) w = w.replace(/[?!]$/, "");
        var after = text.slice(i + w.length);
        var wcls = "";
        if (L.kw[w]) wcls = "k";
        else if (L.lit[w]) wcls = "l";
        else if (L.macro && after[0] === "!" && after[1] !== "=") { wcls = "m"; w += "!"; }
        else if (/^\s*\(/.test(after)) wcls = "f";
        else if (L.types && /^[A-Z][a-z0-9]/.test(w)) wcls = "t";
        push(wcls, w);
        i += w.length;
        continue;
      }
      push("", ch);
      i++;
    }
    return { tokens: flush(), state: null };

    function flush() {
      if (plain) { out.push(["", plain]); plain = ""; }
      return out;
    }
  }

  window.PitroomHighlight = { langFor: langFor, langNamed: langNamed, line: line, languages: Object.keys(LANGS) };
})();
