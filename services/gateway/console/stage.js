// Ghost console: the Stage view (GET /api/stage WebSocket).
"use strict";

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
