// Ghost console: the Reminders view (#/reminders?person=P). A person's reminders still to
// come (GET /api/reminders), each with what it says, when it is next due in the person's own
// time zone and whether it repeats, in words; moved to a time said in words
// (PUT /api/reminders/<id>), cancelled (DELETE /api/reminders/<id>), and added
// (POST /api/reminders) in a conversation the person speaks in, the latest by default: a
// reminder is said where it was set. People are chosen as in Memory (their names from
// GET /api/memory). "Done." is said once the list, read again, shows the change.
"use strict";

/** The console's own person (the API's `user`). */
const YOU = "user";
const WEEKDAYS = { MO: "Monday", TU: "Tuesday", WE: "Wednesday", TH: "Thursday", FR: "Friday", SA: "Saturday", SU: "Sunday" };
const FREQUENCIES = { HOURLY: "hour", DAILY: "day", WEEKLY: "week", MONTHLY: "month", YEARLY: "year" };
/** Time phrases the API reads, for a refusal to suggest. */
const PHRASES = "“tomorrow at 10”, “in 20 minutes”, “at 9:00”, “2026-12-01 09:00” or “every monday at 7:00”";

/** The newest read of the view (older answers are dropped). */
let reminderLoads = 0;

/** The person chosen (the API's id). */
const reminderPerson = () => $("reminders-person").value || YOU;

/** How a person is named in a sentence: "you", their profile name, else their id. */
function reminderWho(id) {
  return id === YOU ? "you" : personLabel(id);
}

/** The view as the address says: whose reminders. */
function openReminders(query, entering) {
  const person = query.get("person") || YOU;
  if (!memoryPeople.has(YOU)) memoryPeople.set(YOU, { name: "you", channel: "http", you: true });
  personOptions([person], $("reminders-person"));
  $("reminders-person").value = person;
  for (const id of ["reminders-error", "reminder-text-error", "reminder-when-error", "reminder-add-error"]) showNotice($(id), "");
  for (const id of ["reminders-note", "reminder-add-note"]) $(id).textContent = "";
  loadReminders();
  if (entering) reminderPeople();
}

/** The person list: "you", then everyone Memory knows, by name (the one chosen stays). */
async function reminderPeople() {
  try {
    const answer = await api("GET", "/api/memory");
    if (!answer.ok) return;
    for (const [id, p] of Object.entries(answer.body.people || {})) memoryPeople.set(id, p);
    personOptions(Object.keys(answer.body.people || {}), $("reminders-person"));
  } catch (_) { /* signed out meanwhile */ }
}

chooser($("reminders-which"), $("reminders-person"), () => "#/reminders?" + new URLSearchParams({ person: reminderPerson() }), loadReminders);

/** Reads the person's reminders and shows them. Returns what was read, or null. */
async function loadReminders() {
  const load = ++reminderLoads;
  const person = reminderPerson();
  try {
    const answer = await api("GET", "/api/reminders?" + new URLSearchParams({ person }));
    if (load !== reminderLoads) return null;
    if (!answer.ok) {
      showNotice($("reminders-error"), "Cannot show the reminders: " + answer.error);
      $("reminders-list").replaceChildren();
      return null;
    }
    showNotice($("reminders-error"), "");
    showReminders(answer.body);
    return answer.body;
  } catch (_) {
    if (state.signedIn) showNotice($("reminders-error"), "Could not reach the server.");
    return null;
  }
}

function showReminders(read) {
  const list = $("reminders-list");
  const who = reminderWho(read.person);
  // What was typed in a Move field stays through a new read.
  const typed = new Map([...list.querySelectorAll("li[data-reminder-id]")].map((li) => [li.dataset.reminderId, li.querySelector(".move-when").value]));
  // Times are said in the person's zone; a reminder set in another (it keeps the zone it
  // was set in) names its own.
  list.replaceChildren(...read.reminders.map((r) => reminderItem(r, read.time_zone, typed.get(r.reminder_id) || "")));
  if (!read.reminders.length) {
    list.appendChild(textEl("li", "status", (read.person === YOU ? "You have" : capitalized(who) + " has") +
      " no reminders to come. Add one below, or in a conversation: “/remind tomorrow at 9 call Mom”, or “remind me tomorrow at 9 to call Mom”."));
  }
  $("reminders-zone").textContent = "Times are " + (read.person === YOU ? "your" : who + "'s") + " local time: " + read.time_zone + ".";
  conversationChoices(read);
}

/** Where a new reminder is said: the conversations the person has spoken in, the latest
 * first and chosen (the one chosen stays when it is still there). */
function conversationChoices(read) {
  const select = $("reminder-session");
  const chosen = select.dataset.person === read.person ? select.value : "";
  select.dataset.person = read.person;
  select.replaceChildren(...read.conversations.map((c) =>
    new Option(conversationName(c.session_id) + " · last spoke " + formatTime(c.last_spoke_at), c.session_id)));
  if (read.conversations.some((c) => c.session_id === chosen)) select.value = chosen;
  const none = !read.conversations.length;
  $("reminder-session-field").hidden = none;
  $("reminder-add").disabled = none;
  const who = reminderWho(read.person);
  $("reminder-session-hint").textContent = none
    ? (read.person === YOU ? "You have" : capitalized(who) + " has") + " not spoken in any conversation yet. A reminder is said in a conversation its person speaks in, so there is none to add it to yet."
    : "The conversation the reminder will be said in: where " + who + " spoke, the latest first.";
}

/** `at` as a time in `zone` ("Tue, Dec 2, 09:00"), with the year when not this year's. */
function dueText(at, zone) {
  const d = new Date(at);
  const options = { weekday: "short", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hourCycle: "h23", timeZone: zone };
  if (d.getUTCFullYear() !== new Date().getUTCFullYear()) options.year = "numeric";
  try {
    return new Intl.DateTimeFormat([], options).format(d);
  } catch (_) {
    // A zone this browser does not know: said in UTC, and so named.
    return new Intl.DateTimeFormat([], { ...options, timeZone: "UTC" }).format(d) + " UTC";
  }
}

/** Whether a reminder repeats, in words: "once", "every Monday at 07:00", "every 2 weeks",
 * "every month on the 1st"; a rule too intricate for that is given as it is. */
function repeatsText(rule) {
  if (!rule) return "once";
  const parts = {};
  for (const pair of rule.replace(/^RRULE:/i, "").split(";")) {
    const [key, value] = pair.split("=");
    if (key) parts[key.trim().toUpperCase()] = (value || "").trim().toUpperCase();
  }
  const raw = "repeats: " + rule;
  if (Object.keys(parts).some((k) => !["FREQ", "INTERVAL", "BYDAY", "BYMONTHDAY", "BYHOUR", "BYMINUTE", "BYSECOND", "WKST"].includes(k))) return raw;
  const unit = FREQUENCIES[parts.FREQ];
  const n = Number(parts.INTERVAL || 1);
  if (!unit || !Number.isInteger(n) || n < 1) return raw;
  let words = n === 1 ? "every " + unit : "every " + n + " " + unit + "s";
  if (parts.BYDAY) {
    const days = parts.BYDAY.split(",");
    if (parts.FREQ !== "WEEKLY" || days.some((d) => !WEEKDAYS[d])) return raw;
    const named = days.join(",") === "MO,TU,WE,TH,FR" ? "weekday" : andList(days.map((d) => WEEKDAYS[d]));
    words = n === 1 ? "every " + named : words + " on " + (named === "weekday" ? "weekdays" : named);
  }
  if (parts.BYMONTHDAY) {
    const day = Number(parts.BYMONTHDAY);
    if (parts.FREQ !== "MONTHLY" || !Number.isInteger(day) || day < 1 || day > 31) return raw;
    words += " on the " + ordinal(day);
  }
  const single = (v) => v !== undefined && /^\d{1,2}$/.test(v);
  if (single(parts.BYHOUR) && single(parts.BYMINUTE) && parts.FREQ !== "HOURLY") {
    words += " at " + parts.BYHOUR.padStart(2, "0") + ":" + parts.BYMINUTE.padStart(2, "0");
  } else if (parts.BYHOUR !== undefined || parts.BYMINUTE !== undefined) {
    return raw;
  }
  return words;
}

const andList = (items) => items.length < 2 ? items.join("") : items.slice(0, -1).join(", ") + " and " + items[items.length - 1];

function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : { 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th";
  return n + suffix;
}

/** One reminder: what it says, when it is next due (and in which zone, when not the
 * person's), whether it repeats, where it is said; Move and Cancel. */
function reminderItem(r, zone, typed) {
  const li = document.createElement("li");
  li.dataset.reminderId = r.reminder_id;
  li.dataset.dueAt = r.due_at || "";
  const due = document.createElement("p");
  due.className = "due";
  if (r.due_at) {
    const t = document.createElement("time");
    t.dateTime = new Date(r.due_at).toISOString();
    t.textContent = dueText(r.due_at, r.time_zone);
    t.title = r.time_zone;
    due.append("Next: ", t);
    if (r.time_zone !== zone) due.append(" (" + r.time_zone + ")");
  }
  due.append(textEl("span", "repeats", " · " + repeatsText(r.rule)));
  const where = textEl("small", "meta", "said in " + conversationName(r.session_id));
  where.title = r.session_id;

  const field = document.createElement("input");
  field.id = "move-" + r.reminder_id;
  field.className = "move-when";
  field.autocomplete = "off";
  field.spellcheck = false;
  field.placeholder = "e.g. tomorrow at 10";
  field.value = typed;
  const label = document.createElement("label");
  label.htmlFor = field.id;
  label.textContent = "Move to";
  const error = textEl("p", "notice field-error move-error", "");
  error.id = "move-error-" + r.reminder_id;
  error.setAttribute("role", "alert");
  error.hidden = true;
  field.setAttribute("aria-describedby", error.id);
  const form = document.createElement("form");
  form.className = "move";
  form.noValidate = true;
  const go = button("move-go", "Move", () => {});
  go.type = "submit";
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    moveReminder(li, r, field, error);
  });
  const cancel = button("quiet cancel-reminder", "Cancel", () => {
    form.hidden = true;
    ask.hidden = false;
    ask.querySelector(".cancel-confirm").focus();
  });
  const labelled = document.createElement("span");
  labelled.className = "move-field";
  labelled.append(label, field);
  form.append(labelled, go, cancel, error);
  // Cancel asks first: the reminder would not be said.
  const ask = document.createElement("div");
  ask.className = "actions";
  ask.hidden = true;
  ask.append(
    textEl("span", "status", "Cancel this reminder? It will not be said."),
    button("cancel-confirm danger", "Cancel it", () => cancelReminder(li, r, ask)),
    button("quiet keep", "Keep", () => {
      ask.hidden = true;
      form.hidden = false;
      cancel.focus();
    }),
  );
  li.append(textEl("div", "body", r.text), due, where, form, ask);
  return li;
}

/** A refusal in plain words: what was wrong, and that nothing happened (`nothing`). */
function reminderRefusal(answer, phrase, nothing) {
  switch (answer.code) {
    case "invalid_when":
    case "invalid_time": return "“" + phrase + "” is not a time I can read, so " + nothing + ". Try " + PHRASES + ".";
    case "in_the_past": return "“" + phrase + "” has already passed, so " + nothing + ". Pick a later time.";
    case "unknown_reminder": return "This reminder is no longer there (it was said or cancelled meanwhile), so " + nothing + ". Refresh to see the list as it is.";
    case "invalid_text": return "Say what to remind of, in at most 500 characters: " + nothing + ".";
    case "unknown_conversation": return (reminderPerson() === YOU ? "You have" : capitalized(reminderWho(reminderPerson())) + " has") +
      " not spoken in that conversation, and a reminder is said where its person speaks, so " + nothing + ".";
    default: return capitalized(nothing) + ": " + answer.error;
  }
}

/** A time held by quiet hours, said. */
function heldText(answer, zone) {
  return answer.held_from ? " It was asked for " + dueText(answer.held_from, zone) + ", in quiet hours, so it waits until they end." : "";
}

/** Reads the list again until `landed` says it shows the change (then `done()`). */
async function untilListed(landed, done, note) {
  note.textContent = "Recorded; updating the list…";
  for (let i = 0; i < 40; i += 1) {
    const read = await loadReminders();
    if (read && landed(read)) {
      note.textContent = "";
      done(read);
      return;
    }
    await sleep(250);
  }
  note.textContent = "Recorded, but not shown yet: refresh in a moment.";
}

function enabled(li, on) {
  for (const b of li.querySelectorAll("button, input")) b.disabled = !on;
}

async function moveReminder(li, r, field, error) {
  const phrase = field.value.trim();
  field.removeAttribute("aria-invalid");
  if (!phrase) {
    showNotice(error, "Say when, e.g. “tomorrow at 10”.");
    field.focus();
    return;
  }
  showNotice(error, "");
  const person = reminderPerson();
  enabled(li, false);
  try {
    const answer = await api("PUT", "/api/reminders/" + encodeURIComponent(r.reminder_id), { person, when: phrase });
    if (!answer.ok) {
      showNotice(error, reminderRefusal(answer, phrase, "nothing was changed"));
      field.setAttribute("aria-invalid", "true");
      enabled(li, true);
      field.focus();
      return;
    }
    field.value = "";
    const at = new Date(answer.body.due_at).getTime();
    const mine = (read) => read.reminders.find((x) => x.reminder_id === r.reminder_id);
    await untilListed((read) => mine(read) && new Date(mine(read).due_at).getTime() === at, (read) => {
      const row = $("reminders-list").querySelector('li[data-reminder-id="' + CSS.escape(r.reminder_id) + '"]');
      if (!row) return;
      row.classList.add("target");
      row.appendChild(textEl("p", "status done", "Done. Moved to " + dueText(answer.body.due_at, mine(read).time_zone) + "." + heldText(answer.body, mine(read).time_zone)));
    }, $("reminders-note"));
  } catch (_) {
    if (state.signedIn) {
      showNotice(error, "Could not reach the server, so nothing was changed.");
      enabled(li, true);
    }
  }
}

async function cancelReminder(li, r, ask) {
  const person = reminderPerson();
  showNotice($("reminders-error"), "");
  enabled(li, false);
  try {
    const answer = await api("DELETE", "/api/reminders/" + encodeURIComponent(r.reminder_id) + "?" + new URLSearchParams({ person }));
    if (!answer.ok) {
      ask.replaceChildren(textEl("p", "notice", reminderRefusal(answer, "", "nothing was cancelled")));
      ask.hidden = false;
      return;
    }
    await untilListed((read) => !read.reminders.some((x) => x.reminder_id === r.reminder_id), () => {
      $("reminders-note").textContent = "Done. “" + r.text + "” is cancelled.";
    }, $("reminders-note"));
  } catch (_) {
    if (state.signedIn) {
      showNotice($("reminders-error"), "Could not reach the server, so nothing was cancelled.");
      enabled(li, true);
    }
  }
}

async function addReminder() {
  const text = $("reminder-text").value.trim();
  const when = $("reminder-when").value.trim();
  const session = $("reminder-session").value;
  for (const id of ["reminder-text-error", "reminder-when-error", "reminder-add-error"]) showNotice($(id), "");
  $("reminder-add-note").textContent = "";
  if (!text) {
    showNotice($("reminder-text-error"), "Say what to remind of.");
    $("reminder-text").focus();
    return;
  }
  if (!when) {
    showNotice($("reminder-when-error"), "Say when, e.g. “tomorrow at 9”.");
    $("reminder-when").focus();
    return;
  }
  if (!session) return;
  const person = reminderPerson();
  $("reminder-add").disabled = true;
  try {
    const answer = await api("POST", "/api/reminders", { person, session_id: session, text, when });
    if (!answer.ok) {
      const beside = { invalid_when: "reminder-when", invalid_time: "reminder-when", in_the_past: "reminder-when", invalid_text: "reminder-text" }[answer.code];
      showNotice($(beside ? beside + "-error" : "reminder-add-error"), reminderRefusal(answer, when, "nothing was added"));
      $("reminder-add").disabled = false;
      if (beside) $(beside).focus();
      return;
    }
    $("reminder-text").value = "";
    $("reminder-when").value = "";
    const id = answer.body.reminder_id;
    await untilListed((read) => read.reminders.some((x) => x.reminder_id === id), () => {
      $("reminder-add-note").textContent = "Done. “" + text + "” is on the list: next " +
        dueText(answer.body.due_at, answer.body.time_zone) + ", " + repeatsText(answer.body.rule) + "." + heldText(answer.body, answer.body.time_zone);
      $("reminders-list").querySelector('li[data-reminder-id="' + CSS.escape(id) + '"]')?.classList.add("target");
    }, $("reminder-add-note"));
  } catch (_) {
    if (state.signedIn) showNotice($("reminder-add-error"), "Could not reach the server, so nothing was added.");
  } finally {
    $("reminder-add").disabled = !$("reminder-session").value;
  }
}
$("reminders-add").addEventListener("submit", (e) => {
  e.preventDefault();
  addReminder();
});

/** Signed out: nothing of anyone's reminders left in the page. */
function clearReminders() {
  reminderLoads += 1;
  for (const id of ["reminders-list", "reminder-session"]) $(id).replaceChildren();
  $("reminders-person").replaceChildren(new Option("you", YOU));
  for (const id of ["reminder-text", "reminder-when"]) $(id).value = "";
  for (const id of ["reminders-error", "reminder-text-error", "reminder-when-error", "reminder-add-error"]) showNotice($(id), "");
  for (const id of ["reminders-zone", "reminders-note", "reminder-add-note", "reminder-session-hint"]) $(id).textContent = "";
}
