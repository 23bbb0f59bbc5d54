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
  for (const id of ["acquire", "force", "release"]) {
    document.getElementById(id).onclick = () => send({ type: id });
  }
  document.getElementById("break").onclick = () => send({ type: "break" });
  term.onData((data) => {
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
      case "error": event(`${m.code}: ${m.message}`, "error"); break;
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
    },
  });

  serialgate.whoami().then((me) => {
    if (me && me.access === "read") {
      for (const id of ["acquire", "force", "release", "break"]) {
        document.getElementById(id).disabled = true;
      }
      event(`token ${me.token} has read access: watching only`);
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
