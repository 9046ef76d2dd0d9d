// Applies the chosen theme before the page paints (no flash). Without a choice, the system's
// preference decides through CSS alone.
(function () {
  try {
    var t = localStorage.getItem("pitroom-theme");
    if (t === "light" || t === "dark") document.documentElement.setAttribute("data-theme", t);
  } catch (e) { /* storage may be off in an embedded pane */ }
})();
