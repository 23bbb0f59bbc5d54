// What both signed-in pages share: who is signed in, a banner, and a
// WebSocket that comes back by itself (with backoff) when the daemon
// restarts or the network drops.
"use strict";

const serialgate = {
  // GET /web/whoami: {token, access}; a page shows it in #who.
  async whoami() {
    const response = await fetch("/web/whoami", { credentials: "same-origin" });
    if (response.status === 401) {
      location.href = "/web/signin";
      return null;
    }
    const me = await response.json();
    const who = document.getElementById("who");
    if (who) who.textContent = `${me.token} (${me.access})`;
    return me;
  },

  banner(text) {
    const banner = document.getElementById("banner");
    banner.textContent = text || "";
    banner.hidden = !text;
  },

  // Opens `path` as a WebSocket and keeps it open: on a close it waits
  // 0.5 s, then twice as long each time up to 10 s, and shows a banner
  // meanwhile. `handlers.open(ws)`, `handlers.message(event)` and
  // `handlers.closed()` are called; a handler returning true from
  // `message` marks the connection healthy (the backoff starts over).
  live(path, handlers) {
    let delay = 500;
    const url = `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}${path}`;
    const connect = () => {
      const ws = new WebSocket(url);
      ws.binaryType = "arraybuffer";
      ws.onopen = () => handlers.open && handlers.open(ws);
      ws.onmessage = (event) => {
        if (handlers.message(event)) {
          delay = 500;
          serialgate.banner("");
        }
      };
      ws.onclose = () => {
        if (handlers.closed) handlers.closed();
        // A session that ended (signed out elsewhere, expired, or the
        // daemon restarted with no state_dir to keep sessions in) goes
        // back to the sign-in form; a daemon that is away is waited for.
        fetch("/web/whoami", { credentials: "same-origin" })
          .then((r) => { if (r.status === 401) location.href = "/web/signin"; })
          .catch(() => {});
        const seconds = (delay / 1000).toFixed(1);
        serialgate.banner(`The connection to the gateway is lost; reconnecting in ${seconds} s…`);
        setTimeout(connect, delay);
        delay = Math.min(delay * 2, 10000);
      };
    };
    connect();
  },

  // An element with text (never HTML) and a class.
  el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  },
};
