// xor-ack dashboard: live updates without a reload. The server says what changed
// (server-sent events at <base>live); this script fetches the page's live part again
// (?partial=1), HTML rendered and escaped by the server, and swaps it in.
// Nothing here builds HTML from data.
(function () {
  "use strict";
  var body = document.body;
  var base = body.getAttribute("data-base") || "/";
  var live = document.getElementById("live");
  var dot = document.getElementById("live-state");
  var pending = null;
  var inFlight = false;
  var again = false;

  // A swap under a pressed pointer loses the click: the button pressed is gone by the
  // time it is released, and the one released on is new (no click on either).  A swap
  // waits until the pointer is up and the click is done; one that changes nothing (the
  // same HTML once the relative times are ticked) is not made.
  var pressed = false;
  var waiting = [];
  function whenReleased(swap) {
    if (pressed) { waiting.push(swap); } else { swap(); }
  }
  // A press of the primary button only (a click); its release may never come to the page
  // (a context menu, a drag, the window left): those end the wait too.
  function pointerDown(event) { if (event.button === 0 && event.isPrimary) { pressed = true; } }
  function pointerUp() {
    window.setTimeout(function () {  // after the click this release makes
      pressed = false;
      var swaps = waiting;
      waiting = [];
      for (var i = 0; i < swaps.length; i++) { swaps[i](); }
    }, 0);
  }
  document.addEventListener("pointerdown", pointerDown, true);
  ["pointerup", "pointercancel", "contextmenu", "dragstart"].forEach(function (name) {
    document.addEventListener(name, pointerUp, true);
  });
  window.addEventListener("blur", pointerUp);

  // The children that say something (the page puts line breaks around its part).
  function shownNodes(parent) {
    var nodes = [];
    for (var i = 0; i < parent.childNodes.length; i++) {
      var node = parent.childNodes[i];
      if (node.nodeType !== Node.TEXT_NODE || node.textContent.trim() !== "") { nodes.push(node); }
    }
    return nodes;
  }
  function sameChildren(a, b) {
    var x = shownNodes(a), y = shownNodes(b);
    if (x.length !== y.length) { return false; }
    for (var i = 0; i < x.length; i++) {
      if (!x[i].isEqualNode(y[i])) { return false; }
    }
    return true;
  }

  // The part the server rendered, its relative times ticked at the same instant as the
  // page's (so that a second passing between the two is no change).
  function parse(html) {
    var holder = document.createElement("template");
    holder.innerHTML = html;
    var now = Date.now() / 1000;
    tick(holder.content, now);
    tick(document, now);
    return holder.content;
  }

  function partialUrl() {
    var url = new URL(window.location.href);
    url.searchParams.set("partial", "1");
    url.searchParams.delete("done");
    return url.toString();
  }

  function refresh() {
    if (!live) { return; }
    if (inFlight) { again = true; return; }
    inFlight = true;
    fetch(partialUrl(), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        whenReleased(function () {
          var fresh = parse(html);
          if (!sameChildren(fresh, live)) { live.replaceChildren(fresh); tick(); }
        });
      })
      .catch(function () {})
      .then(function () {
        inFlight = false;
        if (again) { again = false; refresh(); }
      });
  }

  // A list swaps in the rows of the chains the stream wrote, rendered by the server
  // (one read by tag, no index query): a chain gone since comes back as an "absent" row;
  // a row whose tag it does not find (a damaged item) stays as it is.
  // At most this many characters of tags in one GET of rows: a request head past a
  // server's or a proxy's limit (uvicorn's 16 KiB, often 8 KiB) is refused whole.
  var ROWS_QUERY = 6000;

  function refreshRows(tags) {
    var batch = [], size = 0;
    for (var i = 0; i < tags.length; i++) {
      var length = encodeURIComponent(tags[i]).length + 5;
      if (batch.length > 0 && size + length > ROWS_QUERY) { fetchRows(batch); batch = []; size = 0; }
      batch.push(tags[i]);
      size += length;
    }
    if (batch.length > 0) { fetchRows(batch); }
  }

  function fetchRows(tags) {
    var url = new URL(base + "rows", window.location.href);
    url.searchParams.set("status", live.getAttribute("data-rows"));
    for (var i = 0; i < tags.length; i++) { url.searchParams.append("tag", tags[i]); }
    fetch(url.toString(), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (response.ok) { return response.text(); }
        soon(20);  // refused: the whole part fetched again instead
        return null;
      })
      .then(function (html) {
        if (html === null) { return; }
        whenReleased(function () {
          var fresh = parse(html).querySelectorAll("tr[data-key]");
          var shown = live.querySelectorAll("tr[data-key]");
          for (var i = 0; i < fresh.length; i++) {
            for (var j = 0; j < shown.length; j++) {
              if (shown[j].getAttribute("data-key") === fresh[i].getAttribute("data-key")
                  && !shown[j].isEqualNode(fresh[i])) {
                shown[j].replaceWith(fresh[i].cloneNode(true));
              }
            }
          }
          tick();
        });
      })
      .catch(function () {});
  }

  function soon(delay) {
    if (pending !== null) { return; }
    pending = window.setTimeout(function () { pending = null; refresh(); }, delay);
  }

  // The tags the page shows, exactly: from data-key, the tag percent-encoded by the server
  // (data-tag is for reading: HTML makes an attribute's CR and CR LF an LF, its NUL U+FFFD,
  // and such a row never matched the tags the stream wrote).  A Set: in an object, the
  // tag "__proto__" was no key of its own.
  function shownTags() {
    var found = new Set();
    if (!live) { return found; }
    var nodes = live.querySelectorAll("[data-key]");
    for (var i = 0; i < nodes.length; i++) {
      try { found.add(decodeURIComponent(nodes[i].getAttribute("data-key"))); } catch (e) {}
    }
    return found;
  }

  function duration(seconds) {
    var s = Math.abs(seconds);
    if (s < 60) { return s.toFixed(0) + " s"; }
    if (s < 3600) { return Math.floor(s / 60) + " min " + Math.floor(s % 60) + " s"; }
    if (s < 86400) { return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min"; }
    return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
  }

  // "in 4 min 3 s" / "overdue by 2 s" next to deadlines and TTLs, kept current.
  function tick(root, when) {
    var now = when === undefined ? Date.now() / 1000 : when;
    var nodes = (root || document).querySelectorAll(".rel[data-at]");
    for (var i = 0; i < nodes.length; i++) {
      var at = parseFloat(nodes[i].getAttribute("data-at"));
      if (isNaN(at)) { continue; }
      var left = at - now;
      var isDeadline = nodes[i].getAttribute("data-kind") === "deadline";
      nodes[i].textContent = left >= 0 ? "in " + duration(left)
        : (isDeadline ? "overdue by " : "") + duration(-left) + (isDeadline ? "" : " ago");
    }
  }

  // What the server said while the stream was cut (a restart, a laptop asleep) is lost:
  // a page that reconnects fetches its part again.
  var cut = false;
  function connect() {
    var source = new EventSource(base + "live");
    source.onopen = function () {
      if (dot) { dot.className = "live-state on"; }
      if (cut) { cut = false; soon(100); }
    };
    source.onerror = function () {
      if (dot) { dot.className = "live-state off"; }
      cut = true;
    };
    // The server ends each stream after a while (so that it can stop): a new one at once.
    source.addEventListener("again", function () {
      source.close();
      cut = true;
      connect();
    });
    source.addEventListener("overview", function () {
      if (live.getAttribute("data-refresh") === "overview") { soon(50); }
    });
    source.addEventListener("changed", function (event) {
      if (live.getAttribute("data-refresh") !== "tags") { return; }
      var tags;
      try { tags = JSON.parse(event.data); } catch (e) { return; }
      var shown = shownTags();
      var hits = [];
      for (var i = 0; i < tags.length; i++) {
        if (shown.has(tags[i])) { hits.push(tags[i]); }
      }
      if (!hits.length) { return; }
      if (live.hasAttribute("data-rows") && hits.length <= 100) { refreshRows(hits); } else { soon(20); }
    });
    source.addEventListener("resync", function () { soon(100); });
  }
  if (window.EventSource && live) { connect(); }
  // A page the browser kept and shows again (Back) missed what the stream said meanwhile.
  window.addEventListener("pageshow", function (event) { if (event.persisted) { soon(50); } });
  window.setInterval(function () { tick(); }, 1000);
  tick();
})();
