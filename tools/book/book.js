// book.js - the web book's few behaviours; the text, math and figures read
// without it. Dark mode toggle (kept in localStorage), the ←/→ keys, hints
// opened for printing, and the search box over window.BOOK_INDEX.
(function () {
  "use strict";
  var root = document.documentElement;

  // Theme: the toggle flips what is shown now and remembers it.
  var toggle = document.getElementById("theme");
  if (toggle) toggle.addEventListener("click", function () {
    var dark = getComputedStyle(root).colorScheme.indexOf("dark") >= 0;
    root.dataset.theme = dark ? "light" : "dark";
    try { localStorage.setItem("dtlab-theme", root.dataset.theme); } catch (e) {}
  });

  // ←/→: the previous and next chapter, unless typing.
  document.addEventListener("keydown", function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    var t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return;
    var rel = ev.key === "ArrowLeft" ? "prev" : ev.key === "ArrowRight" ? "next" : null;
    var a = rel && document.querySelector("header a[rel=" + rel + "]");
    if (a) location.href = a.href;
  });

  // Printing opens every hint; closing the dialog restores those closed.
  var opened = [];
  window.addEventListener("beforeprint", function () {
    opened = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) {
      return !d.open;
    });
    opened.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (d) { d.open = false; });
    opened = [];
  });

  // Search: every word of the query must occur in a section; sections rank
  // by how often the words occur, a word in the title counting ten times.
  var box = document.getElementById("search");
  var list = document.getElementById("results");
  var base = (document.querySelector("header .home") || {}).getAttribute
    ? document.querySelector("header .home").getAttribute("href").replace(/index\.html$/, "") : "";
  function count(hay, w) {
    var n = 0, i = hay.indexOf(w);
    while (i >= 0) { n++; i = hay.indexOf(w, i + w.length); }
    return n;
  }
  function escape(s) {
    return s.replace(/[&<>"]/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]; });
  }
  function search(q) {
    var words = q.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 1; });
    if (!words.length || !window.BOOK_INDEX) return [];
    var hits = [];
    window.BOOK_INDEX.forEach(function (e) {
      var x = e.x.toLowerCase(), t = e.t.toLowerCase(), score = 0;
      for (var i = 0; i < words.length; i++) {
        var n = count(x, words[i]) + 10 * count(t, words[i]);
        if (!n) return;
        score += n;
      }
      hits.push({ e: e, score: score, at: x.indexOf(words[0]) });
    });
    hits.sort(function (a, b) { return b.score - a.score; });
    return hits.slice(0, 12);
  }
  if (box && list) box.addEventListener("input", function () {
    var hits = search(box.value);
    list.innerHTML = "";
    hits.forEach(function (h) {
      var li = document.createElement("li");
      var from = Math.max(0, h.at - 60);
      var snip = escape(h.e.x.slice(from, from + 160));
      var w = box.value.trim().split(/\s+/)[0].replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      snip = snip.replace(new RegExp("(" + w + ")", "ig"), "<mark>$1</mark>");
      li.innerHTML = '<a href="' + base + h.e.p + (h.e.a ? "#" + h.e.a : "") + '">' + escape(h.e.t) +
        '</a><span class="snippet">…' + snip + "…</span>";
      list.appendChild(li);
    });
    if (!hits.length && box.value.trim()) list.innerHTML = "<li>no section has every word</li>";
    list.hidden = !box.value.trim();
  });
  if (box) box.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") { box.value = ""; list.hidden = true; }
    if (ev.key === "Enter") { var a = list.querySelector("a"); if (a) location.href = a.href; }
  });
})();
