// Ghost console: the Memory view's cards. One card per memory as people read it: states that
// say the same of the same person (the API's `duplicates`) are one card with all their
// evidence; a preference is one card per person and subject, its current way (like or
// dislike) on top and what it was before behind "history". Evidence is the words it came
// from, who said them and when, with a link to the message in its conversation.
"use strict";

/** What the last read said: evidence in words, preference evidence, revisions. */
let memoryRead = { evidence: {}, preference_evidence: {}, history: {} };

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
  memoryRead = memory;
  const states = $("memory-states-list");
  const preferences = $("memory-preferences-list");
  states.replaceChildren();
  preferences.replaceChildren();
  // States that are one memory: one card, where the first of them is.
  const byId = new Map((memory.states || []).map((s) => [s.state_id, s]));
  const merged = new Map();
  for (const ids of memory.duplicates || []) {
    const group = ids.map((id) => byId.get(id)).filter(Boolean);
    for (const s of group) merged.set(s.state_id, group);
  }
  const drawn = new Set();
  for (const s of memory.states || []) {
    if (drawn.has(s.state_id)) continue;
    const group = merged.get(s.state_id) || [s];
    for (const g of group) drawn.add(g.state_id);
    states.appendChild(stateItem(group));
  }
  for (const group of preferenceGroups(memory.preferences || [])) preferences.appendChild(preferenceItem(group));
  if (!states.children.length) states.appendChild(textEl("li", "status", "No states."));
  if (!preferences.children.length) preferences.appendChild(textEl("li", "status", "No preferences."));
  // The memory the address names, marked and in view.
  const t = state.memoryTarget || {};
  const marked = [];
  if (t.state) marked.push(...[...states.children].filter((li) => (li.dataset.stateIds || "").split(" ").includes(t.state)));
  if (t.preference) marked.push(...[...preferences.children].filter((li) => (li.dataset.keys || "").split(" ").includes(t.preference)));
  for (const li of marked) li.classList.add("target");
  if (marked.length) marked[0].scrollIntoView({ block: "center" });
}

/** A state's card (`group`: the states that are this one memory, first first). */
function stateItem(group) {
  const s = group[0];
  const li = document.createElement("li");
  li.dataset.stateId = s.state_id;
  li.dataset.stateIds = group.map((g) => g.state_id).join(" ");
  li.dataset.status = s.status;
  const body = textEl("div", "body", s.body_text);
  const about = s.person == null ? "about no one" : "about " + personLabel(s.person);
  const facts = [s.kind, s.status, "revision " + s.revision, about];
  if (group.length > 1) facts.push("remembered " + group.length + " times");
  const meta = textEl("small", "meta", facts.join(" · "));
  if (s.person != null) meta.title = "person: " + s.person;
  const evidence = evidenceList(group.flatMap((g) => g.evidence_event_ids || []));
  const targets = group.map((g) => ({ state: { state_id: g.state_id } }));
  const mine = (m) => (m.states || []).filter((x) => group.some((g) => g.state_id === x.state_id));
  const changed = (m) => mine(m).every((x) => x.revision > group.find((g) => g.state_id === x.state_id).revision);
  const buttons = [];
  const correct = button("quiet correct", "Correct", () => {
    // The editor takes the buttons' place; Escape or Cancel puts them back.
    const field = document.createElement("textarea");
    field.className = "edit-body";
    field.rows = 2;
    field.value = s.body_text;
    field.setAttribute("aria-label", "The memory, corrected");
    const form = document.createElement("div");
    form.className = "edit";
    const cancel = () => {
      form.replaceWith(body);
      actions.hidden = false;
      correct.focus();
    };
    field.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.preventDefault();
        cancel();
      }
    });
    form.append(field, button("save", "Save", () =>
      editMemory(li, targets, { op: "edit_body", body_text: field.value }, (m) => changed(m) && mine(m).every((x) => x.body_text === field.value.trim()))),
    button("quiet cancel", "Cancel", cancel));
    body.replaceWith(form);
    actions.hidden = true;
    field.focus();
  });
  buttons.push(correct);
  if (s.status === "active") buttons.push(button("quiet close", "Close", () => editMemory(li, targets, { op: "close" }, changed)));
  const forget = () => editMemory(li, targets, { op: "forget" }, (m) => !mine(m).length);
  const actions = memoryActions(li, buttons, forget);
  li.append(body, meta, evidence);
  const history = historyOf(group);
  if (history) li.appendChild(history);
  li.appendChild(actions);
  return li;
}

/** The earlier revisions of the states of a card, behind "history" (none when never
 * revised). */
function historyOf(group) {
  const items = [];
  for (const s of group) {
    for (const r of (memoryRead.history || {})[s.state_id] || []) {
      items.push(textEl("li", "", "revision " + r.revision + " (" + r.status + "): " + r.body_text));
    }
  }
  return items.length ? disclosure(items) : null;
}

function disclosure(items) {
  const details = document.createElement("details");
  details.className = "history";
  const summary = document.createElement("summary");
  summary.textContent = "history";
  const list = document.createElement("ol");
  list.append(...items);
  details.append(summary, list);
  return details;
}

/** What a memory rests on, in words: each message (its words, who said them, when, a link
 * to it in its conversation), or what else it was. */
function evidenceList(ids) {
  const box = document.createElement("div");
  box.className = "evidence";
  const unique = [...new Set(ids)];
  if (!unique.length) {
    box.appendChild(textEl("small", "", "No evidence recorded."));
    return box;
  }
  box.appendChild(textEl("small", "label", unique.length === 1 ? "From" : "From " + unique.length + " messages"));
  const list = document.createElement("ul");
  for (const id of unique) list.appendChild(evidenceItem(id, (memoryRead.evidence || {})[id]));
  box.appendChild(list);
  return box;
}

const EVIDENCE_KINDS = {
  ActionResultRecorded: "what it found out on its own",
  MemoryEditRequested: "a correction made here",
  AutonomyMessageRendered: "its own message",
};

function evidenceItem(id, e) {
  const item = document.createElement("li");
  item.dataset.eventId = id;
  if (!e) {
    item.appendChild(textEl("span", "gone", "a message no longer kept"));
    return item;
  }
  const said = e.said;
  if (!said) {
    item.append(textEl("span", "what", EVIDENCE_KINDS[e.event_type] || "an event (" + e.event_type + ")"), document.createTextNode(", "), timeEl(e.recorded_at));
    return item;
  }
  item.dataset.role = said.role;
  const quote = textEl("q", "words", said.text);
  const who = said.role === "user" ? personLabel(said.speaker) : name(said.speaker);
  const link = document.createElement("a");
  link.className = "open-message";
  link.href = "#/chat/" + encodeURIComponent(said.session_id) + "/" + encodeURIComponent(id);
  link.textContent = "open in chat";
  item.append(quote, document.createTextNode(" — "), textEl("span", "who", who), document.createTextNode(", "), timeEl(e.recorded_at), document.createTextNode(" · "), link);
  if (said.role === "user") item.querySelector(".who").title = "person: " + said.speaker;
  return item;
}

/** Preferences by person and subject: each group one card, its current row first. */
function preferenceGroups(preferences) {
  const groups = new Map();
  for (const p of preferences) {
    const key = p.person + "/" + p.domain + "/" + subjectKey(p.subject);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(p);
  }
  return [...groups.values()].map((rows) => {
    const current = rows.find((p) => p.status !== "revoked");
    return current ? [current, ...rows.filter((p) => p !== current)] : rows;
  });
}

/** One person's preference about one subject: what holds now, Flip / Forget, and what it
 * was before behind "history". */
function preferenceItem(rows) {
  const p = rows[0];
  const li = document.createElement("li");
  li.dataset.person = p.person;
  li.dataset.preference = preferenceKey(p);
  li.dataset.keys = rows.map(preferenceKey).join(" ");
  li.dataset.polarity = p.polarity;
  li.dataset.status = p.status;
  const held = p.status !== "revoked";
  const body = textEl("div", "body", personLabel(p.person) + " · " + (held ? "" : "no longer: ") + p.polarity + " " + p.subject);
  body.title = "person: " + p.person;
  li.append(body, textEl("small", "meta", [p.domain, p.status, "confidence " + Number(p.confidence).toFixed(2)].join(" · ")));
  const evidence = (memoryRead.preference_evidence || {})[p.person + "/" + preferenceKey(p)] || [];
  li.appendChild(evidenceList(evidence));
  const before = rows.slice(1).map((r) => textEl("li", "", r.polarity + " " + r.subject + " (" + r.status + ")"));
  if (before.length) li.appendChild(disclosure(before));
  const key = p.person + "/" + p.domain + "/" + subjectKey(p.subject);
  const mine = (m) => (m.preferences || []).filter((x) => x.person + "/" + x.domain + "/" + subjectKey(x.subject) === key);
  const target = (r) => ({ preference: { person: r.person, domain: r.domain, subject: r.subject, polarity: r.polarity } });
  const buttons = [];
  if (held) {
    const other = p.polarity === "like" ? "dislike" : "like";
    // Landed when the card's current way is the other one.
    const flipped = (m) => mine(m).some((x) => x.polarity === other && x.status !== "revoked");
    buttons.push(button("quiet flip", "Flip to " + other, () => editMemory(li, [target(p)], { op: "flip_polarity" }, flipped)));
  }
  li.appendChild(memoryActions(li, buttons, () => editMemory(li, rows.map(target), { op: "forget" }, (m) => !mine(m).length)));
  return li;
}
