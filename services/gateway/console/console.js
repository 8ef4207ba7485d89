// Ghost console: sign in with the API token, then Chat (POST /api/chat, server-sent events),
// Stage (GET /api/stage WebSocket) and Mood (/api/partner_mood). Plain browser JavaScript:
// no build step. All text goes in with textContent, never as HTML.
"use strict";

const state = { token: sessionStorage.getItem("ghost.token") || "", stage: null };
const $ = (id) => document.getElementById(id);

// --- API -------------------------------------------------------------------------------
async function api(method, path, body) {
  const init = { method, headers: { Authorization: "Bearer " + state.token } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    signOut("The token was refused.");
    throw new Error("unauthorized");
  }
  return response;
}

async function errorText(response) {
  try {
    const body = await response.json();
    if (body && body.error) return body.error.code + ": " + body.error.message;
  } catch (_) { /* not JSON */ }
  return "HTTP " + response.status;
}

// --- Sign in and views ------------------------------------------------------------------
function show(view) {
  for (const section of document.querySelectorAll(".view")) {
    section.hidden = section.id !== "view-" + view;
  }
  for (const tab of document.querySelectorAll("#tabs button[data-view]")) {
    tab.classList.toggle("active", tab.dataset.view === view);
  }
  if (view === "mood") loadMood();
}

function signedIn() {
  $("tabs").hidden = false;
  show("chat");
  loadHistory();
}

function signOut(message) {
  state.token = "";
  sessionStorage.removeItem("ghost.token");
  if (state.stage) state.stage.close();
  $("tabs").hidden = true;
  show("signin");
  $("signin-error").textContent = message || "";
}

$("signin-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  $("signin-error").textContent = "";
  const token = $("signin-token").value.trim();
  // Any answer but 401 means the token is right (the check reads one empty conversation).
  const response = await fetch("/api/sessions/console-sign-in/messages", {
    headers: { Authorization: "Bearer " + token },
  });
  if (response.status === 401) {
    $("signin-error").textContent = "Wrong token.";
    return;
  }
  state.token = token;
  sessionStorage.setItem("ghost.token", token);
  $("signin-token").value = "";
  signedIn();
});
$("sign-out").addEventListener("click", () => signOut(""));
for (const tab of document.querySelectorAll("#tabs button[data-view]")) {
  tab.addEventListener("click", () => show(tab.dataset.view));
}

// --- Chat --------------------------------------------------------------------------------
function sessionId() {
  let id = $("chat-session").value.trim();
  if (!id) {
    id = localStorage.getItem("ghost.session") || "console-" + Math.random().toString(36).slice(2, 10);
    $("chat-session").value = id;
  }
  localStorage.setItem("ghost.session", id);
  return id;
}

/** One line of a log: `kind` is user, persona, notify or status. */
function line(log, kind, who, text) {
  const li = document.createElement("li");
  li.className = kind;
  if (who) {
    const name = document.createElement("span");
    name.className = "who";
    name.textContent = who;
    li.appendChild(name);
  }
  const body = document.createElement("span");
  body.className = "text";
  body.textContent = text;
  li.appendChild(body);
  log.appendChild(li);
  log.scrollTop = log.scrollHeight;
  return body;
}

async function loadHistory() {
  const id = sessionId();
  $("chat-error").textContent = "";
  const response = await api("GET", "/api/sessions/" + encodeURIComponent(id) + "/messages");
  if (!response.ok) {
    $("chat-error").textContent = await errorText(response);
    return;
  }
  const body = await response.json();
  $("chat-log").replaceChildren();
  for (const m of body.messages) {
    if (m.role === "user") line($("chat-log"), "user", "you", m.text);
    else line($("chat-log"), "persona", m.speaker, m.text);
  }
}
$("chat-load").addEventListener("click", loadHistory);

/** Reads server-sent events from a fetch body, calling `onEvent(name, data)` for each. */
async function readSse(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder("utf-8"); // stream: true keeps split UTF-8 sequences whole
  let buffer = "";
  let name = "message";
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.search(/\r?\n/)) >= 0) {
      const text = buffer.slice(0, newline);
      buffer = buffer.slice(buffer[newline] === "\r" ? newline + 2 : newline + 1);
      if (text === "") {
        if (data.length) onEvent(name, data.join("\n"));
        name = "message";
        data = [];
      } else if (text.startsWith("event:")) {
        name = text.slice(6).trim();
      } else if (text.startsWith("data:")) {
        data.push(text.slice(5).replace(/^ /, ""));
      }
    }
  }
}

$("chat-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = $("chat-text").value;
  if (!text.trim()) return;
  $("chat-error").textContent = "";
  $("chat-send").disabled = true;
  line($("chat-log"), "user", "you", text);
  $("chat-text").value = "";
  const reply = line($("chat-log"), "persona", "…", "");
  reply.parentElement.classList.add("streaming");
  try {
    const response = await api("POST", "/api/chat", { session_id: sessionId(), text });
    if (!response.ok) {
      reply.parentElement.remove();
      $("chat-error").textContent = await errorText(response);
      return;
    }
    await readSse(response, (name, data) => {
      const payload = JSON.parse(data);
      if (name === "token") {
        reply.textContent += payload.delta;
        // How many token events built the reply (shows it streamed; the browser test reads it).
        reply.parentElement.dataset.tokens = String(Number(reply.parentElement.dataset.tokens || 0) + 1);
      } else if (name === "done") {
        reply.textContent = payload.reply_text;
        reply.parentElement.classList.remove("streaming");
        reply.parentElement.classList.add("done");
      } else if (name === "error") {
        reply.parentElement.classList.remove("streaming");
        $("chat-error").textContent = payload.code + ": " + payload.message;
      }
    });
    reply.previousSibling.textContent = "persona";
    if (!reply.parentElement.classList.contains("done") && !$("chat-error").textContent) {
      $("chat-error").textContent = "The reply stream ended early; Load shows what was stored.";
    }
  } catch (err) {
    $("chat-error").textContent = String(err);
  } finally {
    $("chat-send").disabled = false;
  }
});

// --- Stage -------------------------------------------------------------------------------
function stageStatus(text) {
  $("stage-status").textContent = text;
}

$("stage-connect").addEventListener("click", () => {
  const id = $("stage-id").value.trim() || "default";
  $("stage-id").value = id;
  if (state.stage) state.stage.close();
  $("stage-log").replaceChildren();
  $("stage-error").textContent = "";
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  // Browsers cannot set headers on a WebSocket: the token rides in the query.
  const url = scheme + "//" + location.host + "/api/stage?stage_id=" + encodeURIComponent(id) +
    "&token=" + encodeURIComponent(state.token);
  const ws = new WebSocket(url);
  state.stage = ws;
  stageStatus("Connecting to " + id + "…");
  ws.onopen = () => {
    stageStatus("Watching " + id + ".");
    $("stage-send").disabled = false;
    $("stage-stop").disabled = false;
  };
  ws.onclose = (event) => {
    if (state.stage !== ws) return;
    stageStatus("Disconnected" + (event.reason ? ": " + event.reason : "."));
    $("stage-send").disabled = true;
    $("stage-stop").disabled = true;
  };
  ws.onmessage = (event) => {
    const frame = JSON.parse(event.data);
    if (frame.type === "message") {
      line($("stage-log"), "persona", frame.display_name || frame.speaker, frame.text);
    } else if (frame.type === "status") {
      const what = { thinking: "is thinking…", idle: "is done", active: "has the floor" }[frame.state] || frame.state;
      stageStatus(frame.speaker + " " + what);
    } else if (frame.type === "control") {
      line($("stage-log"), "status", "", "next: " + frame.next);
    } else if (frame.type === "error") {
      $("stage-error").textContent = frame.code + ": " + frame.message;
    }
  };
});

$("stage-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("stage-text").value;
  if (!text.trim() || !state.stage || state.stage.readyState !== WebSocket.OPEN) return;
  line($("stage-log"), "user", "you", text);
  state.stage.send(JSON.stringify({ type: "user", text }));
  $("stage-text").value = "";
});
$("stage-stop").addEventListener("click", () => {
  if (state.stage && state.stage.readyState === WebSocket.OPEN) {
    state.stage.send(JSON.stringify({ type: "stop" }));
  }
});

// --- Mood --------------------------------------------------------------------------------
function moodQuery() {
  const persona = $("mood-persona").value.trim();
  return persona ? "?persona=" + encodeURIComponent(persona) : "";
}

function meter(parent, name, value) {
  const row = document.createElement("div");
  row.className = "meter";
  const label = document.createElement("span");
  label.textContent = name;
  const track = document.createElement("span");
  track.className = "track";
  const fill = document.createElement("span");
  fill.className = "bar-fill";
  fill.style.width = Math.round(Math.max(0, Math.min(1, value)) * 100) + "%";
  track.appendChild(fill);
  const number = document.createElement("span");
  number.textContent = Number(value).toFixed(2);
  row.append(label, track, number);
  parent.appendChild(row);
}

function showMood(answer) {
  const card = $("mood-current");
  card.replaceChildren();
  const title = document.createElement("h3");
  title.id = "mood-summary";
  title.textContent = answer.persona + ": " + answer.state.label +
    (answer.overridden ? " (override)" : " (computed)");
  card.appendChild(title);
  meter(card, "intensity", answer.state.intensity);
  for (const [name, value] of Object.entries(answer.state.components)) meter(card, name, value);
  const policy = answer.state.response_policy;
  meter(card, "cooperation", policy.cooperation);
  meter(card, "refusal bias", policy.refusal_bias);
  const allowed = document.createElement("p");
  allowed.textContent = "refusal allowed: " + (policy.refusal_allowed ? "yes" : "no");
  card.appendChild(allowed);
}

async function moodCall(method, body) {
  $("mood-error").textContent = "";
  const response = await api(method, "/api/partner_mood" + moodQuery(), body);
  if (!response.ok) {
    $("mood-error").textContent = await errorText(response);
    return;
  }
  showMood(await response.json());
}

function loadMood() {
  moodCall("GET").catch((err) => { $("mood-error").textContent = String(err); });
}
$("mood-refresh").addEventListener("click", loadMood);
$("mood-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const n = (id) => Number($(id).value);
  moodCall("PUT", {
    label: $("mood-label").value,
    intensity: n("mood-intensity"),
    components: { joy: n("mood-joy"), sadness: n("mood-sadness"), anger: n("mood-anger"), fear: n("mood-fear") },
    response_policy: {
      cooperation: n("mood-cooperation"),
      refusal_bias: n("mood-refusal-bias"),
      refusal_allowed: $("mood-refusal-allowed").checked,
    },
  }).catch((err) => { $("mood-error").textContent = String(err); });
});
$("mood-clear").addEventListener("click", () => {
  moodCall("DELETE").catch((err) => { $("mood-error").textContent = String(err); });
});

// --- Start ---------------------------------------------------------------------------------
$("chat-session").value = localStorage.getItem("ghost.session") || "";
if (state.token) signedIn(); else show("signin");
