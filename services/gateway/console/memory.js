// Ghost console: the Memory view, as people read it: what the persona remembers and about
// whom (people by name, "you" for the console's own person), each memory once (states that
// say the same are one card with all their evidence), its evidence as the words it came from,
// its history behind a disclosure; correcting and forgetting (GET /api/memory,
// POST /api/memory/edits, POST /api/memory/forget-person). The cards are drawn in
// memory-cards.js.
"use strict";

// --- Memory: see, correct, forget ----------------------------------------------------------
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A preference subject's key, as recall names it (NFKC, trimmed, lower case). */
const subjectKey = (subject) => subject.normalize("NFKC").trim().toLowerCase();
const preferenceKey = (p) => p.domain + "/" + subjectKey(p.subject) + "/" + p.polarity;

/** People as the last reads named them (id → {name, channel, you}). */
const memoryPeople = new Map();
const CHANNELS = { line: "LINE", slack: "Slack", telegram: "Telegram" };

/** How a person is shown: "you" for the console's own, their profile name, else their id. */
function personLabel(id) {
  if (id == null) return "no one";
  const p = memoryPeople.get(id);
  return (p && p.name) || id;
}

/** A person in the person list: their name and where they speak. */
function personOption(id) {
  const p = memoryPeople.get(id) || {};
  const where = CHANNELS[p.channel];
  return personLabel(id) + (where ? " (" + where + ")" : "");
}

/** The Memory view's address for the persona and person chosen. */
function memoryAddress() {
  const params = new URLSearchParams();
  const persona = $("memory-persona").value.trim();
  if (persona) params.set("persona", persona);
  if ($("memory-person").value) params.set("person", $("memory-person").value);
  const query = params.toString();
  return "#/memory" + (query ? "?" + query : "");
}

/** A view's chooser: submitting `form` or changing `select` goes to the address `address()`
 * gives, or reads the view again (`load`) when it is there already. */
function chooser(form, select, address, load) {
  const chosen = () => {
    const wanted = address();
    if (location.hash === wanted) load();
    else location.hash = wanted;
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    chosen();
  });
  select.addEventListener("change", chosen);
}
chooser($("memory-which"), $("memory-person"), memoryAddress, loadMemoryView);

/** The view as the address says: persona, person, and the memory to mark. */
function openMemory(query) {
  $("memory-persona").value = query.get("persona") || "";
  personOptions([query.get("person") || ""]);
  $("memory-person").value = query.get("person") || "";
  state.memoryTarget = { state: query.get("state") || "", preference: query.get("preference") || "" };
  showNotice($("memory-edit-error"), "");
  loadMemoryView();
}

/** A person list (Memory's, or `select`): its first option, then each person named, by
 * name (the one chosen stays). */
function personOptions(persons, select = $("memory-person")) {
  const known = new Set([...select.options].map((o) => o.value));
  for (const p of [...persons].sort()) {
    if (p && !known.has(p)) {
      select.appendChild(new Option(p, p));
      known.add(p);
    }
  }
  for (const o of select.options) if (o.value) o.textContent = personOption(o.value);
}

/** Reads the memory (everyone's, for the person list and for edits to check against; then
 * the person's when one is chosen) and shows it. Returns what is shown, or null. */
async function loadMemoryView() {
  const load = ++state.memoryLoads;
  const persona = $("memory-persona").value.trim();
  const person = $("memory-person").value;
  const query = persona ? "?persona=" + encodeURIComponent(persona) : "";
  try {
    const all = await api("GET", "/api/memory" + query);
    if (load !== state.memoryLoads) return null;
    if (!all.ok) {
      showNotice($("memory-edit-error"), "Cannot show the memory: " + all.error);
      $("memory-states-list").replaceChildren();
      $("memory-preferences-list").replaceChildren();
      return null;
    }
    for (const [id, p] of Object.entries(all.body.people || {})) memoryPeople.set(id, p);
    const persons = new Set();
    for (const s of all.body.states || []) if (s.person) persons.add(s.person);
    for (const p of all.body.preferences || []) persons.add(p.person);
    personOptions(persons);
    let shown = all.body;
    if (person) {
      const one = await api("GET", "/api/memory" + (query ? query + "&" : "?") + "person=" + encodeURIComponent(person));
      if (load !== state.memoryLoads) return null;
      if (!one.ok) {
        showNotice($("memory-edit-error"), "Cannot show " + personLabel(person) + "'s memory: " + one.error);
        return null;
      }
      shown = one.body;
      for (const [id, p] of Object.entries(shown.people || {})) memoryPeople.set(id, p);
    }
    showMemoryView(shown);
    forgetPersonActions();
    return shown;
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

/** "Forget this person" beside the person chosen, asking before it forgets. */
function forgetPersonActions() {
  const actions = $("memory-forget-person");
  const person = $("memory-person").value;
  actions.replaceChildren();
  if (!person) return;
  const you = (memoryPeople.get(person) || {}).you;
  const who = you ? "everything about you" : personLabel(person);
  const ask = button("quiet forget-person", "Forget this person", () => {
    actions.replaceChildren(
      textEl("span", "status", you
        ? "Forget everything about you (" + person + "): your messages and memories, in every conversation? It cannot be undone."
        : "Forget everything about " + who + ": their messages and memories, in every conversation? It cannot be undone."),
      button("forget-person-confirm danger", "Forget " + who + " for good", () => forgetPerson(person)),
      button("quiet cancel", "Keep", () => actions.replaceChildren(ask)),
    );
  });
  actions.appendChild(ask);
}

/** Asks to forget `person`; on 202 reads the memory again until nothing of them is left,
 * then shows everyone's without them. */
async function forgetPerson(person) {
  const error = $("memory-edit-error");
  const you = (memoryPeople.get(person) || {}).you;
  const who = you ? "everything about you" : personLabel(person);
  showNotice(error, "");
  for (const b of $("memory-forget-person").querySelectorAll("button")) b.disabled = true;
  try {
    const answer = await api("POST", "/api/memory/forget-person", { person });
    if (!answer.ok) {
      showNotice(error, "Not forgotten: " + answer.error);
      forgetPersonActions();
      return;
    }
    $("memory-note").textContent = "Recorded; forgetting " + who + "…";
    const query = "/api/memory?person=" + encodeURIComponent(person);
    for (let i = 0; i < 40; i += 1) {
      await sleep(500);
      const left = await api("GET", query);
      if (left.ok && !(left.body.states || []).some((s) => s.person === person) && !(left.body.preferences || []).length) {
        for (const o of [...$("memory-person").options]) if (o.value === person) o.remove();
        $("memory-person").value = "";
        $("memory-note").textContent = capitalized(who) + " is forgotten.";
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

/** Asks for `edit` of each memory in `targets` (one card may be several rows); then reads the
 * memory again until the list shows the change (`landed` says when), and says "Done." then. */
async function editMemory(li, targets, edit, landed) {
  const error = $("memory-edit-error");
  showNotice(error, "");
  const persona = $("memory-persona").value.trim();
  for (const b of li.querySelectorAll("button")) b.disabled = true;
  const enable = () => { for (const b of li.querySelectorAll("button")) b.disabled = false; };
  try {
    for (const target of targets) {
      const body = { target, edit };
      if (persona) body.persona = persona;
      const answer = await api("POST", "/api/memory/edits", body);
      if (!answer.ok) {
        showNotice(error, "Not changed: " + answer.error);
        enable();
        return;
      }
    }
    $("memory-note").textContent = "Recorded; applying it…";
    for (let i = 0; i < 60; i += 1) {
      await sleep(250);
      const memory = await loadMemoryView();
      if (memory && landed(memory)) {
        $("memory-note").textContent = "Done.";
        return;
      }
    }
    $("memory-note").textContent = "Recorded, but not shown yet: it is applied in a moment (refresh to see it).";
  } catch (_) {
    if (state.signedIn) {
      showNotice(error, "Could not reach the server.");
      enable();
    }
  }
}
