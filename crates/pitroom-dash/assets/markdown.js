// A small Markdown renderer for workers' answers, written for Pitroom's dashboard. It builds DOM
// nodes directly (text goes in through textContent), so an answer can never inject markup or
// script: that is the sanitising. Links work only for http(s), mailto and in-page anchors;
// images are never loaded (a worker's answer must not make the page fetch anything), they show
// as their text.
(function () {
  "use strict";

  function el(tag, cls) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }

  function safeHref(url) {
    url = url.trim();
    return /^(https?:|mailto:|#)/i.test(url) ? url : null;
  }

  // Code with highlighting when the language is known.
  function codeBlock(text, lang) {
    var pre = el("pre", "code");
    var code = el("code");
    var H = window.PitroomHighlight;
    var name = H && H.langNamed(lang);
    var state = null;
    text.split("\n").forEach(function (line, i) {
      if (i > 0) code.append("\n");
      if (!name) { code.append(line); return; }
      var r = H.line(name, line, state);
      state = r.state;
      r.tokens.forEach(function (t) {
        if (!t[0]) { code.append(t[1]); return; }
        var s = el("span", "hl-" + t[0]);
        s.textContent = t[1];
        code.append(s);
      });
    });
    pre.append(code);
    return pre;
  }

  var INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|!\[([^\]]*)\]\(([^)\s]*)[^)]*\)|\[([^\]]+)\]\(([^)\s]+)[^)]*\)|<(https?:\/\/[^>\s]+)>|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|~~([\s\S]+?)~~|(?:^|(?<=[\s(]))\*(?!\s)([\s\S]+?)\*|(?:^|(?<=[\s(]))_(?!\s)([\s\S]+?)_(?![\w])/g;

  function inline(text, parent) {
    var i = 0;
    var m;
    // A regex of its own per call: the nested calls below would move a shared one's lastIndex.
    var re = new RegExp(INLINE.source, "g");
    while ((m = re.exec(text))) {
      if (m.index > i) parent.append(text.slice(i, m.index));
      var node;
      if (m[1]) { node = el("code"); node.textContent = m[2].replace(/^ (.*) $/, "$1"); }
      else if (m[3] !== undefined && m[0][0] === "!") { node = el("span", "md-image"); node.textContent = "[image: " + (m[3] || m[4]) + "]"; }
      else if (m[5]) {
        var href = safeHref(m[6]);
        if (href) {
          node = el("a");
          node.href = href;
          node.rel = "noopener noreferrer";
          if (href[0] !== "#") node.target = "_blank";
          inline(m[5], node);
        } else { node = el("span"); inline(m[5], node); }
      }
      else if (m[7]) { node = el("a"); node.href = m[7]; node.rel = "noopener noreferrer"; node.target = "_blank"; node.textContent = m[7]; }
      else if (m[8] || m[9]) { node = el("strong"); inline(m[8] || m[9], node); }
      else if (m[10]) { node = el("del"); inline(m[10], node); }
      else if (m[11] || m[12]) { node = el("em"); inline(m[11] || m[12], node); }
      parent.append(node);
      i = m.index + m[0].length;
    }
    if (i < text.length) parent.append(text.slice(i));
  }

  var FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w+#.-]*)/;
  var HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  var HR = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
  var QUOTE = /^\s{0,3}>\s?/;
  var ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  var TABLE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

  function cells(row) {
    return row.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map(function (c) { return c.trim(); });
  }

  function startsBlock(line, next) {
    return FENCE.test(line) || HEADING.test(line) || HR.test(line) || QUOTE.test(line) || ITEM.test(line) ||
      (line.indexOf("|") >= 0 && next !== undefined && TABLE_RULE.test(next));
  }

  function blocks(lines, parent) {
    var i = 0;
    while (i < lines.length) {
      var line = lines[i];
      var m;
      if (!line.trim()) { i++; continue; }
      if ((m = FENCE.exec(line))) {
        var fence = m[2];
        var body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
        i++;
        parent.append(codeBlock(body.join("\n"), m[3]));
        continue;
      }
      if ((m = HEADING.exec(line))) {
        // The page's own headings are h1/h2; an answer's start at h3.
        var h = el("h" + Math.min(6, m[1].length + 2));
        inline(m[2], h);
        parent.append(h);
        i++;
        continue;
      }
      if (HR.test(line)) { parent.append(el("hr")); i++; continue; }
      if (QUOTE.test(line)) {
        var quoted = [];
        while (i < lines.length && lines[i].trim() && QUOTE.test(lines[i])) quoted.push(lines[i++].replace(QUOTE, ""));
        var bq = el("blockquote");
        blocks(quoted, bq);
        parent.append(bq);
        continue;
      }
      if (line.indexOf("|") >= 0 && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
        var wrap = el("div", "table-wrap");
        var table = el("table");
        var head = el("tr");
        cells(line).forEach(function (c) { var th = el("th"); inline(c, th); head.append(th); });
        var thead = el("thead"); thead.append(head); table.append(thead);
        var tbody = el("tbody");
        i += 2;
        while (i < lines.length && lines[i].indexOf("|") >= 0 && lines[i].trim()) {
          var tr = el("tr");
          cells(lines[i++]).forEach(function (c) { var td = el("td"); inline(c, td); tr.append(td); });
          tbody.append(tr);
        }
        table.append(tbody);
        wrap.append(table);
        parent.append(wrap);
        continue;
      }
      if ((m = ITEM.exec(line))) {
        i = list(lines, i, parent);
        continue;
      }
      var para = [];
      while (i < lines.length && lines[i].trim() && !(para.length && startsBlock(lines[i], lines[i + 1]))) para.push(lines[i++].trim());
      // Workers answer in lines (SUMMARY:, DETAILS:, …): a line break stays one.
      var p = el("p");
      para.forEach(function (text, k) {
        if (k > 0) p.append(el("br"));
        inline(text, p);
      });
      parent.append(p);
    }
  }

  // A list from line `i`; items indented deeper belong to the item above. Returns the next line.
  function list(lines, i, parent) {
    var first = ITEM.exec(lines[i]);
    var indent = first[1].length;
    var ordered = /\d/.test(first[2]);
    var node = el(ordered ? "ol" : "ul");
    if (ordered && parseInt(first[2], 10) !== 1) node.start = parseInt(first[2], 10);
    while (i < lines.length) {
      var m = ITEM.exec(lines[i]);
      if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
      var body = [m[3]];
      i++;
      while (i < lines.length) {
        var l = lines[i];
        var sub = ITEM.exec(l);
        if (!l.trim()) {
          if (i + 1 < lines.length && /^\s+/.test(lines[i + 1]) && (/^\s*$/.test(lines[i + 1]) === false) && (lines[i + 1].match(/^\s*/)[0].length > indent)) { body.push(""); i++; continue; }
          break;
        }
        if (sub && sub[1].length <= indent) break;
        if (!sub && !/^\s/.test(l) && startsBlock(l, lines[i + 1])) break;
        body.push(l.replace(new RegExp("^\\s{0," + (indent + 4) + "}"), ""));
        i++;
      }
      var li = el("li");
      if (body.length === 1) inline(body[0], li);
      else blocks(body, li);
      node.append(li);
    }
    parent.append(node);
    return i;
  }

  function render(text) {
    var frag = document.createDocumentFragment();
    blocks(String(text || "").replace(/\r\n?/g, "\n").split("\n"), frag);
    return frag;
  }

  window.PitroomMarkdown = { render: render, codeBlock: codeBlock };
})();
