"use strict";
// Every string the server sends comes from the asker, the model or the graph: it is set as textContent (or as
// an attribute by the DOM), never parsed as HTML, and a link is made only from an https URL the server built.
// Tables are built cell by cell from the rows the server sends as data.

const byId = (id) => document.getElementById(id);
let conversation = null;
let source = null;

function textElement(tag, text, className) {
  const element = document.createElement(tag);
  element.textContent = text;
  if (className) element.className = className;
  return element;
}

function button(text, className, onClick) {
  const element = textElement("button", text, className);
  element.type = "button";
  element.addEventListener("click", onClick);
  return element;
}

function setBusy(busy) {
  byId("send").disabled = busy;
  byId("new").disabled = busy;
  document.body.dataset.busy = busy ? "true" : "false";
}

function ordinal(number) {
  const tens = number % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ({1: "st", 2: "nd", 3: "rd"})[number % 10] || "th";
  return `${number}${suffix}`;
}

function linkTo(id) {
  if (id) history.replaceState(null, "", `#c=${encodeURIComponent(id)}`);
  else history.replaceState(null, "", location.pathname);
}

// A result as a table: a header of the variables, a row per result row, an ID's label beside it.
function resultTable(result, className) {
  const box = document.createElement("div");
  box.className = `table-box ${className}`;
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const name of result.variables) {
    const cell = textElement("th", name);
    cell.scope = "col";
    head.append(cell);
  }
  const body = table.createTBody();
  for (const row of result.rows) {
    const line = body.insertRow();
    for (const [text, label] of row) {
      const cell = line.insertCell();
      cell.append(text);
      if (label) cell.append(textElement("span", ` (${label})`, "label"));
    }
  }
  box.append(table);
  if (result.row_count > result.rows.length) {
    box.append(textElement("p", `${result.rows.length} of ${result.row_count} rows shown.`, "count"));
  } else {
    box.append(textElement("p", result.row_count === 1 ? "1 row." : `${result.row_count} rows.`, "count"));
  }
  return box;
}

function stepsBox(turn) {
  const box = document.createElement("details");
  box.className = "steps-box";
  box.open = true;
  const summary = textElement("summary", "Steps");
  const list = document.createElement("ol");
  list.className = "steps";
  box.append(summary, list);
  turn.append(box);
  return box;
}

function showStep(box, step) {
  const list = box.querySelector(".steps");
  const item = document.createElement("li");
  item.className = step.rolled_back ? "step rolled-back" : "step";
  item.dataset.action = step.action;
  item.append(textElement("p", step.thought ? `${step.number}. ${step.thought}` : `${step.number}.`, "thought"));
  const undone = step.rolled_back ? " (rolled back)" : "";
  if (step.query !== undefined) {
    item.append(textElement("p", `${step.action}:${undone}`, "action"));
    item.append(textElement("pre", step.query, "sparql"));
  } else if (step.argument !== undefined) {
    item.append(textElement("p", `${step.action}(${step.argument})${undone}`, "action"));
  }
  if (step.table) item.append(resultTable(step.table, "step-result"));
  if (step.said && step.said.length) item.append(textElement("pre", step.said.join("\n"), "said"));
  if (step.unseen_ids && step.unseen_ids.length) {
    item.append(textElement("p", `IDs new to this run (check them): ${step.unseen_ids.join(", ")}`, "unseen"));
  }
  list.append(item);
  box.querySelector("summary").textContent = `Steps (${list.children.length})`;
}

function tryItLink(address, label = "Try it!") {
  let url;
  try { url = new URL(address); } catch (error) { return null; }
  if (url.protocol !== "https:") return null;
  const link = textElement("a", label, "try-it");
  link.href = url.href;
  link.rel = "noopener noreferrer";
  link.target = "_blank";
  return link;
}

// Copy the query: the Clipboard API where the page may use it, else the query's text is selected for the reader.
async function copyQuery(query, said) {
  const text = query.textContent;
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      said.textContent = "Copied.";
      return;
    } catch (error) { /* no permission: select it instead */ }
  }
  const range = document.createRange();
  range.selectNodeContents(query);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  said.textContent = "Selected: copy it with Ctrl+C (⌘C on a Mac).";
}

// A data date ("2026-11-28") as a reader reads it: "28 November 2026".
function writtenDate(day) {
  const date = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(date.getTime())) return day;
  return date.toLocaleDateString("en-GB", {day: "numeric", month: "long", year: "numeric", timeZone: "UTC"});
}

// Where the query runs: what each engine found, a "Try it" link on each that can run it, how fresh each one's
// data is, and a copy older than the server accepts named.  All of it is text or a checked https link.
function enginesBox(engines) {
  const box = document.createElement("div");
  box.className = "engines";
  if (engines.found) box.append(textElement("p", engines.found, "engines-found"));
  const list = document.createElement("ol");
  list.className = "engines-list";
  for (const run of engines.runs) {
    const item = document.createElement("li");
    const parts = [];
    const link = run.try_it ? tryItLink(run.try_it, `Try it on ${run.engine}`) : null;
    if (link) parts.push(link);
    else if (run.outcome !== "answered") parts.push(textElement("span", "cannot run it", "cannot"));
    let said = run.data_date ? `data as of ${writtenDate(run.data_date)}` : "";
    if (run.stale) {
      const limit = engines.stale_after_days ? `${engines.stale_after_days} days` : "this server accepts";
      said = run.data_date ? `${said}, older than ${limit}` : "its data's date is unknown";
    }
    if (said) parts.push(textElement("span", said, run.stale ? "data-date stale" : "data-date"));
    if (!parts.length) continue;
    item.append(textElement("span", `${run.engine}: `, "engine-name"));
    parts.forEach((part, index) => item.append(...(index ? [" · ", part] : [part])));
    list.append(item);
  }
  box.append(list);
  if (engines.posted_for) {
    box.append(textElement("p", `${engines.runs[0].engine} cannot run it, so the query above is the one for `
      + `${engines.posted_for}.`, "posted-for"));
  }
  return box;
}

function showFinal(turn, answer) {
  const box = document.createElement("div");
  box.className = "answer";
  if (answer.explanation) box.append(textElement("p", answer.explanation, "explanation"));
  if (answer.note) box.append(textElement("p", answer.note, "note"));
  if (answer.query) {
    const query = textElement("pre", answer.query, "query");
    const said = textElement("span", "", "copied");
    said.setAttribute("role", "status");
    const tools = document.createElement("p");
    tools.className = "tools";
    tools.append(button("Copy query", "copy", () => copyQuery(query, said)));
    const link = answer.try_it ? tryItLink(answer.try_it) : null;
    if (link) tools.append(" ", link);
    tools.append(" ", said);
    box.append(query, tools);
  }
  if (answer.preview && answer.preview.answer) box.append(textElement("p", answer.preview.answer, "preview"));
  else if (answer.preview) box.append(resultTable(answer.preview, "preview"));
  if (answer.query && answer.engines) box.append(enginesBox(answer.engines));  // under the rows: where else they are
  const steps = turn.querySelector(".steps-box");
  turn.insertBefore(box, steps);
  if (steps) steps.open = false;  // the answer first; the steps stay one click away
}

function fail(turn, message) {
  turn.insertBefore(textElement("p", message, "failed"), turn.querySelector(".steps-box"));
  const steps = turn.querySelector(".steps-box");
  if (steps && !steps.querySelector(".step")) steps.remove();
}

function newTurn(question) {
  const turn = document.createElement("section");
  turn.className = "turn";
  turn.append(textElement("p", question, "question"));
  byId("log").append(turn);
  return turn;
}

function detail(body, status) {
  return typeof body.detail === "string" ? body.detail : `The server refused the question (${status}).`;
}

// Read a run's events (all of them when the page comes back to a question in flight) until its end.
function follow(turn, run) {
  setBusy(true);
  const steps = stepsBox(turn);
  const status = document.createElement("p");
  status.className = "status-line";
  const said = textElement("span", "Waiting for a free agent…", "status");
  said.setAttribute("role", "status");
  const stop = button("Stop", "stop", async () => {
    stop.disabled = true;
    said.textContent = "Stopping…";
    await fetch(`/chat/runs/${encodeURIComponent(run)}/stop`, {method: "POST"}).catch(() => null);
  });
  status.append(said, " ", stop);
  turn.insertBefore(status, steps);
  const events = new EventSource(`/chat/runs/${encodeURIComponent(run)}/events`);
  source = events;
  const finish = () => {
    status.remove();
    events.close();
    source = null;
    turn.dataset.done = "true";
    setBusy(false);
  };
  events.addEventListener("queued", (message) => {
    said.textContent = `Waiting for a free agent: ${ordinal(JSON.parse(message.data).position)} in line.`;
  });
  events.addEventListener("started", () => { said.textContent = "The agent is exploring the graph…"; });
  events.addEventListener("step", (message) => showStep(steps, JSON.parse(message.data)));
  events.addEventListener("final", (message) => showFinal(turn, JSON.parse(message.data)));
  events.addEventListener("failed", (message) => fail(turn, JSON.parse(message.data).message));
  events.addEventListener("end", finish);
  events.onerror = () => {
    if (source !== events) return;
    finish();
    fail(turn, "The connection to the server was lost; reload the page to follow the question.");
  };
}

async function ask(event) {
  event.preventDefault();
  const question = byId("question").value.trim();
  if (!question || source) return;
  setBusy(true);
  const turn = newTurn(question);
  let response;
  try {
    response = await fetch("/chat/runs", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({question, graph: byId("graph").value, conversation}),
    });
  } catch (error) {
    fail(turn, "The server cannot be reached.");
    turn.dataset.done = "true";
    setBusy(false);
    return;
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    fail(turn, detail(body, response.status));
    turn.dataset.done = "true";
    setBusy(false);
    return;
  }
  conversation = body.conversation;
  linkTo(conversation);
  byId("graph").disabled = true;
  byId("question").value = "";
  follow(turn, body.run);
}

function notice(text) {
  byId("log").append(textElement("p", text, "notice"));
}

function newConversation() {
  conversation = null;
  linkTo(null);
  byId("log").replaceChildren();
  byId("graph").disabled = false;
}

// The conversation the page's link names: its questions and answers again, and the question in flight followed.
async function restore(id) {
  const response = await fetch(`/chat/conversations/${encodeURIComponent(id)}`).catch(() => null);
  if (!response || !response.ok) {
    linkTo(null);
    notice(response && response.status === 404
      ? "This conversation link is unknown to the server, or the server has forgotten it. Ask below to start a new one."
      : "The conversation could not be loaded; reload the page to try again.");
    return;
  }
  const found = await response.json();
  conversation = found.conversation;
  if (found.served) {
    byId("graph").value = found.graph;
    byId("graph").disabled = true;
  } else {
    notice(`This conversation was about ${found.title}, which this server no longer serves.`);
    conversation = null;
  }
  for (const shown of found.turns) {
    const turn = newTurn(shown.question);
    if (shown.steps && shown.steps.length) {
      const steps = stepsBox(turn);
      for (const step of shown.steps) showStep(steps, step);
      steps.open = false;
    }
    if (shown.final) showFinal(turn, shown.final);
    if (shown.failed) fail(turn, shown.failed);
    turn.dataset.done = "true";
  }
  if (found.running) follow(newTurn(found.running.question), found.running.run);
}

function linked() {
  const match = /^#c=([A-Za-z0-9_-]+)$/.exec(location.hash);
  return match ? match[1] : null;
}

async function start() {
  // A page left for another (or kept in the back-forward cache) stops watching its run: with no page back on it
  // within half a minute, the server stops it.
  window.addEventListener("pagehide", () => {
    if (source) source.close();
  });
  window.addEventListener("hashchange", () => location.reload());
  byId("ask").addEventListener("submit", ask);
  byId("new").addEventListener("click", newConversation);
  const response = await fetch("/chat/graphs");
  for (const graph of await response.json()) {
    const option = textElement("option", graph.title);
    option.value = graph.name;
    byId("graph").append(option);
  }
  const id = linked();
  if (id) await restore(id);
  else if (location.hash) { linkTo(null); notice("This conversation link is not one the server gives out."); }
  document.body.dataset.ready = "true";
}

start();
