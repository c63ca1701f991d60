// lexsem explore: the export form posts to the chosen kind; "Select page" ticks every row;
// the count of picked rows is shown; "/" focuses the text search.
(function () {
  var form = document.getElementById("export");
  if (!form) return;
  var kind = document.getElementById("kind");
  var boxes = function () { return form.querySelectorAll('input[name="sel"]'); };
  var picked = document.getElementById("picked");
  function count() {
    var n = 0;
    boxes().forEach(function (b) { if (b.checked) n++; });
    picked.textContent = n ? n + " picked" : "none picked: the whole slice";
  }
  form.addEventListener("change", count);
  document.getElementById("select-page").addEventListener("click", function () {
    var all = true;
    boxes().forEach(function (b) { all = all && b.checked; });
    boxes().forEach(function (b) { b.checked = !all; });
    count();
  });
  form.addEventListener("submit", function () { form.action = "/export/" + kind.value; });
  document.addEventListener("keydown", function (e) {
    var t = e.target.tagName;
    if (e.key === "/" && t !== "INPUT" && t !== "SELECT" && t !== "TEXTAREA") {
      e.preventDefault();
      document.getElementById("q").focus();
    }
  });
})();
