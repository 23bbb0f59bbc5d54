// A console page: the port's output in xterm.js (the replay, then live),
// over the attach protocol's WebSocket /ports/{port}/console; what is
// typed goes to the device once this browser holds the write (typing
// claims a free hold; a read token's keys are refused by the daemon).
// A reconnect resumes at the last offset shown, so nothing is lost or
// shown twice.
"use strict";

(() => {
  const { el } = serialgate;
  const port = decodeURIComponent(location.pathname.split("/")[3] || "");
  document.getElementById("port").textContent = port;
  document.title = `serialgate: ${port}`;
  const transcript = document.getElementById("transcript");
  transcript.href = `/web/console/${encodeURIComponent(port)}/transcript`;

  const term = new Terminal({ cols: 100, rows: 30, scrollback: 5000, fontSize: 14 });
  term.open(document.getElementById("terminal"));

  let ws = null;
  let seen = null; // the OutputLog offset after the last byte shown
  let log = null; // which log `seen` is an offset in (a restart starts another)
  let session = null; // this attachment's session number
  const encoder = new TextEncoder();

  const events = document.getElementById("events");
  const event = (text, className) => {
    const li = el("li", null, className);
    li.append(el("time", new Date().toLocaleTimeString()), document.createTextNode(text));
    events.prepend(li);
    while (events.children.length > 200) events.lastChild.remove();
  };
  const showState = (state) => {
    const node = document.getElementById("state");
    node.textContent = state;
    node.className = `state state-${state}`;
  };
  const showHolder = (holder) => {
    document.getElementById("holder").textContent = !holder
      ? "nobody holds the write"
      : holder.session === session ? "you hold the write" : `${holder.who} holds the write`;
  };

  const send = (message) => {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  };
  // The lines waiting on this port for a person's approval: a badge in
  // the header and a card each, whose buttons decide on this console's
  // own connection (the daemon checks who may decide).
  let readOnly = false;
  let pendingShown = []; // the requests last shown
  let cards = new Map(); // their cards, kept while unchanged (serialgate.keptCards)
  const decide = (request, approve) =>
    send({ type: "decide", id: request.id, line: request.line, approve });
  const showApprovals = (pending) => {
    pendingShown = pending;
    const badge = document.getElementById("approvals-badge");
    badge.textContent = `${pending.length} waiting for approval`;
    badge.hidden = pending.length === 0;
    cards = serialgate.keptCards(cards, pending.map((request) => ({ request, screen: null })), readOnly,
      (request) => serialgate.approvalCard(request, null, decide, readOnly));
    document.getElementById("approval-list").replaceChildren(...[...cards.values()].map((c) => c.card));
    document.getElementById("approvals").hidden = pending.length === 0;
  };
  for (const id of ["acquire", "force", "release"]) {
    document.getElementById(id).onclick = () => send({ type: id });
  }
  document.getElementById("break").onclick = () => send({ type: "break" });
  // The page sends only what a person typed or pasted. xterm.js answers a
  // device's queries (cursor position, device attributes, colours) and
  // reports focus and mouse through the same onData as keys: the daemon
  // answers the queries already, so the terminal is told they are handled
  // (it answers nothing), and onData is forwarded only right after the
  // person's own keyboard, paste or input-method event in this terminal,
  // so an idle tab neither answers twice nor takes the write hold.
  const handled = () => true;
  term.parser.registerCsiHandler({ final: "n" }, handled); // DSR: status, cursor position
  term.parser.registerCsiHandler({ prefix: "?", final: "n" }, handled);
  term.parser.registerCsiHandler({ final: "c" }, handled); // DA1
  term.parser.registerCsiHandler({ prefix: ">", final: "c" }, handled); // DA2
  term.parser.registerCsiHandler({ prefix: "=", final: "c" }, handled); // DA3
  term.parser.registerCsiHandler({ intermediates: "$", final: "p" }, handled); // DECRQM
  term.parser.registerCsiHandler({ prefix: "?", intermediates: "$", final: "p" }, handled);
  term.parser.registerCsiHandler({ final: "t" }, handled); // window reports
  term.parser.registerCsiHandler({ final: "x" }, handled); // DECREQTPARM
  term.parser.registerDcsHandler({ intermediates: "$", final: "q" }, handled); // DECRQSS
  term.parser.registerDcsHandler({ intermediates: "+", final: "q" }, handled); // XTGETTCAP
  for (const osc of [4, 10, 11, 12, 17, 19, 52, 104]) {
    // A colour or clipboard query ("?") is answered by nobody here; a
    // colour that is set is left to the terminal.
    term.parser.registerOscHandler(osc, (data) => data.includes("?"));
  }
  let personAt = -Infinity; // when the person last typed, pasted or composed
  const person = () => { personAt = performance.now(); };
  for (const type of ["keydown", "keypress", "paste", "input", "compositionend"]) {
    document.getElementById("terminal").addEventListener(type, person, true);
  }
  term.onData((data) => {
    if (performance.now() - personAt > 1000) return; // not typed: a report
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(encoder.encode(data));
  });

  const onJson = (m) => {
    switch (m.type) {
      case "attached":
        session = m.session;
        showState(m.state);
        showHolder(m.holder);
        if (log !== null && m.log !== log) {
          // Another log (the gateway restarted): its offsets start again.
          event("the gateway restarted; its output since then follows", "error");
          term.write("\r\n\x1b[7m -- the gateway restarted -- \x1b[0m\r\n");
          seen = null;
        }
        log = m.log;
        event(`attached as ${m.you}${seen === null ? "" : `, resuming at ${m.start}`}`);
        if (seen !== null && m.start > seen) event(`${m.start - seen} bytes were dropped by retention while away`, "error");
        return true;
      case "holder": showHolder(m.holder); event(m.what || "the write hold changed"); break;
      case "state": showState(m.state); event(`the port is ${m.state}`, m.state === "open" ? "" : "error"); break;
      case "joined": event(`${m.participant.who} attached${m.participant.spy ? " (spy)" : ""}`); break;
      case "left": event(`${m.participant.who} left`); break;
      case "truncated": event(`output ${m.from}–${m.to} was dropped by retention`, "error"); break;
      case "approvals": showApprovals(m.pending); break;
      case "decided": event(`you ${m.approved ? "approved" : "denied"} request ${m.id}: ${m.line}`); break;
      case "error":
        event(`${m.code}: ${m.message}`, "error");
        // A decision that failed: its buttons come back (drawn anew).
        cards = new Map();
        showApprovals(pendingShown);
        break;
      case "bye": event(`the gateway ended this console: ${m.reason}`, "error"); break;
      default: break;
    }
    return false;
  };

  serialgate.live(`/ports/${encodeURIComponent(port)}/console`, {
    open(socket) {
      ws = socket;
      const hello = { type: "hello", port, mode: "watch", client: "web view", replay_lines: 200 };
      if (seen !== null) {
        hello.from = seen;
        hello.log = log;
      }
      socket.send(JSON.stringify(hello));
    },
    message(e) {
      if (typeof e.data === "string") return onJson(JSON.parse(e.data));
      const view = new DataView(e.data);
      if (e.data.byteLength < 8) return false;
      const offset = Number(view.getBigUint64(0));
      const bytes = new Uint8Array(e.data, 8);
      // A resumed stream never repeats; skip any overlap all the same.
      const skip = seen !== null && offset < seen ? Math.min(seen - offset, bytes.length) : 0;
      term.write(bytes.subarray(skip));
      seen = offset + bytes.length;
      return false;
    },
    closed() {
      ws = null;
      showState("disconnected");
      showApprovals([]);
    },
  });

  serialgate.whoami().then((me) => {
    if (me && me.access === "read") {
      readOnly = true;
      for (const id of ["acquire", "force", "release", "break"]) {
        document.getElementById(id).disabled = true;
      }
      event(`token ${me.token} has read access: watching only`);
    } else if (me && me.access !== "admin") {
      // BREAK is a line signal: admin's, as over MCP (the daemon refuses it).
      document.getElementById("break").disabled = true;
    }
  });

  // For the browser tests: the terminal's text, row by row, as xterm holds it.
  window.serialgateTest = {
    screen() {
      const buffer = term.buffer.active;
      const lines = [];
      for (let i = 0; i < buffer.length; i++) lines.push(buffer.getLine(i).translateToString(true));
      return lines.join("\n");
    },
    seen: () => seen,
    log: () => log,
    // Drops the connection as a network would; the page reconnects.
    drop: () => ws && ws.close(),
  };
})();
