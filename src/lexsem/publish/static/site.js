// lexsem publish: sort a table by clicking its header; filter the board's rows. No data is
// fetched: the page holds everything (it opens from file://).
"use strict";
(function () {
  function key(td, numeric) {
    if (!td) return numeric ? -Infinity : "";
    var raw = td.hasAttribute("data-sort") ? td.getAttribute("data-sort") : td.textContent;
    if (!numeric) return raw.trim().toLowerCase();
    var v = parseFloat(raw);
    return isNaN(v) ? -Infinity : v;
  }
  function sortBy(th) {
    var table = th.closest("table");
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.getAttribute("data-type") === "num";
    var desc = !th.classList.contains("sorted-desc");
    if (th.getAttribute("data-type") === "num" && th.textContent.trim() === "Rank") desc = th.classList.contains("sorted-asc");
    table.querySelectorAll("th").forEach(function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
    th.classList.add(desc ? "sorted-desc" : "sorted-asc");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col], numeric), y = key(b.cells[col], numeric);
      var c = x < y ? -1 : x > y ? 1 : 0;
      return desc ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("table.board th").forEach(function (th) {
    th.addEventListener("click", function () { sortBy(th); });
  });
  var selects = document.querySelectorAll("select[data-filter]");
  function applyFilters() {
    var wanted = {};
    selects.forEach(function (s) { if (s.value) wanted[s.getAttribute("data-filter")] = s.value; });
    document.querySelectorAll("table.board tbody tr").forEach(function (tr) {
      var show = Object.keys(wanted).every(function (k) { return tr.getAttribute("data-" + k) === wanted[k]; });
      tr.classList.toggle("hidden", !show);
    });
  }
  selects.forEach(function (s) { s.addEventListener("change", applyFilters); });
})();
