// Ghost console: the Memory view: see, correct and forget (GET /api/memory, POST /api/memory/edits, POST /api/memory/forget-person).
"use strict";

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
