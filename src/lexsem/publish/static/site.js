// lexsem publish: sort a table by clicking its header; filter the board's rows. No data is
// fetched: the page holds everything (it opens from file://). Without this script the pages
// are the same tables, unsorted by the reader and unfiltered.
"use strict";
(function () {
  document.documentElement.classList.add("js");
  function key(td, numeric) {
    if (!td) return null;
    var raw = td.hasAttribute("data-sort") ? td.getAttribute("data-sort") : td.textContent;
    if (!numeric) return raw.trim().toLowerCase();
    var v = parseFloat(raw);
    return isNaN(v) ? null : v;
  }
  function sortBy(th) {
    var table = th.closest("table");
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.getAttribute("data-type") === "num";
    // the first click: the header's own direction (data-first), else numbers high to low and
    // text A to Z; the next click reverses
    var first = th.getAttribute("data-first") || (numeric ? "desc" : "asc");
    var desc;
    if (th.classList.contains("sorted-desc")) desc = false;
    else if (th.classList.contains("sorted-asc")) desc = true;
    else desc = first === "desc";
    table.querySelectorAll("th").forEach(function (h) {
      h.classList.remove("sorted-asc", "sorted-desc");
      h.removeAttribute("aria-sort");
    });
    th.classList.add(desc ? "sorted-desc" : "sorted-asc");
    th.setAttribute("aria-sort", desc ? "descending" : "ascending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var keys = new Map(rows.map(function (r) { return [r, key(r.cells[col], numeric)]; }));
    rows.sort(function (a, b) {
      var x = keys.get(a), y = keys.get(b);
      if (x === null || x === "") return y === null || y === "" ? 0 : 1;  // empty cells last
      if (y === null || y === "") return -1;
      var c = x < y ? -1 : x > y ? 1 : 0;
      return desc ? -c : c;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r); });
    body.appendChild(frag);
  }
  document.querySelectorAll("table.board thead th").forEach(function (th) {
    th.tabIndex = 0;
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(th); }
    });
  });
  var selects = document.querySelectorAll("select[data-filter]");
  var boardRows = document.querySelectorAll("table.board tbody tr[data-family]");
  function applyFilters() {
    var wanted = [];
    selects.forEach(function (s) { if (s.value) wanted.push(["data-" + s.getAttribute("data-filter"), s.value]); });
    boardRows.forEach(function (tr) {
      var show = wanted.every(function (w) { return tr.getAttribute(w[0]) === w[1]; });
      tr.classList.toggle("hidden", !show);
    });
  }
  selects.forEach(function (s) { s.addEventListener("change", applyFilters); });
  applyFilters();  // a value the browser kept from before a reload
})();
