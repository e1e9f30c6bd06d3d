(function () {
  function key(row, index) {
    var cell = row.cells[index];
    if (!cell || cell.classList.contains("missing")) { return null; }
    var raw = cell.getAttribute("data-sort");
    return raw !== null ? parseFloat(raw) : cell.textContent;
  }
  function compare(a, b) {
    if (a === null || b === null) { return a === b ? 0 : (a === null ? 1 : -1); }
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    return String(a).localeCompare(String(b), undefined, {numeric: true});
  }
  function sortBy(th) {
    var table = th.closest("table");
    var body = table.tBodies[0];
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var a = key(r1, index), b = key(r2, index);
      if (a === null || b === null) { return compare(a, b); }
      return ascending ? compare(a, b) : compare(b, a);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  document.querySelectorAll("table.sortable thead th").forEach(function (th) {
    th.addEventListener("click", function () { sortBy(th); });
  });
  // A link to an experiment opens its (closed) details block.
  document.querySelectorAll("a[href^='#exp-']").forEach(function (a) {
    a.addEventListener("click", function () {
      var target = document.getElementById(a.getAttribute("href").slice(1));
      if (target) { target.open = true; }
    });
  });
})();
