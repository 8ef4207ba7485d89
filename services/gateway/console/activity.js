// Ghost console: Activity, the persona's deliberations (GET /api/events), and the live events socket.
"use strict";

// --- Live events: activity, and messages in other conversations (GET /api/events) -------------
function connectEvents() {
  if (state.events) return;
  const ws = new WebSocket(socketUrl("/api/events"), tokenProtocols());
  state.events = ws;
  ws.onmessage = (event) => {
    if (state.events !== ws) return;
    const frame = JSON.parse(event.data);
    if (frame.type === "message") {
      const at = frame.recorded_at || new Date().toISOString();
      activity({ kind: "message", event_id: frame.event_id, recorded_at: at, detail: { result_event_id: frame.result_event_id, session_id: frame.session_id, text: frame.text, display: frame.display } });
      // The open conversation gets it over the live socket; the list learns of it here.
      listTouched(frame.session_id, { role: "assistant", speaker: frame.speaker, text: frame.text, recorded_at: at });
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

/** The badge counts the deliberations that got news while Activity was not shown: one card
 * is one, however many of its steps came. */
function badge() {
  const el = $("activity-badge");
  el.textContent = state.unseen > 99 ? "99+" : String(state.unseen);
  el.hidden = state.unseen === 0;
  el.setAttribute("aria-label", state.unseen + " new");
}

/** Activity is shown: nothing is new any more (the marks fade a moment later). */
function activitySeen(entering) {
  state.unseen = 0;
  for (const g of activityGroups.values()) g.counted = false;
  badge();
  if (entering) setTimeout(() => {
    for (const li of document.querySelectorAll("#activity-log > li.unseen")) li.classList.remove("unseen");
  }, 4000);
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
  $("activity-empty").hidden = [...$("activity-log").children].some((li) => !li.hidden);
  return g;
}

const ACTIONS = { web_research: "look something up on the web" };

/** A decision's delivery mode: what it will do with the result (said when decided), and
 * what was done (the card's last word once the result is in). */
const DELIVERY = {
  chat: { will: " and tell you in the chat", done: "telling you in the chat…", said: "told you in the chat" },
  notify: { will: " and tell you in a notification", done: "telling you in a notification…", said: "told you in a notification" },
  activity_only: { will: ". The result is shown only here, not said in the chat", done: "shown here only, nothing said in the chat" },
  silent: { will: ". The result is kept to itself: not shown, not said", done: "kept to itself, nothing said" },
};

const capitalized = (text) => text.charAt(0).toUpperCase() + text.slice(1);

/** What an entry says: its kind in words, a title, more text, links, details. `mode` is the
 * delivery its deliberation decided on (for what a result leads to). */
function describe(frame, mode) {
  const d = frame.detail || {};
  switch (frame.kind) {
    case "decided": {
      const decision = d.decision || {};
      const act = decision.decision === "do_action";
      const what = ACTIONS[decision.action_type] || (decision.capability || "act").replace(/_/g, " ");
      const mode = decision.console_delivery && decision.console_delivery.mode;
      const delivery = (DELIVERY[mode] || {}).will || "";
      return {
        kind: "Decided",
        capability: decision.capability || "",
        mode: act ? mode : undefined,
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
      const delivery = DELIVERY[mode] || {};
      const payload = d.result_payload || {};
      const ok = /^(ok|success|succeeded|done)$/i.test(d.result_status || "");
      const links = Array.isArray(payload.source_urls) ? payload.source_urls : [];
      let details = "";
      if (d.agent_job) details = JSON.stringify(d.agent_job);
      else if (!links.length && Object.keys(payload).length) details = JSON.stringify(payload).slice(0, 300);
      return {
        kind: "Result", capability: d.capability_name || "",
        title: ok ? "Done." + (delivery.said ? "" : mode ? " " + capitalized(delivery.done) + "." : "") : "Did not work out (" + String(d.result_status || "unknown").replace(/_/g, " ") + ").",
        outcome: ok ? ["done", delivery.done].filter(Boolean).join(" · ") : "did not work out", links, details,
      };
    }
    case "message": {
      const said = (DELIVERY[d.display === "notify" ? "notify" : "chat"]).said;
      return { kind: "Message", capability: "", title: "Said in " + (d.session_id || "the chat") + ":", text: d.text || "", outcome: "done · " + said };
    }
    case "message_failed":
      return { kind: "Message failed", capability: "", title: "Could not send its message.", outcome: "message failed", details: d.error || "" };
    default:
      return { kind: frame.kind, capability: "", title: "", details: JSON.stringify(d) };
  }
}

/** Entries already shown (the past is replayed on every connection, reconnections too). */
const shownActivity = new Set();

function activity(frame) {
  const g = addStep(frame);
  if (g && !frame.replayed && state.view !== "activity" && !g.counted) {
    g.counted = true;
    state.unseen += 1;
    badge();
  }
  // The message about a result shown from the past is in the persona's conversation.
  if (frame.kind === "result" && frame.replayed && !state.linking) {
    state.linking = setTimeout(linkPastMessages, 300);
  }
}

/** Adds an entry to its deliberation's card: the card, or null when it was there already. */
function addStep(frame) {
  const key = frame.kind + ":" + frame.event_id;
  if (shownActivity.has(key)) return null;
  shownActivity.add(key);
  const owner = ownerOf(frame);
  const g = card(owner, frame.recorded_at, frame.replayed);
  const about = describe(frame, g.mode);
  if (about.mode) g.mode = about.mode;
  // The deliberation asked for with "Deliberate now" has its card: the note has done its job.
  if (owner === state.tickAsked) {
    state.tickAsked = "";
    $("activity-note").textContent = "";
  }
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
  return g;
}

/** A message the persona said about a result: its card gets a step linking to it. */
function linkActivity(m, sessionId) {
  if (!activityOwner.has(m.result_event_id) || shownActivity.has("message:" + m.event_id)) return;
  addStep({ kind: "message", event_id: m.event_id, replayed: true, recorded_at: m.recorded_at,
    detail: { result_event_id: m.result_event_id, session_id: sessionId, text: m.text, display: m.display } });
}

/** The past results' messages, from the conversation the persona's messages go to. */
async function linkPastMessages() {
  const session = state.autonomySession || "console";
  try {
    const answer = await api("GET", "/api/sessions/" + encodeURIComponent(session) + "/messages");
    if (!answer.ok) return;
    for (const m of answer.body.messages) {
      if (m.result_event_id) linkActivity(m, session);
    }
  } catch (_) { /* signed out meanwhile */ }
}

/** "Hide all" hides the cards shown until the page is reloaded (nothing is deleted: a reload
 * shows the persona's latest activity again), and says so; "Show them" brings them back. */
$("activity-clear").addEventListener("click", () => {
  const cards = [...$("activity-log").children].filter((li) => !li.hidden);
  for (const li of cards) li.hidden = true;
  $("activity-empty").hidden = false;
  const note = $("activity-note");
  note.replaceChildren(
    document.createTextNode((cards.length === 1 ? "1 entry" : cards.length + " entries") + " hidden until you reload the page; nothing is deleted. "),
    button("quiet show-hidden", "Show them", () => {
      for (const li of $("activity-log").children) li.hidden = false;
      $("activity-empty").hidden = $("activity-log").children.length > 0;
      note.textContent = "";
    }),
  );
});

$("activity-tick").addEventListener("click", async () => {
  $("activity-tick").disabled = true;
  $("activity-note").textContent = "";
  try {
    const answer = await api("POST", "/api/autonomy/tick");
    const tick = answer.ok && answer.body.tick_event_id;
    // Said until its card comes (unless it came first).
    if (tick && !activityGroups.has(tick)) state.tickAsked = tick;
    $("activity-note").textContent = !answer.ok
      ? "Could not ask for a deliberation: " + answer.error
      : activityGroups.has(tick) ? "" : personaName() + " is deliberating; what it decides shows up here.";
  } catch (_) {
    if (state.signedIn) $("activity-note").textContent = "Could not reach the server.";
  } finally {
    setTimeout(() => { $("activity-tick").disabled = false; }, 1500);
  }
});
