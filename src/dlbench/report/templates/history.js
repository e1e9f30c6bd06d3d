(function () {
  var box = document.getElementById("filter");
  var count = document.getElementById("shown");
  function apply() {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    document.querySelectorAll("section.series").forEach(function (section) {
      var text = section.getAttribute("data-filter");
      var keep = words.every(function (w) { return text.indexOf(w) >= 0; });
      section.hidden = !keep;
      if (keep) { shown += 1; }
    });
    count.textContent = String(shown);
  }
  box.addEventListener("input", apply);
  apply();
})();
