// Ghost console: sign in with the API token, then Chat (POST /api/chat, server-sent events,
// and the persona's autonomous messages), Activity (both live over the GET /api/events
// WebSocket), Stage (GET /api/stage WebSocket) and Mood & memory (/api/partner_mood,
// /api/memory). Plain browser JavaScript: no build step. All text goes in with textContent,
// never as HTML.
"use strict";

const state = { token: sessionStorage.getItem("ghost.token") || "", stage: null, events: null };
/** Most activity entries kept on the page (older ones drop off the end). */
const ACTIVITY_LIMIT = 200;
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
  if (view === "mood") {
    loadMood();
    loadMemory();
  }
}

function signedIn() {
  $("tabs").hidden = false;
  show("chat");
  loadHistory();
  connectEvents();
  learnPersona();
}

/** The chat persona's id: the sender name of its streamed replies (as in the history). */
async function learnPersona() {
  try {
    const response = await api("GET", "/api/memory");
    if (response.ok) state.persona = (await response.json()).persona;
  } catch (_) { /* the replies are then signed "persona" */ }
}

function signOut(message) {
  state.token = "";
  sessionStorage.removeItem("ghost.token");
  if (state.stage) state.stage.close();
  if (state.events) {
    const ws = state.events;
    state.events = null;
    ws.close();
  }
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
    // "console" is where the persona's autonomous messages go by default
    // (autonomy.session_id): the console's own conversation is that one.
    id = localStorage.getItem("ghost.session") || "console";
    $("chat-session").value = id;
  }
  localStorage.setItem("ghost.session", id);
  return id;
}

/** One line of a log: `kind` is user, persona or status (plus autonomy, notify). */
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
    if (m.role === "user") {
      line($("chat-log"), "user", "you", m.text);
    } else if (m.source === "autonomy_message") {
      utterance(m.event_id, m.speaker, m.text, m.display);
    } else {
      const text = line($("chat-log"), "persona", m.speaker, m.text);
      text.parentElement.dataset.eventId = m.event_id;
    }
  }
}

/** An autonomous message: the persona's utterance like any reply; `notify` only looks
 * different. Shown once, whether it came live or with the history. */
function utterance(eventId, speaker, text, display) {
  if (eventId && document.querySelector('#chat-log li[data-event-id="' + CSS.escape(eventId) + '"]')) return;
  const kind = "persona autonomy" + (display === "notify" ? " notify" : "");
  const body = line($("chat-log"), kind, speaker, text);
  if (eventId) body.parentElement.dataset.eventId = eventId;
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
        reply.parentElement.dataset.eventId = payload.event_id;
        reply.parentElement.classList.remove("streaming");
        reply.parentElement.classList.add("done");
      } else if (name === "error") {
        reply.parentElement.classList.remove("streaming");
        $("chat-error").textContent = payload.code + ": " + payload.message;
      }
    });
    reply.previousSibling.textContent = state.persona || "persona";
    if (!reply.parentElement.classList.contains("done") && !$("chat-error").textContent) {
      $("chat-error").textContent = "The reply stream ended early; Load shows what was stored.";
    }
  } catch (err) {
    $("chat-error").textContent = String(err);
  } finally {
    $("chat-send").disabled = false;
  }
});

// --- Live events: autonomous messages and activity (GET /api/events) ---------------------
function eventsStatus(text) {
  $("events-status").textContent = "Live messages: " + text;
}

function connectEvents() {
  if (state.events) return;
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  // Browsers cannot set headers on a WebSocket: the token rides in the query.
  const ws = new WebSocket(scheme + "//" + location.host + "/api/events?token=" + encodeURIComponent(state.token));
  state.events = ws;
  eventsStatus("connecting…");
  ws.onmessage = (event) => {
    const frame = JSON.parse(event.data);
    if (frame.type === "ready") {
      eventsStatus("connected.");
    } else if (frame.type === "message") {
      if (frame.session_id === sessionId()) {
        utterance(frame.event_id, frame.speaker, frame.text, frame.display);
      } else {
        line($("chat-log"), "status", "", frame.speaker + " said something in session " + frame.session_id + " (Load it to read).");
      }
    } else if (frame.type === "activity") {
      activity(frame);
    } else if (frame.type === "error") {
      eventsStatus(frame.code + ": " + frame.message);
    }
  };
  ws.onclose = () => {
    if (state.events !== ws) return; // signed out: stay closed
    state.events = null;
    eventsStatus("disconnected; reconnecting…");
    // Reconnect while signed in; what was said meanwhile is in the history (Load).
    setTimeout(() => { if (state.token && !state.events) connectEvents(); }, 3000);
  };
}

/** What an activity entry is about, in one line, and the capability it concerns. */
function describeActivity(frame) {
  const d = frame.detail || {};
  switch (frame.kind) {
    case "decided": {
      const decision = d.decision || {};
      const delivery = decision.console_delivery ? " → " + decision.console_delivery.mode : "";
      return {
        capability: decision.capability || "",
        title: (decision.decision || "decided") + (decision.action_type ? " (" + decision.action_type + ")" : "") + delivery,
        text: decision.reason || "",
      };
    }
    case "dropped":
      return { capability: "", title: "dropped: " + (d.reason || "?"), text: (d.errors || []).join("; ") };
    case "started":
      return { capability: d.capability || "", title: "started", text: "" };
    case "result": {
      // Monitoring gets the facts only (never the summary or raw output): show the sources,
      // the agent job, or else the payload itself, shortened.
      const payload = d.result_payload || {};
      let text = "";
      if (Array.isArray(payload.source_urls) && payload.source_urls.length) text = payload.source_urls.join("\n");
      else if (d.agent_job) text = "job " + JSON.stringify(d.agent_job);
      else if (Object.keys(payload).length) text = JSON.stringify(payload).slice(0, 300);
      return { capability: d.capability_name || "", title: "result: " + (d.result_status || "?"), text };
    }
    case "message_failed":
      return { capability: "", title: "message failed", text: d.error || "" };
    default:
      return { capability: "", title: frame.kind, text: JSON.stringify(d) };
  }
}

/** Entries already shown (the past is replayed on every connection, reconnections too). */
const shownActivity = new Set();

function activity(frame) {
  const key = frame.kind + ":" + frame.event_id;
  if (shownActivity.has(key)) return;
  shownActivity.add(key);
  const about = describeActivity(frame);
  const li = document.createElement("li");
  li.className = "kind-" + frame.kind;
  li.dataset.kind = frame.kind;
  if (frame.replayed) li.classList.add("replayed");
  const head = document.createElement("div");
  head.className = "head";
  const kind = document.createElement("span");
  kind.className = "kind";
  kind.textContent = frame.kind;
  const capability = document.createElement("span");
  capability.className = "capability";
  capability.textContent = about.capability;
  const time = document.createElement("time");
  const at = frame.recorded_at ? new Date(frame.recorded_at) : new Date();
  time.dateTime = at.toISOString();
  time.textContent = at.toLocaleTimeString();
  head.append(kind, capability, time);
  const title = document.createElement("div");
  title.className = "title";
  title.textContent = about.title;
  li.append(head, title);
  if (about.text) {
    const text = document.createElement("div");
    text.className = "text";
    text.textContent = about.text;
    li.appendChild(text);
  }
  const log = $("activity-log");
  log.prepend(li);
  while (log.children.length > ACTIVITY_LIMIT) log.lastElementChild.remove();
  $("activity-empty").hidden = true;
}
$("activity-clear").addEventListener("click", () => {
  $("activity-log").replaceChildren();
  $("activity-empty").hidden = false;
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

// --- Memory (read-only) -------------------------------------------------------------------
function fact(list, main, detail) {
  const li = document.createElement("li");
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = main;
  const small = document.createElement("small");
  small.textContent = detail;
  li.append(text, small);
  list.appendChild(li);
}

function showMemory(answer) {
  const states = $("memory-states");
  const preferences = $("memory-preferences");
  const interest = $("memory-interest");
  states.replaceChildren();
  preferences.replaceChildren();
  interest.replaceChildren();
  for (const s of answer.states || []) {
    const salience = s.salience == null ? "" : ", salience " + Number(s.salience).toFixed(2);
    fact(states, s.body_text, s.kind + " · " + s.status + " · confidence " + Number(s.confidence).toFixed(2) + salience);
  }
  for (const p of answer.preferences || []) {
    fact(preferences, p.polarity + " " + p.subject, p.domain + " · " + p.status + " · confidence " + Number(p.confidence).toFixed(2));
  }
  if (!states.children.length) fact(states, "none", "");
  if (!preferences.children.length) fact(preferences, "none", "");
  const i = answer.interest;
  if (!i) {
    interest.textContent = "none yet";
    return;
  }
  const mode = document.createElement("p");
  mode.id = "memory-mode";
  mode.textContent = "mode: " + i.interaction_mode + " (updated " + new Date(i.updated_at * 1000).toLocaleString() + ")";
  interest.appendChild(mode);
  for (const t of i.attention_targets || []) meter(interest, t.type + ": " + t.value, t.weight);
}

async function loadMemory() {
  $("memory-error").textContent = "";
  try {
    const response = await api("GET", "/api/memory" + moodQuery());
    if (!response.ok) {
      $("memory-error").textContent = await errorText(response);
      return;
    }
    showMemory(await response.json());
  } catch (err) {
    $("memory-error").textContent = String(err);
  }
}
$("mood-refresh").addEventListener("click", loadMemory);

// --- Start ---------------------------------------------------------------------------------
$("chat-session").value = localStorage.getItem("ghost.session") || "";
if (state.token) signedIn(); else show("signin");
