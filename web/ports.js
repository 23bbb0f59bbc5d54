// The ports page: one row per port the token sees, redrawn whenever the
// daemon pushes a snapshot over /web/ports/live, with a badge on each port
// where lines wait for a person's approval, and those requests listed
// above the table with the port's last lines; Approve and Deny send a
// decision on the same feed, naming the request and the exact line shown.
// What a person may be clicking survives a redraw: a port's link is the
// same element from one snapshot to the next, and a request's card is
// kept while what it shows is unchanged, so that a click is never lost
// to a snapshot arriving between pressing and releasing the button.
"use strict";

(() => {
  const { el } = serialgate;
  const body = document.querySelector("#ports tbody");
  let ws = null;

  const note = (text, className) => {
    const node = document.getElementById("approval-note");
    node.textContent = text;
    node.className = `note ${className || ""}`;
    node.hidden = !text;
  };
  const decide = (request, approve) => {
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      note("not connected to the gateway: nothing was decided", "error");
      return;
    }
    ws.send(JSON.stringify({ type: "decide", port: request.port, id: request.id, line: request.line, approve }));
  };

  const since = (rfc3339) => {
    const at = new Date(rfc3339);
    return isNaN(at) ? rfc3339 : at.toLocaleTimeString();
  };

  let links = new Map(); // port name → its link, kept across redraws
  let cards = new Map(); // the request cards, kept while unchanged (serialgate.keptCards)

  const row = (port) => {
    const tr = el("tr");
    tr.dataset.port = port.name;
    tr.dataset.state = port.state;
    if (["lost", "down", "closed"].includes(port.state)) tr.className = "trouble";

    const name = el("td");
    const link = links.get(port.name) || el("a", port.name);
    link.href = `/web/console/${encodeURIComponent(port.name)}`;
    name.append(link);
    if (port.approvals_waiting > 0) {
      name.append(el("span", `${port.approvals_waiting} waiting`, "badge"));
    }

    const state = el("td");
    state.append(el("span", port.state, `state state-${port.state}`));
    if (port.reason) state.append(el("span", port.reason, "reason"));

    const device = el("td", `${port.device} · ${port.preset}`);
    const mode = port.mode
      ? el("td", port.mode)
      : el("td", "not reported", "placeholder");

    const watching = el("td");
    if (port.watchers.length === 0) watching.append(el("span", "nobody", "placeholder"));
    for (const w of port.watchers) {
      watching.append(el("div", `${w.who}${w.spy ? " (spy)" : ""} since ${since(w.since)}`, "person"));
    }

    const holder = el("td");
    if (port.holder) {
      holder.append(el("div", `${port.holder.kind}: ${port.holder.who}`, port.holder.kind));
      holder.append(el("div", `since ${since(port.holder.since)}`, "note"));
    } else {
      holder.append(el("span", "free", "placeholder"));
    }

    const bytes = el("td", `${port.bytes_read.toLocaleString()} · ${port.bytes_written.toLocaleString()}`);
    tr.append(name, state, device, mode, watching, holder, el("td", port.reconnects),
      el("td", port.last_line, "last"), bytes);
    return tr;
  };

  let last = null; // the last snapshot
  const render = (snapshot) => {
    last = snapshot;
    const rows = snapshot.ports.map(row);
    links = new Map(rows.map((tr) => [tr.dataset.port, tr.querySelector("a")]));
    body.replaceChildren(...rows);
    const requests = snapshot.ports.flatMap(
      (port) => port.approvals.map((request) => ({ request, screen: port.screen })));
    const readOnly = snapshot.access === "read";
    cards = serialgate.keptCards(cards, requests, readOnly,
      (request, screen) => serialgate.approvalCard(request, screen, decide, readOnly));
    const list = [...cards.values()].map((c) => c.card);
    document.getElementById("approval-list").replaceChildren(...list);
    document.getElementById("approvals").hidden = list.length === 0;
    document.getElementById("empty").hidden = snapshot.ports.length > 0;
    document.getElementById("who").textContent = `${snapshot.token} (${snapshot.access})`;
    document.getElementById("bytes-note").textContent =
      `Bytes in (from the device) and out (to it) since ${snapshot.bytes_since}; `
      + "counts and last lines refresh at most once a second while output flows.";
  };

  serialgate.live("/web/ports/live", {
    open(socket) { ws = socket; },
    message(event) {
      const message = JSON.parse(event.data);
      switch (message.type) {
        case "ports":
          render(message);
          document.body.dataset.snapshots = String(Number(document.body.dataset.snapshots || 0) + 1);
          return true;
        case "decided":
          note(`you ${message.approved ? "approved" : "denied"} request ${message.id} on ${message.port}`);
          return false;
        case "error":
          note(`${message.code}: ${message.message}`, "error");
          // The buttons pressed come back: nothing was decided (the
          // cards are drawn anew, enabled).
          cards = new Map();
          if (last) render(last);
          return false;
        default: return false;
      }
    },
    closed() { ws = null; },
  });
})();
