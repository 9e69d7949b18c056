// majordomus: the one script of the pages. It only adds what a page works without: a reload
// when the layer has a new generation (an EventSource on /ui/events), and copy buttons.
(function () {
  "use strict";
  var shown = document.body.getAttribute("data-generation");
  var note = document.getElementById("live-note");
  if (window.EventSource && document.body.getAttribute("data-live") === "on") {
    var events = new EventSource("/ui/events");
    events.onmessage = function (event) {
      var generation;
      try { generation = String(JSON.parse(event.data).generation); } catch (e) { return; }
      if (generation !== shown) {
        events.close();
        if (note) { note.textContent = "The layer changed (generation " + generation + "); reloading…"; }
        window.location.reload();
      }
    };
    // The sessions sharing this server (the overview's board) change without a generation.
    events.addEventListener("peers", function (event) {
      var board = document.querySelector("[data-peers]");
      var version;
      try { version = String(JSON.parse(event.data).peers); } catch (e) { return; }
      if (board && version !== board.getAttribute("data-peers")) {
        events.close();
        if (note) { note.textContent = "The sessions sharing this server changed; reloading…"; }
        window.location.reload();
      }
    });
  }
  var fields = document.querySelectorAll("[data-copy]");
  Array.prototype.forEach.call(fields, function (field) {
    if (!navigator.clipboard) { return; }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "quiet";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy " + (field.getAttribute("aria-label") || "the text"));
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(field.value || field.textContent).then(function () {
        button.textContent = "Copied";
        window.setTimeout(function () { button.textContent = "Copy"; }, 1500);
      });
    });
    field.parentNode.insertBefore(button, field.nextSibling);
  });
}());
