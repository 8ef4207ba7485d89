// Ghost console. Sign in with the API token, then:
// - Chat: the conversation list (GET /api/sessions) beside the open conversation, which is
//   live over the console's socket (GET /api/live: its history, every new message whoever
//   sent it, whether a reply is being written and its words as they come; messages are sent
//   on it too, so a refusal is an answer, not a failed request);
// - Activity: the persona's deliberations, one card each (GET /api/events WebSocket), and
//   "Deliberate now" (POST /api/autonomy/tick);
// - Stage: GET /api/stage (WebSocket); Mood: /api/partner_mood and /api/memory;
// - Memory: a persona's states and preferences, everyone's or one person's (GET /api/memory),
//   a whole person forgotten with POST /api/memory/forget-person,
//   each corrected or forgotten with POST /api/memory/edits (then read again until the change
//   lands). Under each reply in Chat, the memories recall selected for it
//   (GET /api/recalls/<reply event id>), each a link to it in Memory;
// - Reminders: a person's reminders to come (GET /api/reminders), moved, cancelled and added
//   (PUT, DELETE, POST), each change confirmed once the list shows it.
// Each view has its own address (#/chat/<session>, #/chats, #/activity, #/stage/<id>,
// #/mood, #/memory?persona=&person=&state=<id>|preference=<domain>/<key>/<polarity>,
// #/reminders?person=). The token stays in this tab's session storage and goes in no URL:
// the live socket takes it in its first frame, the other sockets as a subprotocol. All text
// goes in with textContent, never as HTML. Plain browser JavaScript: no build step.
// This file: words, the API and sockets, signing in and out, addresses, Chat. Each other view
// has its own file (activity.js, stage.js, mood.js, memory.js, reminders.js), loaded after
// this one; they share its globals.
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "ghost.token";
const SESSION_KEY = "ghost.session";
/** An unsent message is kept in this tab under this prefix and its conversation (a reload
 * keeps it; signing out removes it). */
const DRAFT_KEY = "ghost.draft.";
/** A touch keyboard has no Shift+Enter: there Return is a new line and Send sends. */
const TOUCH = window.matchMedia("(pointer: coarse)").matches;
/** Most deliberations kept in Activity (older ones drop off the end). */
const ACTIVITY_LIMIT = 100;
/** The session ids the gateway takes for a chat (the alphabet of session keys). */
const SESSION_RE = /^[A-Za-z0-9_.:@-]{1,128}$/;
const STAGE_RE = /^[A-Za-z0-9_-]{1,64}$/;
/** Text with kana or kanji is marked Japanese (fonts, line breaking, screen readers). */
const JAPANESE_RE = /[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f]/;

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || "",
  signedIn: false,
  live: null, // the console's socket
  events: null, // GET /api/events
  stage: null,
  persona: "",
  names: {},
  maxChars: 8000,
  session: "", // the open conversation
  turn: null, // its turn state (the last `turn` frame)
  pending: null, // the bubble of the reply being written
  sending: null, // the message waiting for `sent` or `refused`
  nextRef: 1,
  view: "",
  target: "", // a message to show (#/chat/<session>/<event id>)
  listBefore: null,
  unseen: 0, // deliberations with news since Activity was last shown
  tickAsked: "", // the deliberation "Deliberate now" asked for, until its card comes
  stageRunning: false,
  stageQueued: null, // a Start pressed before its stage was joined ({id, text})
  stageRejoin: null,
  reconnect: null,
  epoch: 0, // one more at each sign-out: answers to calls from before it are dropped
  autonomySession: "console",
  linking: null,
  listTimer: null,
  recall: false, // replies recall memories (the `ready` frame says)
  memoryTarget: {}, // the memory the address names ({state} or {preference})
  memoryLoads: 0, // the newest read of the Memory view (older answers are dropped)
};

// --- Words ---------------------------------------------------------------------------------
const name = (id) => state.names[id] || id || "The persona";
const personaName = () => name(state.persona);

/** What a refused message's code means, for the person who typed it. */
function refusalText(code, message) {
  const p = personaName();
  switch (code) {
    case "busy": return p + " is still answering your previous message. Your message is kept: send it once the reply is here.";
    case "text_too_long":
    case "body_too_large": return tooLong([...$("chat-text").value].length);
    case "empty_text": return "Type a message first.";
    case "invalid_session_id": return "This conversation name cannot be used: letters, digits and - _ . : @ only, up to 128.";
    case "store_unavailable": return "The server cannot reach its database just now. Your message is kept: try again in a moment.";
    case "idempotency_conflict": return "This message clashes with an earlier one. It is kept: send it again.";
    case "not_connected": return "Not connected to the server. Your message is kept and can be sent once the connection is back.";
    default: return "The server did not take this message" + (message ? " (" + message + ")" : "") + ". It is kept: try again.";
  }
}

/** The too-long notice: how long the message is, and how long it may be. */
function tooLong(length) {
  const n = (x) => x.toLocaleString("en");
  return "This message is " + n(length) + " characters long; at most " + n(state.maxChars) + " fit. It is kept so you can shorten it.";
}

/** Why a reply did not come, in plain words. */
function failureText(code, message) {
  const p = personaName();
  if (code === "turn_timed_out" && message) return message;
  if (code === "turn_timed_out" || code === "timeout") return p + " took too long to answer. Send your message again to retry.";
  if (/^llm|model/.test(code || "")) return p + " could not answer: the language model is not responding properly right now. Try again in a moment.";
  return p + " could not answer this message. Try sending it again.";
}

/** A stage frame's code in plain words. */
function stageErrorText(code) {
  switch (code) {
    case "busy": return "A run is already going on this stage: wait for it to finish, or stop it.";
    case "not_running": return "Nothing is running on this stage.";
    case "text_too_long": return "This topic is too long (at most " + state.maxChars + " characters).";
    case "empty_text": return "Type a topic first.";
    default: return "The stage did not take that. Try again.";
  }
}

function formatTime(at) {
  const d = new Date(at);
  if (isNaN(d)) return "";
  const now = new Date();
  const time = d.toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
  if (d.toDateString() === now.toDateString()) return time;
  return d.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + time;
}

function timeEl(at) {
  const t = document.createElement("time");
  const d = at ? new Date(at) : new Date();
  t.dateTime = d.toISOString();
  t.textContent = formatTime(d);
  t.title = d.toLocaleString();
  return t;
}

function textEl(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  el.textContent = text;
  if (JAPANESE_RE.test(text)) el.lang = "ja";
  return el;
}

/** Shows `text` in the notice `el` (none when empty); `code` names its cause, so it can be
 * taken away when the cause is gone. */
function showNotice(el, text, code) {
  el.textContent = text || "";
  el.hidden = !text;
  el.classList.remove("ok");
  el.dataset.code = (text && code) || "";
}

// --- HTTP and sockets ----------------------------------------------------------------------
/** Calls the API: `{ok, body}`, or `{ok: false, error}` with the refusal's reason in words.
 * Throws when the person signed out meanwhile (nothing that comes back after that is shown). */
async function api(method, path, body) {
  const epoch = state.epoch;
  const init = { method, headers: { Authorization: "Bearer " + state.token } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let answer = null;
  try {
    answer = await response.json();
  } catch (_) { /* not JSON */ }
  if (epoch !== state.epoch) throw new Error("signed out");
  if (response.status === 401) {
    signOut("The token is no longer accepted: sign in again.");
    throw new Error("signed out");
  }
  if (response.ok) return { ok: true, body: answer };
  const reason = answer && answer.error && answer.error.message;
  const code = answer && answer.error && answer.error.code;
  return { ok: false, code, error: reason || "The server answered " + response.status + "." };
}

function socketUrl(path) {
  return (location.protocol === "https:" ? "wss:" : "ws:") + "//" + location.host + path;
}

/** The subprotocols of an authenticated socket: the token in hex, in no URL. */
function tokenProtocols() {
  const hex = Array.from(new TextEncoder().encode(state.token), (b) => b.toString(16).padStart(2, "0")).join("");
  return ["ghost", "ghost.token." + hex];
}

// --- Signing in and out ----------------------------------------------------------------------
$("signin-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const token = $("signin-token").value.trim();
  if (!token) return;
  $("signin-error").textContent = "";
  $("signin-submit").disabled = true;
  state.token = token;
  connectLive();
});

/** The socket every signed-in page keeps: it also tells whether the token is right. */
function connectLive() {
  if (state.live) return;
  const ws = new WebSocket(socketUrl("/api/live"));
  state.live = ws;
  ws.onopen = () => ws.send(JSON.stringify({ type: "auth", token: state.token }));
  ws.onmessage = (event) => onLive(ws, JSON.parse(event.data));
  ws.onclose = () => {
    if (state.live !== ws) return;
    state.live = null;
    liveStatus(false);
    if (state.sending) {
      // Not known to be taken: it stays in the box.
      state.sending = null;
      $("chat-send").disabled = false;
      showNotice($("chat-notice"), refusalText("not_connected"), "not_connected");
    }
    if (!state.signedIn) {
      $("signin").hidden = false;
      $("signin-submit").disabled = false;
      $("signin-submit").textContent = "Sign in";
      if (!$("signin-error").textContent) $("signin-error").textContent = "Could not reach the server. Try again in a moment.";
      $("signin-token").focus();
      return;
    }
    // Watching again brings back everything said meanwhile.
    clearTimeout(state.reconnect);
    state.reconnect = setTimeout(() => { if (state.signedIn && !state.live) connectLive(); }, 2000);
  };
}

function onLive(ws, frame) {
  if (state.live !== ws) return;
  switch (frame.type) {
    case "ready":
      state.persona = frame.persona;
      state.names = frame.names || {};
      state.maxChars = frame.max_message_chars || state.maxChars;
      state.autonomySession = frame.autonomy_session_id || "console";
      state.recall = !!frame.recall;
      stageCast(frame.stage_cast);
      moodPersonas();
      liveStatus(true);
      // Connected again: "Not connected" is no longer so.
      if ($("chat-notice").dataset.code === "not_connected") showNotice($("chat-notice"), "");
      if (!state.signedIn) signedIn();
      else if (state.session) watch(state.session);
      break;
    case "error":
      if (frame.code === "unauthorized") {
        state.live = null;
        signOut(state.signedIn ? "The token is no longer accepted: sign in again." : "That token is not right.");
      } else {
        showNotice($("chat-notice"), "The server could not do that just now. Try again in a moment.");
      }
      break;
    case "history": onHistory(frame); break;
    case "message": if (frame.session_id === state.session) showMessage(frame, true); listTouched(frame.session_id, frame); break;
    case "turn": if (frame.session_id === state.session) onTurn(frame); break;
    case "token": onToken(frame); break;
    case "reset": if (state.pending) { state.pending.text.textContent = ""; state.pending.li.dataset.tokens = "0"; } break;
    case "sent": onSent(frame); break;
    case "refused": onRefused(frame); break;
  }
}

function liveStatus(live) {
  $("events-status").textContent = live ? "Live" : "Offline";
  $("events-status").classList.toggle("live", live);
}

function signedIn() {
  state.signedIn = true;
  sessionStorage.setItem(TOKEN_KEY, state.token);
  $("signin-token").value = "";
  $("signin-submit").disabled = false;
  $("signin-submit").textContent = "Sign in";
  $("signin").hidden = true;
  $("app").hidden = false;
  connectEvents();
  route();
  refreshSessionsLater();
  // Signed in to a conversation: the keyboard goes to the message box.
  if (state.view === "chat") $("chat-text").focus();
}

/** Signed out: every socket closed, every view emptied, nothing of the session left. */
function signOut(message) {
  state.epoch += 1;
  state.signedIn = false;
  state.token = "";
  sessionStorage.removeItem(TOKEN_KEY);
  for (const key of Object.keys(sessionStorage)) if (key.startsWith(DRAFT_KEY)) sessionStorage.removeItem(key);
  localStorage.removeItem(SESSION_KEY);
  clearTimeout(state.reconnect);
  clearTimeout(state.linking);
  clearTimeout(state.listTimer);
  clearTimeout(state.stageRejoin);
  for (const key of ["live", "events", "stage"]) {
    const ws = state[key];
    state[key] = null;
    if (ws) ws.close();
  }
  Object.assign(state, {
    persona: "", names: {}, session: "", turn: null, pending: null, sending: null,
    target: "", listBefore: null, unseen: 0, tickAsked: "", stageRunning: false, stageQueued: null, view: "", linking: null,
    recall: false, memoryTarget: {},
  });
  state.memoryLoads += 1;
  for (const id of ["chat-log", "session-list", "activity-log", "stage-log", "mood-current",
    "memory-interest", "memory-states", "memory-preferences", "memory-states-list", "memory-preferences-list"]) {
    $(id).replaceChildren();
  }
  $("memory-person").replaceChildren(new Option("everyone", ""));
  stageCast([]);
  $("mood-personas").replaceChildren();
  memoryPeople.clear();
  memoryRead = { evidence: {}, preference_evidence: {}, history: {} };
  clearReminders();
  for (const id of ["chat-text", "stage-text", "stage-id", "mood-persona", "new-session", "memory-persona"]) $(id).value = "";
  for (const id of ["chat-notice", "stage-error", "stage-id-error", "mood-error", "mood-persona-error", "memory-error", "memory-edit-error"]) showNotice($(id), "");
  for (const id of ["chat-title", "chat-sub", "activity-note", "memory-note"]) $(id).textContent = "";
  activityGroups.clear();
  activityOwner.clear();
  shownActivity.clear();
  badge();
  document.title = "Ghost console";
  $("stage-status").textContent = "Not watching.";
  $("app").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = message || "";
  $("signin-submit").disabled = false;
  $("signin-submit").textContent = "Sign in";
  history.replaceState(null, "", location.pathname);
  $("signin-token").focus();
}
$("sign-out").addEventListener("click", () => signOut("Signed out."));

// --- Views and addresses ---------------------------------------------------------------------
/** #/chat/<session>[/<event id>], #/chats, #/activity, #/stage[/<id>], #/mood,
 * #/memory[?persona=&person=&state=|preference=], #/reminders[?person=]. */
function route() {
  if (!state.signedIn) return;
  const hash = location.hash.replace(/^#\/?/, "");
  const q = hash.indexOf("?");
  const query = new URLSearchParams(q < 0 ? "" : hash.slice(q + 1));
  const parts = (q < 0 ? hash : hash.slice(0, q)).split("/").map((p) => {
    try { return decodeURIComponent(p); } catch (_) { return ""; }
  });
  let view = parts[0] || "chat";
  if (!["chat", "chats", "activity", "stage", "mood", "memory", "reminders"].includes(view)) view = "chat";
  const section = view === "chats" ? "chat" : view;
  for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== "view-" + section;
  for (const tab of document.querySelectorAll("#tabs a")) {
    tab.classList.toggle("active", tab.dataset.view === section);
    if (tab.dataset.view === section) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  $("view-chat").classList.toggle("show-list", view === "chats");
  const entering = state.view !== view;
  state.view = view;
  if (section === "chat") {
    const wanted = parts[1] && SESSION_RE.test(parts[1]) ? parts[1] : state.session || localStorage.getItem(SESSION_KEY) || "console";
    state.target = parts[2] || "";
    // The address names the conversation shown (a reload comes back to it).
    if (parts[1] !== wanted || view === "chats") {
      const address = view === "chats" ? "#/chats" : "#/chat/" + encodeURIComponent(wanted) + (state.target ? "/" + encodeURIComponent(state.target) : "");
      if (location.hash !== address) history.replaceState(null, "", address);
    }
    if (wanted !== state.session) openSession(wanted);
    else showTarget();
    if (entering) loadSessions();
  }
  if (section === "activity") activitySeen(entering);
  if (section === "stage") {
    const id = parts[1] || "";
    if (id && STAGE_RE.test(id) && (!state.stage || state.stage.stageId !== id)) {
      $("stage-id").value = id;
      watchStage(id);
    }
  }
  if (section === "mood" && entering) {
    loadMood();
    loadMemory();
  }
  if (section === "memory") openMemory(query);
  if (section === "reminders") openReminders(query, entering);
  document.title = { chat: "Chat", chats: "Conversations", activity: "Activity", stage: "Stage", mood: "Mood", memory: "Memory", reminders: "Reminders" }[view] + " · Ghost console";
}
window.addEventListener("hashchange", route);

// --- Conversation list -------------------------------------------------------------------------
async function loadSessions(more) {
  try {
    const query = "?limit=30" + (more && state.listBefore != null ? "&before=" + state.listBefore : "");
    const answer = await api("GET", "/api/sessions" + query);
    if (!answer.ok) return;
    const body = answer.body;
    const unread = new Set([...document.querySelectorAll("#session-list li.unread")].map((li) => li.dataset.session));
    if (!more) $("session-list").replaceChildren();
    for (const s of body.sessions) sessionItem(s.session_id, s.last, false);
    state.listBefore = body.next_before;
    $("list-more").hidden = body.next_before == null;
    if (!more && !body.sessions.some((s) => s.session_id === state.session) && state.session) {
      sessionItem(state.session, null, true);
    }
    for (const id of unread) document.querySelector('#session-list li[data-session="' + CSS.escape(id) + '"]')?.classList.add("unread");
    markActiveSession();
  } catch (_) { /* signed out meanwhile */ }
}

/** While Chat is shown, the list is read again now and then (messages in other
 * conversations, from LINE or Slack, reach it this way). */
function refreshSessionsLater() {
  clearTimeout(state.listTimer);
  state.listTimer = setTimeout(() => {
    if (!state.signedIn) return;
    if (state.view.startsWith("chat") && !document.hidden && state.listBefore == null) loadSessions();
    refreshSessionsLater();
  }, 15000);
}
$("list-more").addEventListener("click", () => loadSessions(true));

/** A conversation's name for people: where it happens (LINE, Slack) and with whom. */
function conversationName(id) {
  const [channel, second, third] = id.split(":");
  // line:user:<id>, line:group:<id>, line:room:<id>; slack:<channel>[:<thread>].
  if (channel === "line" && third) return "LINE " + ({ group: "group · ", room: "room · " }[second] || "· ") + third;
  if (channel === "slack" && second) return "Slack · " + second + (third ? " · thread" : "");
  return id;
}

/** A conversation in the list (moved to the top when `first`), with its last message. */
function sessionItem(id, last, first) {
  let li = document.querySelector('#session-list li[data-session="' + CSS.escape(id) + '"]');
  if (!li) {
    li = document.createElement("li");
    li.dataset.session = id;
    const a = document.createElement("a");
    a.href = "#/chat/" + encodeURIComponent(id);
    a.append(textEl("span", "name", conversationName(id)), document.createElement("time"), textEl("span", "last", ""));
    a.title = id;
    li.appendChild(a);
    $("session-list").appendChild(li);
  }
  if (first) $("session-list").prepend(li);
  if (last) {
    const who = last.role === "user" ? (last.source === "http" ? "You: " : "") : name(last.speaker) + ": ";
    const lastEl = li.querySelector(".last");
    lastEl.textContent = who + last.text.replace(/\s+/g, " ");
    lastEl.lang = JAPANESE_RE.test(last.text) ? "ja" : "";
    li.querySelector("time").replaceWith(timeEl(last.recorded_at));
  }
  $("session-empty").hidden = $("session-list").children.length > 0;
  return li;
}

function markActiveSession() {
  for (const li of document.querySelectorAll("#session-list li")) {
    const active = li.dataset.session === state.session;
    li.classList.toggle("active", active);
    if (active) li.classList.remove("unread");
  }
}

/** Something was said in `id`: to the top of the list, marked unread unless open. */
function listTouched(id, last) {
  const li = sessionItem(id, last, true);
  if (id !== state.session) li.classList.add("unread");
  markActiveSession();
}

$("list-new").addEventListener("click", () => {
  $("new-form").hidden = !$("new-form").hidden;
  if (!$("new-form").hidden) $("new-session").focus();
});
$("new-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const id = $("new-session").value.trim();
  if (!SESSION_RE.test(id) || id === "." || id === "..") {
    $("new-session").setCustomValidity("Letters, digits and - _ . : @ only, up to 128.");
    $("new-session").reportValidity();
    return;
  }
  $("new-session").value = "";
  $("new-form").hidden = true;
  location.hash = "#/chat/" + encodeURIComponent(id);
});
$("new-session").addEventListener("input", () => $("new-session").setCustomValidity(""));

// --- The open conversation ---------------------------------------------------------------------
function openSession(id) {
  if (state.session) saveDraft();
  state.session = id;
  $("chat-text").value = sessionStorage.getItem(DRAFT_KEY + id) || "";
  autosize($("chat-text"));
  state.turn = null;
  state.pending = null;
  localStorage.setItem(SESSION_KEY, id);
  $("chat-log").replaceChildren();
  $("chat-title").textContent = conversationName(id);
  $("chat-title").title = id;
  subtitle();
  showNotice($("chat-notice"), "");
  $("chat-text").placeholder = "Message " + personaName();
  markActiveSession();
  watch(id);
}

/** The open conversation's unsent text, kept in this tab (gone once sent or emptied). */
function saveDraft() {
  if (!state.session || !state.signedIn) return;
  const text = $("chat-text").value;
  if (text) sessionStorage.setItem(DRAFT_KEY + state.session, text);
  else sessionStorage.removeItem(DRAFT_KEY + state.session);
}

function watch(id) {
  if (state.live && state.live.readyState === WebSocket.OPEN) {
    state.live.send(JSON.stringify({ type: "watch", session_id: id }));
  }
}

function subtitle() {
  const running = state.turn && state.turn.state === "running";
  $("chat-sub").textContent = "with " + personaName() + (running ? " · writing a reply…" : "");
}

function onHistory(frame) {
  if (frame.session_id !== state.session) return;
  $("chat-log").replaceChildren();
  state.pending = null;
  for (const m of frame.messages) showMessage(m, false);
  if (!frame.messages.length) {
    const li = textEl("li", "status", "No messages yet. Say something to " + personaName() + ".");
    li.id = "chat-empty";
    $("chat-log").appendChild(li);
  }
  $("chat-text").placeholder = "Message " + personaName();
  subtitle();
  showTarget();
  scrollDown(true);
}

/** The bottom of the log is in view (new messages then keep it there). */
function nearBottom(log) {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 80;
}

function scrollDown(force) {
  const log = $("chat-log");
  if (force || nearBottom(log)) log.scrollTop = log.scrollHeight;
}

function whoOf(m) {
  if (m.role === "user") {
    if (m.source === "http") return "You";
    const platform = { line: "LINE", slack: "Slack" }[m.source] || m.source;
    return platform + " · " + m.speaker;
  }
  return name(m.speaker);
}

/** A message bubble: who, when, what; `label` says more of how it came (on its own). */
function bubble(kind, who, at, text, label) {
  const li = document.createElement("li");
  li.className = kind;
  const meta = document.createElement("div");
  meta.className = "meta";
  meta.appendChild(textEl("span", "who", who));
  if (label) meta.appendChild(textEl("span", "label", label));
  meta.appendChild(timeEl(at));
  const body = textEl("div", "text", text);
  li.append(meta, body);
  return { li, text: body, meta };
}

/** Shows a stored message once (it may come with the history, live, and as `sent`). */
function showMessage(m, live) {
  const known = m.event_id && document.querySelector('#chat-log li[data-event-id="' + CSS.escape(m.event_id) + '"]');
  if (known) {
    if (m.position != null) known.dataset.position = m.position;
    return;
  }
  $("chat-empty")?.remove();
  const follow = nearBottom($("chat-log"));
  let b;
  if (live && m.role === "assistant" && m.source !== "autonomy_message" && state.pending) {
    // The reply being written is this one: it becomes the stored reply.
    b = state.pending;
    state.pending = null;
    b.li.className = "persona done";
    b.text.textContent = m.text;
    b.text.lang = JAPANESE_RE.test(m.text) ? "ja" : "";
    b.meta.querySelector("time, .typing").replaceWith(timeEl(m.recorded_at));
  } else {
    let kind = m.role === "user" ? "user" : "persona";
    const own = m.source === "autonomy_message";
    if (own) kind += " autonomy" + (m.display === "notify" ? " notify" : "");
    // Said without being asked: a label anyone can see (a colour bar and a tooltip are not
    // seen on a phone, nor by a screen reader).
    const label = own ? (m.display === "notify" ? "notification, on its own" : "on its own") : "";
    b = bubble(kind, whoOf(m), m.recorded_at, m.text, label);
    if (m.role === "assistant" && m.source !== "autonomy_message") b.li.classList.add("done");
    $("chat-log").insertBefore(b.li, placeFor(m.position));
  }
  if (m.event_id) b.li.dataset.eventId = m.event_id;
  if (m.position != null) b.li.dataset.position = m.position;
  if (m.result_event_id) b.li.dataset.resultEventId = m.result_event_id;
  if (m.result_event_id) linkActivity(m, state.session);
  if (m.role === "assistant" && m.source !== "autonomy_message" && m.event_id && state.recall) showRecalls(b.li, m.event_id);
  scrollDown(follow || m.role === "user");
}

/** What a message at `position` goes before: the first later one (a message can be listed
 * after later ones), else the reply being written, else nothing (the end). */
function placeFor(position) {
  const pending = state.pending && state.pending.li.isConnected ? state.pending.li : null;
  if (position == null) return pending;
  for (const li of document.querySelectorAll("#chat-log li[data-position]")) {
    if (Number(li.dataset.position) > position) return li;
  }
  return pending;
}

/** The bubble of the reply being written (a `running` turn, or tokens arriving). */
function pendingBubble() {
  if (state.pending && state.pending.li.isConnected) return state.pending;
  $("chat-empty")?.remove();
  const follow = nearBottom($("chat-log"));
  const b = bubble("persona pending", personaName(), null, "");
  b.meta.querySelector("time").replaceWith(textEl("span", "typing", "writing…"));
  b.li.dataset.tokens = "0";
  $("chat-log").appendChild(b.li);
  state.pending = b;
  scrollDown(follow);
  return b;
}

function onTurn(frame) {
  state.turn = frame;
  if (frame.state === "running") {
    pendingBubble();
  } else {
    // A message refused while the reply was written can go now.
    if ($("chat-notice").dataset.code === "busy" && !$("chat-notice").hidden) {
      showNotice($("chat-notice"), personaName() + " has answered: your message can be sent now.");
      $("chat-notice").classList.add("ok");
      $("chat-notice").dataset.code = "";
    }
    if (state.pending) state.pending.li.remove();
    state.pending = null;
    if (frame.state === "failed") {
      const key = "failed-" + frame.turn;
      if (!document.getElementById(key)) {
        const li = textEl("li", "notice", failureText(frame.code, frame.message));
        li.id = key;
        li.dataset.code = frame.code || "";
        $("chat-log").appendChild(li);
        scrollDown(true);
      }
    }
  }
  subtitle();
}

function onToken(frame) {
  const b = pendingBubble();
  b.li.classList.replace("pending", "streaming");
  b.text.textContent += frame.delta;
  if (JAPANESE_RE.test(frame.delta)) b.text.lang = "ja";
  // How many token frames built the reply (shows it streamed; the browser test reads it).
  b.li.dataset.tokens = String(Number(b.li.dataset.tokens || 0) + 1);
  scrollDown(false);
}

// --- What a reply recalled -----------------------------------------------------------------
/** Where a recalled memory is in Memory (`state:<id>`, `preference:<domain>/<key>/<polarity>`);
 * "" for what is no memory of the persona's (`event:<id>`: something said). */
function recallHref(id, persona) {
  const address = (key, value) => "#/memory?" + new URLSearchParams(persona ? { persona, [key]: value } : { [key]: value });
  if (id.startsWith("state:")) return address("state", id.slice(6));
  if (id.startsWith("preference:")) return address("preference", id.slice(11));
  return "";
}

/** How long to wait before each ask for a reply's recall (ms). */
const RECALL_RETRY_MS = [0, 500, 1000, 2000, 4000, 8000];

/** Under a reply, the memories recall selected for it (nothing when none). `data-recall`
 * says how it went: loading, none, shown, or failed. */
async function showRecalls(li, eventId) {
  if (li.dataset.recall) return;
  li.dataset.recall = "loading";
  try {
    // The recall is recorded off the reply's path, so it can land a moment after the reply
    // ends: "none recorded" (`recall: null`) is asked again a few times before it means none.
    let answer;
    for (const wait of RECALL_RETRY_MS) {
      await new Promise((done) => setTimeout(done, wait));
      answer = await api("GET", "/api/recalls/" + encodeURIComponent(eventId));
      if (!answer.ok || (answer.body && answer.body.recall)) break;
    }
    const recall = answer.ok && answer.body && answer.body.recall;
    if (!recall) {
      li.dataset.recall = answer.ok ? "none" : "failed";
      return;
    }
    const ids = recall.selected_ids || [];
    const texts = recall.selected_texts || [];
    if (!ids.length) {
      li.dataset.recall = "none";
      return;
    }
    const box = document.createElement("div");
    box.className = "recalls";
    const list = document.createElement("ul");
    ids.forEach((id, i) => {
      const href = recallHref(id, recall.persona);
      const el = textEl(href ? "a" : "span", "recall", texts[i] || id);
      if (href) el.href = href;
      el.title = id;
      const item = document.createElement("li");
      item.appendChild(el);
      list.appendChild(item);
    });
    box.append(textEl("span", "label", "Recalled"), list);
    const follow = nearBottom($("chat-log"));
    li.appendChild(box);
    li.dataset.recall = "shown";
    scrollDown(follow);
  } catch (_) { /* signed out meanwhile */ }
}

// Sending: the text stays in the box until the server has taken it.
function sendChat() {
  const text = $("chat-text").value;
  if (!text.trim() || state.sending) return;
  if ([...text].length > state.maxChars) {
    showNotice($("chat-notice"), tooLong([...text].length), "text_too_long");
    return;
  }
  if (!state.live || state.live.readyState !== WebSocket.OPEN) {
    showNotice($("chat-notice"), refusalText("not_connected"), "not_connected");
    return;
  }
  showNotice($("chat-notice"), "");
  const ref = state.nextRef++;
  state.sending = { ref, text, session: state.session };
  $("chat-send").disabled = true;
  state.live.send(JSON.stringify({ type: "send", session_id: state.session, text, ref }));
}

function onSent(frame) {
  const sending = state.sending;
  if (!sending || sending.ref !== frame.ref) return;
  state.sending = null;
  $("chat-send").disabled = false;
  if ($("chat-text").value === sending.text) $("chat-text").value = "";
  if (sending.session === state.session) saveDraft();
  else if (sessionStorage.getItem(DRAFT_KEY + sending.session) === sending.text) sessionStorage.removeItem(DRAFT_KEY + sending.session);
  autosize($("chat-text"));
  if (sending.session === state.session) {
    showMessage({ event_id: frame.event_id, role: "user", source: "http", speaker: "user", text: sending.text, recorded_at: new Date().toISOString() }, true);
  }
  listTouched(sending.session, { role: "user", source: "http", text: sending.text, recorded_at: new Date().toISOString() });
}

function onRefused(frame) {
  const sending = state.sending;
  if (!sending || sending.ref !== frame.ref) return;
  state.sending = null;
  $("chat-send").disabled = false;
  showNotice($("chat-notice"), refusalText(frame.code, frame.message), frame.code);
  $("chat-text").focus();
}

$("chat-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sendChat();
});

/** Enter sends (so do Ctrl+Enter and Cmd+Enter); Shift+Enter is a new line; an IME
 * composing text keeps its Enter. On a touch keyboard (no Shift) Return is a new line and
 * the button sends: the hint `hint` says which, in the words of the keyboard at hand. */
function enterSends(textarea, send, hint, action) {
  textarea.enterKeyHint = TOUCH ? "enter" : "send";
  $(hint).textContent = TOUCH
    ? "Tap " + action + " to " + action.toLowerCase() + " · Return for a new line"
    : "Enter to " + action.toLowerCase() + " · Shift+Enter for a new line";
  textarea.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || e.shiftKey || e.isComposing || e.keyCode === 229) return;
    if (TOUCH && !e.ctrlKey && !e.metaKey) return;
    e.preventDefault();
    send();
  });
  textarea.addEventListener("input", () => autosize(textarea));
}

function autosize(textarea) {
  textarea.style.height = "auto";
  textarea.style.height = Math.min(textarea.scrollHeight + 2, 160) + "px";
}
enterSends($("chat-text"), sendChat, "chat-hint", "Send");
$("chat-text").addEventListener("input", () => {
  saveDraft();
  // The too-long notice follows the text: its length while too long, gone once it fits.
  const notice = $("chat-notice");
  if (notice.dataset.code !== "text_too_long") return;
  const length = [...$("chat-text").value].length;
  if (length > state.maxChars) showNotice(notice, tooLong(length), "text_too_long");
  else showNotice(notice, "");
});

/** #/chat/<session>/<event id>: that message, scrolled to and marked. */
function showTarget() {
  if (!state.target) return;
  const li = document.querySelector('#chat-log li[data-event-id="' + CSS.escape(state.target) + '"]');
  if (!li) return;
  for (const old of document.querySelectorAll("#chat-log li.target")) old.classList.remove("target");
  li.classList.add("target");
  li.scrollIntoView({ block: "center" });
}

// --- Start: once every script of the console is loaded ------------------------------------------
document.addEventListener("DOMContentLoaded", () => {
  if (state.token) {
    // Signs in when the stored token is still right.
    $("signin-submit").disabled = true;
    $("signin-submit").textContent = "Signing in…";
    $("signin").hidden = false;
    connectLive();
  } else {
    $("signin").hidden = false;
    $("signin-token").focus();
  }
});
