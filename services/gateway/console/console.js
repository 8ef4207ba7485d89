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
//   (GET /api/recalls/<reply event id>), each a link to it in Memory.
// Each view has its own address (#/chat/<session>, #/chats, #/activity, #/stage/<id>,
// #/mood, #/memory?persona=&person=&state=<id>|preference=<domain>/<key>/<polarity>). The token stays in this tab's session storage and goes in no URL: the live
// socket takes it in its first frame, the other sockets as a subprotocol. All text goes in
// with textContent, never as HTML. Plain browser JavaScript: no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "ghost.token";
const SESSION_KEY = "ghost.session";
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
  unseen: 0,
  stageRunning: false,
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
    case "body_too_large": return "This message is too long (at most " + state.maxChars + " characters). It is kept so you can shorten it.";
    case "empty_text": return "Type a message first.";
    case "invalid_session_id": return "This conversation name cannot be used: letters, digits and - _ . : @ only, up to 128.";
    case "store_unavailable": return "The server cannot reach its database just now. Your message is kept: try again in a moment.";
    case "idempotency_conflict": return "This message clashes with an earlier one. It is kept: send it again.";
    case "not_connected": return "Not connected to the server. Your message is kept and can be sent once the connection is back.";
    default: return "The server did not take this message" + (message ? " (" + message + ")" : "") + ". It is kept: try again.";
  }
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

function showNotice(el, text) {
  el.textContent = text || "";
  el.hidden = !text;
  el.classList.remove("ok");
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
  return { ok: false, error: reason || "The server answered " + response.status + "." };
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
      showNotice($("chat-notice"), refusalText("not_connected"));
    }
    if (!state.signedIn) {
      $("signin").hidden = false;
      $("signin-submit").disabled = false;
      $("signin-submit").textContent = "Sign in";
      if (!$("signin-error").textContent) $("signin-error").textContent = "Could not reach the server. Try again in a moment.";
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
      liveStatus(true);
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
}

/** Signed out: every socket closed, every view emptied, nothing of the session left. */
function signOut(message) {
  state.epoch += 1;
  state.signedIn = false;
  state.token = "";
  sessionStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(SESSION_KEY);
  clearTimeout(state.reconnect);
  clearTimeout(state.linking);
  clearTimeout(state.listTimer);
  for (const key of ["live", "events", "stage"]) {
    const ws = state[key];
    state[key] = null;
    if (ws) ws.close();
  }
  Object.assign(state, {
    persona: "", names: {}, session: "", turn: null, pending: null, sending: null,
    target: "", listBefore: null, unseen: 0, stageRunning: false, view: "", linking: null,
    recall: false, memoryTarget: {},
  });
  state.memoryLoads += 1;
  for (const id of ["chat-log", "session-list", "activity-log", "stage-log", "mood-current",
    "memory-interest", "memory-states", "memory-preferences", "memory-states-list", "memory-preferences-list"]) {
    $(id).replaceChildren();
  }
  $("memory-person").replaceChildren(new Option("everyone", ""));
  for (const id of ["chat-text", "stage-text", "stage-id", "mood-persona", "new-session", "memory-persona"]) $(id).value = "";
  for (const id of ["chat-notice", "stage-error", "mood-error", "memory-error", "memory-edit-error"]) showNotice($(id), "");
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
 * #/memory[?persona=&person=&state=|preference=]. */
function route() {
  if (!state.signedIn) return;
  const hash = location.hash.replace(/^#\/?/, "");
  const q = hash.indexOf("?");
  const query = new URLSearchParams(q < 0 ? "" : hash.slice(q + 1));
  const parts = (q < 0 ? hash : hash.slice(0, q)).split("/").map((p) => {
    try { return decodeURIComponent(p); } catch (_) { return ""; }
  });
  let view = parts[0] || "chat";
  if (!["chat", "chats", "activity", "stage", "mood", "memory"].includes(view)) view = "chat";
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
  if (section === "activity") {
    state.unseen = 0;
    badge();
    if (entering) setTimeout(() => {
      for (const li of document.querySelectorAll("#activity-log > li.unseen")) li.classList.remove("unseen");
    }, 4000);
  }
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
  document.title = { chat: "Chat", chats: "Conversations", activity: "Activity", stage: "Stage", mood: "Mood", memory: "Memory" }[view] + " · Ghost console";
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
  state.session = id;
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

/** A message bubble: who, when, what. */
function bubble(kind, who, at, text) {
  const li = document.createElement("li");
  li.className = kind;
  const meta = document.createElement("div");
  meta.className = "meta";
  meta.append(textEl("span", "who", who), timeEl(at));
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
    if (m.source === "autonomy_message") kind += " autonomy" + (m.display === "notify" ? " notify" : "");
    b = bubble(kind, whoOf(m), m.recorded_at, m.text);
    if (m.role === "assistant" && m.source !== "autonomy_message") b.li.classList.add("done");
    $("chat-log").insertBefore(b.li, placeFor(m.position));
  }
  if (m.event_id) b.li.dataset.eventId = m.event_id;
  if (m.position != null) b.li.dataset.position = m.position;
  if (m.result_event_id) b.li.dataset.resultEventId = m.result_event_id;
  b.li.title = m.source === "autonomy_message" ? "Said on its own" : "";
  if (m.result_event_id) linkActivity(m.result_event_id, state.session, m.event_id, m.text);
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

/** Under a reply, the memories recall selected for it (nothing when none). `data-recall`
 * says how it went: loading, none, shown, or failed. */
async function showRecalls(li, eventId) {
  if (li.dataset.recall) return;
  li.dataset.recall = "loading";
  try {
    const answer = await api("GET", "/api/recalls/" + encodeURIComponent(eventId));
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
    showNotice($("chat-notice"), refusalText("text_too_long"));
    return;
  }
  if (!state.live || state.live.readyState !== WebSocket.OPEN) {
    showNotice($("chat-notice"), refusalText("not_connected"));
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
  const notice = $("chat-notice");
  showNotice(notice, refusalText(frame.code, frame.message));
  notice.dataset.code = frame.code;
  $("chat-text").focus();
}

$("chat-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sendChat();
});

/** Enter sends (so do Ctrl+Enter and Cmd+Enter); Shift+Enter is a new line; an IME
 * composing text keeps its Enter. */
function enterSends(textarea, send) {
  textarea.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" || e.shiftKey || e.isComposing || e.keyCode === 229) return;
    e.preventDefault();
    send();
  });
  textarea.addEventListener("input", () => autosize(textarea));
}

function autosize(textarea) {
  textarea.style.height = "auto";
  textarea.style.height = Math.min(textarea.scrollHeight + 2, 160) + "px";
}
enterSends($("chat-text"), sendChat);

/** #/chat/<session>/<event id>: that message, scrolled to and marked. */
function showTarget() {
  if (!state.target) return;
  const li = document.querySelector('#chat-log li[data-event-id="' + CSS.escape(state.target) + '"]');
  if (!li) return;
  for (const old of document.querySelectorAll("#chat-log li.target")) old.classList.remove("target");
  li.classList.add("target");
  li.scrollIntoView({ block: "center" });
}

// --- Live events: activity, and messages in other conversations (GET /api/events) -------------
function connectEvents() {
  if (state.events) return;
  const ws = new WebSocket(socketUrl("/api/events"), tokenProtocols());
  state.events = ws;
  ws.onmessage = (event) => {
    if (state.events !== ws) return;
    const frame = JSON.parse(event.data);
    if (frame.type === "message") {
      addStep({ kind: "message", event_id: frame.event_id, detail: { result_event_id: frame.result_event_id, session_id: frame.session_id, text: frame.text } });
      // The open conversation gets it over the live socket; the list learns of it here.
      listTouched(frame.session_id, { role: "assistant", speaker: frame.speaker, text: frame.text, recorded_at: new Date().toISOString() });
    } else if (frame.type === "activity") {
      activity(frame);
    }
  };
  ws.onclose = () => {
    if (state.events !== ws) return; // signed out: stay closed
    state.events = null;
    setTimeout(() => { if (state.signedIn && !state.events) connectEvents(); }, 3000);
  };
}

// --- Activity: one card per deliberation -------------------------------------------------------
/** Cards by deliberation (tick) id. */
const activityGroups = new Map();
/** The deliberation each decision and result belongs to. */
const activityOwner = new Map();

function badge() {
  const el = $("activity-badge");
  el.textContent = state.unseen > 99 ? "99+" : String(state.unseen);
  el.hidden = state.unseen === 0;
  el.setAttribute("aria-label", state.unseen + " new");
}

/** The deliberation an entry belongs to, and the ids later entries will name it by. */
function ownerOf(frame) {
  const d = frame.detail || {};
  switch (frame.kind) {
    case "decided":
    case "dropped":
      activityOwner.set(frame.event_id, d.tick_event_id);
      return d.tick_event_id || frame.event_id;
    case "started":
      return activityOwner.get(d.decision_event_id) || d.decision_event_id;
    case "result": {
      const owner = activityOwner.get(d.decision_event_id) || d.decision_event_id;
      activityOwner.set(frame.event_id, owner);
      return owner;
    }
    default:
      return activityOwner.get(d.result_event_id) || d.result_event_id || frame.event_id;
  }
}

function card(owner, at, replayed) {
  let g = activityGroups.get(owner);
  if (g) return g;
  const li = document.createElement("li");
  li.className = "tick";
  li.dataset.tick = owner;
  const head = document.createElement("div");
  head.className = "tick-head";
  const title = document.createElement("strong");
  title.textContent = "Deliberation";
  head.append(title, timeEl(at));
  const steps = document.createElement("ol");
  steps.className = "steps";
  li.append(head, steps);
  if (!replayed && state.view !== "activity") li.classList.add("unseen");
  $("activity-log").prepend(li);
  g = { li, title, steps };
  activityGroups.set(owner, g);
  while ($("activity-log").children.length > ACTIVITY_LIMIT) {
    const last = $("activity-log").lastElementChild;
    activityGroups.delete(last.dataset.tick);
    last.remove();
  }
  $("activity-empty").hidden = true;
  return g;
}

const ACTIONS = { web_research: "look something up on the web" };

/** What an entry says: its kind in words, a title, more text, links, details. */
function describe(frame) {
  const d = frame.detail || {};
  switch (frame.kind) {
    case "decided": {
      const decision = d.decision || {};
      const act = decision.decision === "do_action";
      const what = ACTIONS[decision.action_type] || (decision.capability || "act").replace(/_/g, " ");
      const delivery = decision.console_delivery ? " and tell you in " + (decision.console_delivery.mode === "notify" ? "a notification" : "the chat") : "";
      return {
        kind: "Decided",
        capability: decision.capability || "",
        title: act ? "Decided to " + what + delivery + "." : "Decided to do nothing for now.",
        what: act ? what.charAt(0).toUpperCase() + what.slice(1) : "Nothing to do",
        text: decision.reason || "",
      };
    }
    case "dropped": {
      const why = { invalid_decision: "The model's decision could not be read, so nothing was done." }[d.reason] ||
        "The decision was set aside (" + String(d.reason || "no reason given").replace(/_/g, " ") + ").";
      return { kind: "Set aside", capability: "", title: why, what: "Set aside", details: [d.reason].concat(d.errors || []).filter(Boolean).join("\n") };
    }
    case "started":
      return { kind: "Started", capability: d.capability || "", title: "Started." };
    case "result": {
      const payload = d.result_payload || {};
      const ok = /^(ok|success|succeeded|done)$/i.test(d.result_status || "");
      const links = Array.isArray(payload.source_urls) ? payload.source_urls : [];
      let details = "";
      if (d.agent_job) details = JSON.stringify(d.agent_job);
      else if (!links.length && Object.keys(payload).length) details = JSON.stringify(payload).slice(0, 300);
      return {
        kind: "Result", capability: d.capability_name || "",
        title: ok ? "Done." : "Did not work out (" + String(d.result_status || "unknown").replace(/_/g, " ") + ").",
        outcome: ok ? "done" : "did not work out", links, details,
      };
    }
    case "message":
      return { kind: "Message", capability: "", title: "Said in " + (d.session_id || "the chat") + ":", text: d.text || "", outcome: "told you" };
    case "message_failed":
      return { kind: "Message failed", capability: "", title: "Could not send its message.", outcome: "message failed", details: d.error || "" };
    default:
      return { kind: frame.kind, capability: "", title: "", details: JSON.stringify(d) };
  }
}

/** Entries already shown (the past is replayed on every connection, reconnections too). */
const shownActivity = new Set();

function activity(frame) {
  if (addStep(frame) && !frame.replayed && state.view !== "activity") {
    state.unseen += 1;
    badge();
  }
  // The message about a result shown from the past is in the persona's conversation.
  if (frame.kind === "result" && frame.replayed && !state.linking) {
    state.linking = setTimeout(linkPastMessages, 300);
  }
}

/** Adds an entry to its deliberation's card; false when it was there already. */
function addStep(frame) {
  const key = frame.kind + ":" + frame.event_id;
  if (shownActivity.has(key)) return false;
  shownActivity.add(key);
  const about = describe(frame);
  const g = card(ownerOf(frame), frame.recorded_at, frame.replayed);
  const li = document.createElement("li");
  li.className = "kind-" + frame.kind;
  li.dataset.kind = frame.kind;
  li.dataset.eventId = frame.event_id;
  if (frame.replayed) li.classList.add("replayed");
  const head = document.createElement("div");
  head.className = "step-head";
  head.append(textEl("span", "kind", about.kind), textEl("span", "capability", about.capability), timeEl(frame.recorded_at));
  li.append(head, textEl("div", "title", about.title));
  if (about.text) li.appendChild(textEl("div", "text", about.text));
  if (about.links && about.links.length) {
    const ul = document.createElement("ul");
    ul.className = "links";
    for (const url of about.links) {
      const a = document.createElement("a");
      a.href = url;
      a.textContent = url;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      const item = document.createElement("li");
      item.appendChild(a);
      ul.appendChild(item);
    }
    li.appendChild(ul);
  }
  if (about.details) {
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = "Technical details";
    details.append(summary, textEl("pre", "", about.details));
    li.appendChild(details);
  }
  if (frame.kind === "message") {
    const a = document.createElement("a");
    a.className = "open-message";
    a.href = "#/chat/" + encodeURIComponent(frame.detail.session_id || "console") + "/" + encodeURIComponent(frame.event_id);
    a.textContent = "Open in chat";
    li.appendChild(a);
  }
  g.steps.appendChild(li);
  // The card says what was decided and how far it got.
  if (about.what) g.what = about.what;
  if (about.outcome) g.outcome = about.outcome;
  g.title.textContent = [g.what || "Deliberation", g.outcome].filter(Boolean).join(" · ");
  if (!frame.replayed && state.view !== "activity") g.li.classList.add("unseen");
  return true;
}

/** A message the persona said about a result: its card gets a step linking to it. */
function linkActivity(resultEventId, sessionId, eventId, text) {
  if (!activityOwner.has(resultEventId) || shownActivity.has("message:" + eventId)) return;
  addStep({ kind: "message", event_id: eventId, replayed: true, detail: { result_event_id: resultEventId, session_id: sessionId, text } });
}

/** The past results' messages, from the conversation the persona's messages go to. */
async function linkPastMessages() {
  const session = state.autonomySession || "console";
  try {
    const answer = await api("GET", "/api/sessions/" + encodeURIComponent(session) + "/messages");
    if (!answer.ok) return;
    for (const m of answer.body.messages) {
      if (m.result_event_id) linkActivity(m.result_event_id, session, m.event_id, m.text);
    }
  } catch (_) { /* signed out meanwhile */ }
}

$("activity-clear").addEventListener("click", () => {
  $("activity-log").replaceChildren();
  activityGroups.clear();
  $("activity-empty").hidden = false;
});

$("activity-tick").addEventListener("click", async () => {
  $("activity-tick").disabled = true;
  $("activity-note").textContent = "";
  try {
    const answer = await api("POST", "/api/autonomy/tick");
    $("activity-note").textContent = answer.ok
      ? personaName() + " is deliberating; what it decides shows up here."
      : "Could not ask for a deliberation: " + answer.error;
  } catch (_) {
    if (state.signedIn) $("activity-note").textContent = "Could not reach the server.";
  } finally {
    setTimeout(() => { $("activity-tick").disabled = false; }, 1500);
  }
});

// --- Stage ----------------------------------------------------------------------------------
function stageStatus(text) {
  $("stage-status").textContent = text;
}

function stageControls() {
  const open = state.stage && state.stage.readyState === WebSocket.OPEN;
  $("stage-send").disabled = !open || state.stageRunning;
  $("stage-stop").disabled = !open || !state.stageRunning;
}

$("stage-join").addEventListener("submit", (e) => {
  e.preventDefault();
  const id = $("stage-id").value.trim() || "default";
  if (!STAGE_RE.test(id)) {
    showNotice($("stage-error"), "A stage name is 1 to 64 letters, digits, - or _.");
    return;
  }
  location.hash = "#/stage/" + encodeURIComponent(id);
  if (state.stage && state.stage.stageId === id && state.stage.readyState <= WebSocket.OPEN) return;
  watchStage(id);
});

function watchStage(id) {
  if (state.stage) {
    const old = state.stage;
    state.stage = null;
    old.close();
  }
  $("stage-log").replaceChildren();
  showNotice($("stage-error"), "");
  state.stageRunning = false;
  // The run so far first (transcript), then what happens.
  const ws = new WebSocket(socketUrl("/api/stage?transcript=true&stage_id=" + encodeURIComponent(id)), tokenProtocols());
  ws.stageId = id;
  state.stage = ws;
  stageStatus("Joining " + id + "…");
  stageControls();
  ws.onopen = stageControls;
  ws.onclose = () => {
    if (state.stage !== ws) return;
    state.stage = null;
    stageStatus("Not watching " + id + " any more (the connection closed). Watch to join again.");
    stageControls();
  };
  ws.onmessage = (event) => {
    if (state.stage === ws) stageFrame(id, JSON.parse(event.data));
  };
}

function stageLine(kind, who, text) {
  const log = $("stage-log");
  const follow = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  const li = who ? bubble(kind, who, null, text).li : textEl("li", kind, text);
  if (who) li.querySelector("time").remove();
  log.appendChild(li);
  if (follow) log.scrollTop = log.scrollHeight;
  return li;
}

function stageFrame(id, frame) {
  switch (frame.type) {
    case "ready":
      state.stageRunning = frame.running;
      stageStatus(frame.running ? "Watching " + id + ": a run is going on." : "Watching " + id + ". Give the characters a topic to start a run.");
      break;
    case "user":
      state.stageRunning = true;
      stageLine("user", "Topic", frame.text);
      if (!frame.replayed) stageStatus("Watching " + id + ": the run has started.");
      break;
    case "message":
      stageLine("persona", frame.display_name || name(frame.speaker), frame.text);
      break;
    case "status": {
      const who = name(frame.speaker);
      if (frame.state === "thinking") stageStatus(who + " is thinking…");
      else if (frame.state === "active") stageStatus("Watching " + id + ".");
      break;
    }
    case "control":
      stageLine("status", "", "Next: " + name(frame.next));
      break;
    case "turn_failed":
      stageLine("notice", "", name(frame.speaker) + " could not answer.").dataset.code = frame.code;
      break;
    case "stopping":
      stageStatus("Stopping after the current turn…");
      break;
    case "ended": {
      state.stageRunning = false;
      const turns = frame.turns === 1 ? "1 turn" : frame.turns + " turns";
      const text = {
        stopped: "Stopped after " + turns + ".",
        error: "Ended after " + turns + ": a character could not answer.",
      }[frame.reason] || "Finished after " + turns + ".";
      stageLine("status ended", "", text).dataset.reason = frame.reason;
      if (!frame.replayed) stageStatus(text + " Give a new topic to start again.");
      else stageStatus("Watching " + id + ". " + text);
      break;
    }
    case "error":
      showNotice($("stage-error"), stageErrorText(frame.code));
      break;
  }
  stageControls();
}

function sendStage() {
  const text = $("stage-text").value;
  if (!text.trim() || !state.stage || state.stage.readyState !== WebSocket.OPEN || state.stageRunning) return;
  if ([...text].length > state.maxChars) {
    showNotice($("stage-error"), stageErrorText("text_too_long"));
    return;
  }
  showNotice($("stage-error"), "");
  state.stage.send(JSON.stringify({ type: "user", text }));
  $("stage-text").value = "";
  autosize($("stage-text"));
}
$("stage-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sendStage();
});
enterSends($("stage-text"), sendStage);
$("stage-stop").addEventListener("click", () => {
  if (state.stage && state.stage.readyState === WebSocket.OPEN && state.stageRunning) {
    state.stage.send(JSON.stringify({ type: "stop" }));
    $("stage-stop").disabled = true;
  }
});

// --- Mood ----------------------------------------------------------------------------------
function moodQuery() {
  const persona = $("mood-persona").value.trim();
  return persona ? "?persona=" + encodeURIComponent(persona) : "";
}

function meter(parent, label, value) {
  const row = document.createElement("div");
  row.className = "meter";
  const track = document.createElement("span");
  track.className = "track";
  const fill = document.createElement("span");
  fill.className = "bar-fill";
  fill.style.width = Math.round(Math.max(0, Math.min(1, value)) * 100) + "%";
  track.appendChild(fill);
  row.append(textEl("span", "", label), track, textEl("span", "", Number(value).toFixed(2)));
  parent.appendChild(row);
}

function showMood(answer) {
  const card = $("mood-current");
  card.replaceChildren();
  const title = document.createElement("h3");
  title.id = "mood-summary";
  title.textContent = name(answer.persona) + ": " + answer.state.label +
    (answer.overridden ? " (override)" : " (computed)");
  card.appendChild(title);
  meter(card, "intensity", answer.state.intensity);
  for (const [n, value] of Object.entries(answer.state.components)) meter(card, n, value);
  const policy = answer.state.response_policy;
  meter(card, "cooperation", policy.cooperation);
  meter(card, "refusal bias", policy.refusal_bias);
  card.appendChild(textEl("p", "status", "refusal allowed: " + (policy.refusal_allowed ? "yes" : "no")));
  // The override form starts from what is shown.
  const round = (v) => String(Math.round(Number(v) * 1000) / 1000);
  $("mood-label").value = answer.state.label;
  $("mood-intensity").value = round(answer.state.intensity);
  for (const n of ["joy", "sadness", "anger", "fear"]) $("mood-" + n).value = round(answer.state.components[n] || 0);
  $("mood-cooperation").value = round(policy.cooperation);
  $("mood-refusal-bias").value = round(policy.refusal_bias);
  $("mood-refusal-allowed").checked = !!policy.refusal_allowed;
}

/** Calls the API and shows its answer with `show`, or why not in `notice`. */
async function callAndShow(method, path, body, notice, show) {
  showNotice(notice, "");
  try {
    const answer = await api(method, path, body);
    if (answer.ok) show(answer.body);
    else showNotice(notice, answer.error);
  } catch (_) {
    if (state.signedIn) showNotice(notice, "Could not reach the server.");
  }
}

function moodCall(method, body) {
  return callAndShow(method, "/api/partner_mood" + moodQuery(), body, $("mood-error"), showMood);
}

function loadMood() {
  moodCall("GET");
}
$("mood-which").addEventListener("submit", (e) => {
  e.preventDefault();
  loadMood();
  loadMemory();
});
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
  });
});
$("mood-clear").addEventListener("click", () => moodCall("DELETE"));

// --- Memory (read-only) -----------------------------------------------------------------------
function fact(list, main, detail) {
  const li = document.createElement("li");
  li.append(textEl("span", "text", main), textEl("small", "", detail));
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

function loadMemory() {
  return callAndShow("GET", "/api/memory" + moodQuery(), undefined, $("memory-error"), showMemory);
}

// --- Memory: see, correct, forget ----------------------------------------------------------
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A preference subject's key, as recall names it (NFKC, trimmed, lower case). */
const subjectKey = (subject) => subject.normalize("NFKC").trim().toLowerCase();
const preferenceKey = (p) => p.domain + "/" + subjectKey(p.subject) + "/" + p.polarity;

/** The Memory view's address for the persona and person chosen. */
function memoryAddress() {
  const params = new URLSearchParams();
  const persona = $("memory-persona").value.trim();
  if (persona) params.set("persona", persona);
  if ($("memory-person").value) params.set("person", $("memory-person").value);
  const query = params.toString();
  return "#/memory" + (query ? "?" + query : "");
}

function memoryChosen() {
  const address = memoryAddress();
  if (location.hash === address) loadMemoryView();
  else location.hash = address;
}
$("memory-which").addEventListener("submit", (e) => {
  e.preventDefault();
  memoryChosen();
});
$("memory-person").addEventListener("change", memoryChosen);

/** The view as the address says: persona, person, and the memory to mark. */
function openMemory(query) {
  $("memory-persona").value = query.get("persona") || "";
  personOptions([query.get("person") || ""]);
  $("memory-person").value = query.get("person") || "";
  state.memoryTarget = { state: query.get("state") || "", preference: query.get("preference") || "" };
  showNotice($("memory-edit-error"), "");
  loadMemoryView();
}

/** The person list: everyone, then each person named (kept: the one chosen stays). */
function personOptions(persons) {
  const select = $("memory-person");
  const known = new Set([...select.options].map((o) => o.value));
  for (const p of [...persons].sort()) {
    if (p && !known.has(p)) {
      select.appendChild(new Option(p, p));
      known.add(p);
    }
  }
}

/** Reads the memory (everyone's, for the person list and for edits to check against; then
 * the person's when one is chosen) and shows it. Returns everyone's, or null. */
async function loadMemoryView() {
  const load = ++state.memoryLoads;
  const persona = $("memory-persona").value.trim();
  const person = $("memory-person").value;
  const query = persona ? "?persona=" + encodeURIComponent(persona) : "";
  try {
    const all = await api("GET", "/api/memory" + query);
    if (load !== state.memoryLoads) return all.ok ? all.body : null;
    if (!all.ok) {
      showNotice($("memory-edit-error"), "Cannot show the memory: " + all.error);
      $("memory-states-list").replaceChildren();
      $("memory-preferences-list").replaceChildren();
      return null;
    }
    const persons = new Set();
    for (const s of all.body.states || []) if (s.person) persons.add(s.person);
    for (const p of all.body.preferences || []) persons.add(p.person);
    personOptions(persons);
    let shown = all.body;
    if (person) {
      const one = await api("GET", "/api/memory" + (query ? query + "&" : "?") + "person=" + encodeURIComponent(person));
      if (load !== state.memoryLoads) return all.body;
      if (!one.ok) {
        showNotice($("memory-edit-error"), "Cannot show " + person + "'s memory: " + one.error);
        return all.body;
      }
      shown = one.body;
    }
    showMemoryView(shown);
    forgetPersonActions();
    return all.body;
  } catch (_) {
    if (state.signedIn) showNotice($("memory-edit-error"), "Could not reach the server.");
    return null;
  }
}

function button(className, label, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = className;
  b.textContent = label;
  b.addEventListener("click", onClick);
  return b;
}

/** A memory's buttons, replaced by "Forget for good" / "Keep" when Forget is pressed. */
function memoryActions(li, buttons, forget) {
  const actions = document.createElement("div");
  actions.className = "actions";
  const ask = button("quiet forget", "Forget", () => {
    actions.replaceChildren(
      textEl("span", "status", "Forget this memory? It cannot be brought back."),
      button("forget-confirm danger", "Forget for good", forget),
      button("quiet cancel", "Keep", () => actions.replaceChildren(...buttons, ask)),
    );
  });
  actions.append(...buttons, ask);
  return actions;
}

function showMemoryView(memory) {
  const states = $("memory-states-list");
  const preferences = $("memory-preferences-list");
  states.replaceChildren();
  preferences.replaceChildren();
  for (const s of memory.states || []) states.appendChild(stateItem(s));
  for (const p of memory.preferences || []) preferences.appendChild(preferenceItem(p));
  if (!states.children.length) states.appendChild(textEl("li", "status", "No states."));
  if (!preferences.children.length) preferences.appendChild(textEl("li", "status", "No preferences."));
  // The memory the address names, marked and in view.
  const t = state.memoryTarget || {};
  const marked = [];
  if (t.state) marked.push(...states.querySelectorAll('li[data-state-id="' + CSS.escape(t.state) + '"]'));
  if (t.preference) marked.push(...preferences.querySelectorAll('li[data-preference="' + CSS.escape(t.preference) + '"]'));
  for (const li of marked) li.classList.add("target");
  if (marked.length) marked[0].scrollIntoView({ block: "center" });
}

function stateItem(s) {
  const li = document.createElement("li");
  li.dataset.stateId = s.state_id;
  li.dataset.status = s.status;
  const body = textEl("div", "body", s.body_text);
  const about = s.person == null ? "about no one" : "about " + s.person;
  const meta = textEl("small", "meta", [s.kind, s.status, "revision " + s.revision, about].join(" · "));
  const evidence = textEl("small", "evidence", "evidence: " + ((s.evidence_event_ids || []).join(", ") || "none"));
  const target = { state: { state_id: s.state_id } };
  const landed = (m) => !(m.states || []).some((x) => x.state_id === s.state_id && x.revision === s.revision);
  const correct = button("quiet correct", "Correct", () => {
    const field = document.createElement("textarea");
    field.className = "edit-body";
    field.rows = 2;
    field.value = s.body_text;
    field.setAttribute("aria-label", "The memory, corrected");
    const form = document.createElement("div");
    form.className = "edit";
    form.append(field, button("save", "Save", () =>
      editMemory(li, target, { op: "edit_body", body_text: field.value }, landed)),
    button("quiet cancel", "Cancel", () => form.replaceWith(body)));
    body.replaceWith(form);
    field.focus();
  });
  const buttons = [correct];
  if (s.status === "active") buttons.push(button("quiet close", "Close", () => editMemory(li, target, { op: "close" }, landed)));
  const forget = () => editMemory(li, target, { op: "forget" }, (m) => !(m.states || []).some((x) => x.state_id === s.state_id));
  li.append(body, meta, evidence, memoryActions(li, buttons, forget));
  return li;
}

function preferenceItem(p) {
  const li = document.createElement("li");
  li.dataset.person = p.person;
  li.dataset.preference = preferenceKey(p);
  li.append(
    textEl("div", "body", p.person + " · " + p.polarity + " " + p.subject),
    textEl("small", "meta", [p.domain, p.status, "confidence " + Number(p.confidence).toFixed(2)].join(" · ")),
  );
  const target = { preference: { person: p.person, domain: p.domain, subject: p.subject, polarity: p.polarity } };
  const gone = (m) => !(m.preferences || []).some((x) => x.person === p.person && preferenceKey(x) === preferenceKey(p));
  const other = p.polarity === "like" ? "dislike" : "like";
  const flip = button("quiet flip", "Flip to " + other, () => editMemory(li, target, { op: "flip_polarity" }, gone));
  li.appendChild(memoryActions(li, [flip], () => editMemory(li, target, { op: "forget" }, gone)));
  return li;
}

/** "Forget this person" beside the person chosen, asking before it forgets. */
function forgetPersonActions() {
  const actions = $("memory-forget-person");
  const person = $("memory-person").value;
  actions.replaceChildren();
  if (!person) return;
  const ask = button("quiet forget-person", "Forget this person", () => {
    actions.replaceChildren(
      textEl("span", "status", "Forget everything about " + person + ": their messages and memories, in every conversation? It cannot be undone."),
      button("forget-person-confirm danger", "Forget " + person + " for good", () => forgetPerson(person)),
      button("quiet cancel", "Keep", () => actions.replaceChildren(ask)),
    );
  });
  actions.appendChild(ask);
}

/** Asks to forget `person`; on 202 reads the memory again until nothing of them is left,
 * then shows everyone's without them. */
async function forgetPerson(person) {
  const error = $("memory-edit-error");
  showNotice(error, "");
  for (const b of $("memory-forget-person").querySelectorAll("button")) b.disabled = true;
  try {
    const answer = await api("POST", "/api/memory/forget-person", { person });
    if (!answer.ok) {
      showNotice(error, "Not forgotten: " + answer.error);
      forgetPersonActions();
      return;
    }
    $("memory-note").textContent = "Recorded; forgetting " + person + "…";
    const query = "/api/memory?person=" + encodeURIComponent(person);
    for (let i = 0; i < 40; i += 1) {
      await sleep(500);
      const left = await api("GET", query);
      if (left.ok && !(left.body.states || []).some((s) => s.person === person) && !(left.body.preferences || []).length) {
        for (const o of [...$("memory-person").options]) if (o.value === person) o.remove();
        $("memory-person").value = "";
        $("memory-note").textContent = person + " is forgotten.";
        location.hash = memoryAddress();
        await loadMemoryView();
        return;
      }
    }
    $("memory-note").textContent = "Recorded, but not done yet: refresh in a moment.";
  } catch (_) {
    if (state.signedIn) showNotice(error, "Could not reach the server.");
  }
}

/** Asks for an edit; on 202 reads the memory again until `landed` says the change is in. */
async function editMemory(li, target, edit, landed) {
  const error = $("memory-edit-error");
  showNotice(error, "");
  const body = { target, edit };
  const persona = $("memory-persona").value.trim();
  if (persona) body.persona = persona;
  for (const b of li.querySelectorAll("button")) b.disabled = true;
  const enable = () => { for (const b of li.querySelectorAll("button")) b.disabled = false; };
  try {
    const answer = await api("POST", "/api/memory/edits", body);
    if (!answer.ok) {
      showNotice(error, "Not changed: " + answer.error);
      enable();
      return;
    }
    $("memory-note").textContent = "Recorded; applying it…";
    for (let i = 0; i < 20; i += 1) {
      await sleep(500);
      const memory = await loadMemoryView();
      if (memory && landed(memory)) {
        $("memory-note").textContent = "Done.";
        return;
      }
    }
    $("memory-note").textContent = "Recorded, but not applied yet: refresh in a moment.";
  } catch (_) {
    if (state.signedIn) {
      showNotice(error, "Could not reach the server.");
      enable();
    }
  }
}

// --- Start -------------------------------------------------------------------------------------
if (state.token) {
  // Signs in when the stored token is still right.
  $("signin-submit").disabled = true;
  $("signin-submit").textContent = "Signing in…";
  $("signin").hidden = false;
  connectLive();
} else {
  $("signin").hidden = false;
}
