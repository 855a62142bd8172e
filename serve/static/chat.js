"use strict";
// Every string the server sends comes from the asker, the model or the graph: it is set as textContent (or as
// an attribute by the DOM), never parsed as HTML, and a link is made only from an https URL the server built.

const byId = (id) => document.getElementById(id);
let conversation = null;
let source = null;

function textElement(tag, text, className) {
  const element = document.createElement(tag);
  element.textContent = text;
  if (className) element.className = className;
  return element;
}

function setBusy(busy) {
  byId("send").disabled = busy;
  byId("new").disabled = busy;
  document.body.dataset.busy = busy ? "true" : "false";
}

function fail(turn, message) {
  turn.append(textElement("p", message, "failed"));
  turn.dataset.done = "true";
}

function showStep(list, step) {
  const item = document.createElement("li");
  item.className = step.rolled_back ? "step rolled-back" : "step";
  item.dataset.action = step.action;
  item.append(textElement("pre", step.lines.join("\n")));
  list.append(item);
}

function tryItLink(address) {
  let url;
  try { url = new URL(address); } catch (error) { return null; }
  if (url.protocol !== "https:") return null;
  const link = textElement("a", "Try it!", "try-it");
  link.href = url.href;
  link.rel = "noopener noreferrer";
  link.target = "_blank";
  return link;
}

function showFinal(turn, answer) {
  const box = document.createElement("div");
  box.className = "answer";
  if (answer.note) box.append(textElement("p", answer.note, "note"));
  if (answer.query) {
    box.append(textElement("pre", answer.query, "query"));
    const link = answer.try_it ? tryItLink(answer.try_it) : null;
    if (link) box.append(link);
  }
  if (answer.preview !== null) box.append(textElement("pre", answer.preview, "preview"));
  if (answer.explanation) box.append(textElement("p", answer.explanation, "explanation"));
  turn.append(box);
}

function detail(body, status) {
  return typeof body.detail === "string" ? body.detail : `The server refused the question (${status}).`;
}

async function ask(event) {
  event.preventDefault();
  const question = byId("question").value.trim();
  if (!question || source) return;
  setBusy(true);
  const turn = document.createElement("section");
  turn.className = "turn";
  turn.append(textElement("p", question, "question"));
  const steps = document.createElement("ol");
  steps.className = "steps";
  turn.append(steps);
  byId("log").append(turn);
  let response;
  try {
    response = await fetch("/chat/runs", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({question, graph: byId("graph").value, conversation}),
    });
  } catch (error) {
    fail(turn, "The server cannot be reached.");
    setBusy(false);
    return;
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    fail(turn, detail(body, response.status));
    setBusy(false);
    return;
  }
  conversation = body.conversation;
  byId("graph").disabled = true;
  byId("question").value = "";
  const events = new EventSource(`/chat/runs/${encodeURIComponent(body.run)}/events`);
  source = events;
  const status = textElement("p", "Waiting for a free agent…", "status");
  turn.append(status);
  events.addEventListener("started", () => { status.textContent = "The agent is exploring the graph…"; });
  events.addEventListener("step", (message) => showStep(steps, JSON.parse(message.data)));
  events.addEventListener("final", (message) => showFinal(turn, JSON.parse(message.data)));
  events.addEventListener("failed", (message) => fail(turn, JSON.parse(message.data).message));
  events.addEventListener("end", () => {
    status.remove();
    events.close();
    source = null;
    turn.dataset.done = "true";
    setBusy(false);
  });
  events.onerror = () => {
    if (source !== events) return;
    status.remove();
    events.close();
    source = null;
    fail(turn, "The connection to the server was lost.");
    setBusy(false);
  };
}

function newConversation() {
  conversation = null;
  byId("log").replaceChildren();
  byId("graph").disabled = false;
}

async function start() {
  // A page left for another (or kept in the back-forward cache) ends its run: the server stops it.
  window.addEventListener("pagehide", () => {
    if (source) source.close();
  });
  byId("ask").addEventListener("submit", ask);
  byId("new").addEventListener("click", newConversation);
  const response = await fetch("/chat/graphs");
  for (const graph of await response.json()) {
    const option = textElement("option", graph.title);
    option.value = graph.name;
    byId("graph").append(option);
  }
  document.body.dataset.ready = "true";
}

start();
