// As-you-type search: asks the site's ~search.json and lists what comes back. Everything is
// written with textContent and attributes, never HTML, so nothing in a result can run.
(function () {
  "use strict";
  var input = document.getElementById("q");
  var box = document.getElementById("live-results");
  if (!input || !box) return;
  // Phones open the page with the menu folded.
  var menu = document.querySelector(".sidebar-toggle");
  if (menu && window.matchMedia("(max-width: 760px)").matches) menu.removeAttribute("open");
  var url = input.getAttribute("data-live");
  var timer = null;
  var asked = 0;
  function clear() { while (box.firstChild) box.removeChild(box.firstChild); }
  function show(results, mine) {
    if (mine !== asked) return;
    clear();
    if (!results.length) return;
    var list = document.createElement("ul");
    results.slice(0, 8).forEach(function (r) {
      var links = r.sections && r.sections.length ? r.sections : [{ title: r.title, url: r.url }];
      links.slice(0, 2).forEach(function (s) {
        var item = document.createElement("li");
        var a = document.createElement("a");
        a.setAttribute("href", s.url);
        a.textContent = s.title === r.title ? r.title : r.title + " › " + s.title;
        a.className = "live-result";
        item.appendChild(a);
        list.appendChild(item);
      });
    });
    box.appendChild(list);
  }
  input.addEventListener("input", function () {
    clearTimeout(timer);
    var q = input.value.trim();
    if (q.length < 2) { asked++; clear(); return; }
    timer = setTimeout(function () {
      var mine = ++asked;
      fetch(url + "?q=" + encodeURIComponent(q), { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : { results: [] }; })
        .then(function (body) { show(body.results || [], mine); })
        .catch(function () { clear(); });
    }, 150);
  });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") clear(); });
})();
