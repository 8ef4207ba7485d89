// Ghost console: the Mood view (/api/partner_mood) and its read-only memory card (/api/memory).
"use strict";

// --- Mood ----------------------------------------------------------------------------------
/** The persona the field names (its id; "" for the chat persona), or null when it names no
 * persona: then why is said beside the field, and nothing is asked or saved. */
function moodPersona() {
  const typed = $("mood-persona").value.trim();
  const ids = Object.keys(state.names);
  const id = !typed ? "" : ids.find((i) => i === typed) || ids.find((i) => state.names[i] === typed);
  if (id === undefined && ids.length) {
    personaRefused(typed);
    return null;
  }
  showNotice($("mood-persona-error"), "");
  $("mood-persona").setAttribute("aria-invalid", "false");
  return id === undefined ? typed : id;
}

/** There is no persona `typed`: said beside the field, and nothing of another is shown. */
function personaRefused(typed) {
  const known = Object.entries(state.names).map(([id, shown]) => shown + " (" + id + ")").join(", ");
  showNotice($("mood-persona-error"), "There is no persona called “" + typed + "”." + (known ? " The personas are " + known + "." : ""));
  $("mood-persona").setAttribute("aria-invalid", "true");
  $("mood-current").replaceChildren(textEl("p", "status", "No mood to show: choose a persona above."));
  for (const id of ["memory-interest", "memory-states", "memory-preferences"]) $(id).replaceChildren();
}

function moodQuery(persona) {
  return persona ? "?persona=" + encodeURIComponent(persona) : "";
}

/** The personas the field offers (from the live socket's `ready` frame). */
function moodPersonas() {
  $("mood-personas").replaceChildren(...Object.entries(state.names).map(([id, shown]) => new Option(shown, id)));
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

/** Calls the API and shows its answer with `show`, or why not in `notice` (a persona the
 * server does not know, beside the persona field). */
async function callAndShow(method, path, body, notice, show) {
  showNotice(notice, "");
  try {
    const answer = await api(method, path, body);
    if (answer.ok) show(answer.body);
    else if (answer.code === "unknown_persona") personaRefused($("mood-persona").value.trim());
    else showNotice(notice, answer.error);
  } catch (_) {
    if (state.signedIn) showNotice(notice, "Could not reach the server.");
  }
}

function moodCall(method, body) {
  const persona = moodPersona();
  if (persona === null) return;
  return callAndShow(method, "/api/partner_mood" + moodQuery(persona), body, $("mood-error"), showMood);
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
$("mood-persona").addEventListener("input", () => showNotice($("mood-persona-error"), ""));

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
  const persona = moodPersona();
  if (persona === null) return;
  return callAndShow("GET", "/api/memory" + moodQuery(persona), undefined, $("memory-error"), showMemory);
}
