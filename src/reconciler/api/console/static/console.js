// The console's only script: the token (sessionStorage of this tab, never anything else),
// ETags of polled fragments, the fleet form's sort/page/status buttons, and the action buttons
// (which call the v1 API; the API checks the caller's role again).
(function () {
  "use strict";
  var KEY = "reconciler.token";
  var page = document.body.dataset.page;

  function token() { return sessionStorage.getItem(KEY); }
  var noticeTimer = null;
  function notice(text, error) {
    var box = document.getElementById("notice");
    box.textContent = text;
    box.className = error ? "notice error" : "notice";
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(function () { box.textContent = ""; }, error ? 15000 : 5000);
  }
  function signin() {
    sessionStorage.clear();
    var next = location.pathname + location.search;
    location.replace("/ui/signin?next=" + encodeURIComponent(next));
  }

  if (page === "signin") {
    document.getElementById("signin-form").addEventListener("submit", function (event) {
      event.preventDefault();
      var field = document.getElementById("token");
      var value = field.value.trim();
      var error = document.getElementById("signin-error");
      fetch("/ui/whoami", { headers: { Authorization: "Bearer " + value }, cache: "no-store" })
        .then(function (response) {
          if (!response.ok) {
            return response.json().then(function (body) {
              throw new Error(body.error || ("HTTP " + response.status));
            });
          }
          sessionStorage.setItem(KEY, value);
          field.value = "";
          var next = new URLSearchParams(location.search).get("next") || "/ui/";
          location.assign(/^\/ui\/[^\/]/.test(next) || next === "/ui/" ? next : "/ui/");
        })
        .catch(function (exc) { error.textContent = "Not signed in: " + exc.message; field.focus(); });
    });
    return;
  }
  // No token is no reason to ask for one: a mothership without authentication (auth=none), or
  // one that knows the caller by its client certificate, answers anyway; a 401 signs in.
  function authHeaders(extra) {
    var headers = extra || {};
    if (token()) { headers.Authorization = "Bearer " + token(); }
    return headers;
  }

  document.addEventListener("htmx:configRequest", function (event) {
    authHeaders(event.detail.headers);
    var target = event.detail.target;
    if (target && target.dataset.etag) { event.detail.headers["If-None-Match"] = target.dataset.etag; }
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var xhr = event.detail.xhr, target = event.detail.target;
    if (xhr.status === 200 && target) { target.dataset.etag = xhr.getResponseHeader("ETag") || ""; }
  });
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (xhr.status === 401) { signin(); return; }
    var text = "HTTP " + xhr.status;
    try { text = JSON.parse(xhr.responseText).error || text; } catch (ignored) { /* not JSON */ }
    notice(text, true);
  });

  function refresh() { document.body.dispatchEvent(new CustomEvent("refresh")); }
  // a diff on the page compared versions of before the rollback: show what the rollback
  // changed instead (the version it replaced, left; the one it stored, right), never the old
  // caption over a configuration list that moved on
  function rolledBack(runtime, replaced, answer) {
    var box = document.getElementById("diff");
    if (!box) { return; }
    box.textContent = "";
    if (!replaced || !answer.configurationVersion) { return; }
    htmx.ajax("GET", "/ui/fragments/clusters/" + encodeURIComponent(runtime) + "/diff?a=" +
      encodeURIComponent(replaced) + "&b=" + encodeURIComponent(answer.configurationVersion),
      { target: "#diff", swap: "innerHTML" });
  }
  function filters(changes) {
    var form = document.getElementById("filters");
    Object.keys(changes).forEach(function (name) { form.elements[name].value = changes[name]; });
    form.dispatchEvent(new Event("change", { bubbles: true }));
  }
  var form = document.getElementById("filters");
  if (form) {
    form.addEventListener("input", function (event) {
      if (event.target.name !== "page") { form.elements.page.value = "1"; }
    });
    form.addEventListener("htmx:beforeRequest", function () {
      var query = new URLSearchParams(new FormData(form)).toString();
      history.replaceState(null, "", "/ui/?" + query);
    });
  }

  function act(button) {
    var runtime = button.dataset.runtime, request;
    if (button.getAttribute("aria-disabled") === "true") { return; }
    var cluster = "/v1/clusters/" + encodeURIComponent(runtime);
    if (button.dataset.action === "status") {
      request = fetch(cluster + "/status", {
        method: "PUT",
        headers: authHeaders({ "Content-Type": "application/json" }),
        body: JSON.stringify({ status: button.dataset.status })
      });
    } else if (button.dataset.action === "delete") {
      if (!window.confirm("Delete " + runtime + "? Its components are uninstalled.")) { return; }
      // JSON, as every state-changing request from a browser must be (CSRF guard)
      request = fetch(cluster, {
        method: "DELETE", headers: authHeaders({ "Content-Type": "application/json" })
      });
    } else if (button.dataset.action === "forget") {
      // a cluster that answers keeps everything installed when forgotten: say so, and confirm
      var live = ["healthy", "progressing", "disabled"].indexOf(button.dataset.health) >= 0;
      if (!window.confirm("Forget " + runtime + "? It is removed from the inventory without an" +
          " uninstall (for a cluster whose infrastructure is gone)." +
          (live ? " It is " + button.dataset.health + ": whatever is installed stays installed." : ""))) { return; }
      request = fetch(cluster + "/forget", {
        method: "POST",
        headers: authHeaders({ "Content-Type": "application/json" }),
        body: JSON.stringify({ confirm: live })
      });
    } else {
      var version = button.dataset.version;
      if (!window.confirm("Roll " + runtime + " back to configuration " + version + "?")) { return; }
      request = fetch("/v1/clusters/" + encodeURIComponent(runtime) + "/config/" + version + "/restore", {
        method: "POST",
        // JSON, as every state-changing request from a browser must be (CSRF guard)
        headers: authHeaders({ "Content-Type": "application/json" }),
        body: "{}"
      });
    }
    // aria-disabled, not disabled: a disabled button drops the keyboard focus, which the
    // live update would then not give back to the button that replaces it
    button.setAttribute("aria-disabled", "true");
    request.then(function (response) {
      if (response.status === 401) { signin(); return; }
      return response.json().then(function (body) {
        if (!response.ok) { throw new Error(body.error || ("HTTP " + response.status)); }
        notice(button.textContent.trim() + ": done, status " + body.status);
        if (button.dataset.action === "forget") { location.assign("/ui/"); return; }
        if (button.dataset.action === "restore") { rolledBack(runtime, button.dataset.current, body); }
        refresh();
      });
    }).catch(function (exc) {
      notice(button.textContent.trim() + " refused: " + exc.message, true);
    }).finally(function () { button.removeAttribute("aria-disabled"); });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button");
    if (!button) { return; }
    var data = button.dataset;
    if (data.action === "signout") {
      sessionStorage.clear();  // the token, and htmx's record of the page path
      location.replace("/ui/signin");
    } else if (data.action) {
      act(button);
    } else if (data.sort) {
      filters({ sort: data.sort, dir: data.dir, page: "1" });
    } else if (data.page) {
      filters({ page: data.page });
    } else if (data.statusFilter !== undefined) {
      filters({ status: data.statusFilter, page: "1" });
    } else if (data.healthFilter !== undefined) {
      filters(data.healthFilter ? { health: data.healthFilter, page: "1" }
                                : { health: "", status: "", page: "1" });
    }
  });
})();
