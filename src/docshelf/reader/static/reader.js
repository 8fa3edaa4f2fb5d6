// The reader's few behaviours, none needed to read: as-you-type search, the menu folded on
// phones, and a copy button on code blocks. Everything is written with textContent and
// attributes, never HTML, so nothing in a result or a page can run.
(function () {
  "use strict";

  // Phones open the page with the menu folded.
  var menu = document.querySelector(".sidebar-toggle");
  if (menu && window.matchMedia("(max-width: 760px)").matches) menu.removeAttribute("open");

  // -- as-you-type search: asks the site's ~search.json and lists what comes back ----------
  function liveSearch(input, box) {
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
  }
  var input = document.getElementById("q");
  var box = document.getElementById("live-results");
  if (input && box) liveSearch(input, box);

  // -- copy buttons on code blocks --------------------------------------------------------
  // The Clipboard API needs a secure context (https or localhost); a server on a plain http
  // address still copies through a selected, off-screen textarea.
  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    return new Promise(function (resolve, reject) {
      var buffer = document.createElement("textarea");
      buffer.className = "copy-buffer";
      buffer.setAttribute("readonly", "");
      buffer.setAttribute("aria-hidden", "true");
      buffer.value = text;
      document.body.appendChild(buffer);
      buffer.select();
      var done = false;
      try { done = document.execCommand("copy"); } catch (e) { done = false; }
      document.body.removeChild(buffer);
      if (done) resolve(); else reject(new Error("copy refused"));
    });
  }
  var blocks = document.querySelectorAll(".code-block");
  if (!blocks.length) return;
  // One polite announcement for whichever button was used.
  var status = document.createElement("div");
  status.className = "visually-hidden";
  status.setAttribute("role", "status");
  document.body.appendChild(status);
  Array.prototype.forEach.call(blocks, function (block) {
    var code = block.querySelector("pre code");
    if (!code) return;
    var bar = block.querySelector(".code-bar");
    if (!bar) {
      bar = document.createElement("div");
      bar.className = "code-bar";
      block.insertBefore(bar, block.firstChild);
    }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    var label = document.createElement("span");
    label.textContent = "Copy";
    button.appendChild(label);
    var reset = null;
    function say(word, message) {
      label.textContent = word;
      status.textContent = message;
      clearTimeout(reset);
      reset = setTimeout(function () {
        label.textContent = "Copy";
        button.classList.remove("copied");
        status.textContent = "";
      }, 2000);
    }
    button.addEventListener("click", function () {
      // The block's text as written: the newline that ends every block is not part of it.
      copy(code.textContent.replace(/\n$/, "")).then(
        function () { button.classList.add("copied"); say("Copied", "Code copied to the clipboard"); },
        function () { say("Copy failed", "The browser did not allow copying"); }
      );
    });
    bar.appendChild(button);
  });
})();
