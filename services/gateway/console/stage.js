// Ghost console: the Stage view (GET /api/stage WebSocket). A stage is a named conversation
// among the characters on a topic someone gives; anyone watching it sees the same run. Start
// joins the stage named (if not watching it yet) and gives it the topic; a dropped connection
// is joined again by itself, as Chat's is.
"use strict";

// --- Stage ----------------------------------------------------------------------------------
function stageStatus(text) {
  $("stage-status").textContent = text;
}

/** The stage the name field names: its id, or "" when the name cannot be one. */
function stageWanted() {
  const id = $("stage-id").value.trim() || "default";
  return STAGE_RE.test(id) ? id : "";
}

/** Start: once there is a topic and a stage name, and no run of it goes on (or the start is
 * already on its way); Stop: while a run goes. */
function stageControls() {
  const open = state.stage && state.stage.readyState === WebSocket.OPEN;
  const id = stageWanted();
  const watching = state.stage && state.stage.stageId === id;
  const topic = $("stage-text").value.trim() !== "";
  $("stage-send").disabled = !topic || !id || !!state.stageQueued || (watching && state.stageRunning);
  $("stage-stop").disabled = !open || !state.stageRunning;
}

/** A problem with the stage name, beside the name field (none when empty). */
function stageIdError(text) {
  showNotice($("stage-id-error"), text);
  $("stage-id").setAttribute("aria-invalid", text ? "true" : "false");
}

/** A problem with the topic, beside the topic field (none when empty). */
function stageTopicError(text) {
  showNotice($("stage-error"), text);
}

/** The stage's characters, for the one line that says what a stage is and the "who starts"
 * choice (from the live socket's `ready` frame). */
function stageCast(cast) {
  const names = (cast || []).map((c) => c.display_name || c.id);
  $("stage-cast").textContent = names.length ? names.join(", ") : "the characters";
  const select = $("stage-first");
  select.replaceChildren(new Option("any of them", ""));
  for (const c of cast || []) select.appendChild(new Option(c.display_name || c.id, c.display_name || c.id));
}

/** Joins the stage the name field names; false (and why, beside the field) when it cannot. */
function joinNamed() {
  const id = stageWanted();
  if (!id) {
    stageIdError("A stage name is 1 to 64 letters, digits, - or _.");
    $("stage-id").focus();
    return "";
  }
  stageIdError("");
  if (!(state.stage && state.stage.stageId === id && state.stage.readyState <= WebSocket.OPEN)) watchStage(id);
  const address = "#/stage/" + encodeURIComponent(id);
  if (location.hash !== address) location.hash = address;
  return id;
}

$("stage-join").addEventListener("submit", (e) => {
  e.preventDefault();
  joinNamed();
});
$("stage-id").addEventListener("input", () => {
  if (stageWanted()) stageIdError("");
  stageControls();
});
$("stage-text").addEventListener("input", stageControls);

function watchStage(id) {
  clearTimeout(state.stageRejoin);
  if (state.stage) {
    const old = state.stage;
    state.stage = null;
    old.close();
  }
  $("stage-log").replaceChildren();
  showNotice($("stage-error"), "");
  if (state.stageQueued && state.stageQueued.id !== id) state.stageQueued = null;
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
    state.stageRunning = false;
    // Dropped, not left: joined again in a moment (the run so far comes back with it).
    stageStatus("The connection to " + id + " dropped; joining again…");
    stageControls();
    clearTimeout(state.stageRejoin);
    state.stageRejoin = setTimeout(() => {
      if (state.signedIn && !state.stage && stageWanted() === id) watchStage(id);
    }, 2000);
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

/** A run ended: a "Next: …" after its last line names a turn that will not come. */
function dropStaleNext() {
  const log = $("stage-log");
  while (log.lastElementChild && log.lastElementChild.classList.contains("next")) log.lastElementChild.remove();
}

function stageFrame(id, frame) {
  switch (frame.type) {
    case "ready":
      state.stageRunning = frame.running;
      stageStatus(frame.running ? "Watching " + id + ": a run is going on." : "Watching " + id + ". Give the characters a topic to start a run.");
      // A Start pressed before the stage was joined goes now.
      if (state.stageQueued && state.stageQueued.id === id) {
        const queued = state.stageQueued;
        state.stageQueued = null;
        if (frame.running) stageTopicError(stageErrorText("busy"));
        else sendTopic(queued.text);
      }
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
      stageLine("status next", "", "Next: " + name(frame.next));
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
      dropStaleNext();
      stageLine("status ended", "", text).dataset.reason = frame.reason;
      if (!frame.replayed) stageStatus(text + " Give a new topic to start again.");
      else stageStatus("Watching " + id + ". " + text);
      break;
    }
    case "error":
      stageTopicError(stageErrorText(frame.code));
      break;
  }
  stageControls();
}

/** Start: the topic (with the character chosen to start, if any) to the stage named,
 * joining it first when needed. */
function sendStage() {
  const text = $("stage-text").value;
  if (!text.trim()) {
    stageTopicError(stageErrorText("empty_text"));
    return;
  }
  if ([...text].length > state.maxChars) {
    stageTopicError(stageErrorText("text_too_long"));
    return;
  }
  const id = joinNamed();
  if (!id) return;
  stageTopicError("");
  const first = $("stage-first").value;
  const topic = first ? "[Next: " + first + "] " + text.trim() : text;
  if (state.stage && state.stage.readyState === WebSocket.OPEN) {
    if (state.stageRunning) stageTopicError(stageErrorText("busy"));
    else sendTopic(topic);
  } else {
    state.stageQueued = { id, text: topic };
  }
  stageControls();
}

function sendTopic(topic) {
  state.stage.send(JSON.stringify({ type: "user", text: topic }));
  $("stage-text").value = "";
  autosize($("stage-text"));
}
$("stage-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sendStage();
});
enterSends($("stage-text"), sendStage, "stage-hint", "Start");
$("stage-stop").addEventListener("click", () => {
  if (state.stage && state.stage.readyState === WebSocket.OPEN && state.stageRunning) {
    state.stage.send(JSON.stringify({ type: "stop" }));
    $("stage-stop").disabled = true;
  }
});
