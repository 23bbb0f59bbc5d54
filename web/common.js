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

  // The cards of `requests` ({ request, screen } each), each kept from
  // `kept` (the Map this returns, which the page holds) while what it
  // shows is unchanged, so that a redraw never swaps a button a person
  // is clicking; `draw(request, screen)` makes a new one.
  keptCards(kept, requests, readOnly, draw) {
    const next = new Map();
    for (const { request, screen } of requests) {
      // Numbered per gateway: another site's request may share a number.
      const key = `${request.port}#${request.id}`;
      // The seconds left tick down on the card itself: not a change.
      const shown = JSON.stringify([{ ...request, expires_in_s: 0 }, screen, readOnly]);
      const old = kept.get(key);
      next.set(key, { shown, card: old && old.shown === shown ? old.card : draw(request, screen) });
    }
    return next;
  },

  // One request waiting for a person's approval, as a card: who asks,
  // the exact line, its mode, why, how long is left, `screen` (the port's
  // last lines, or nothing) and Approve and Deny buttons, which call
  // `decide(request, approve)`. Every string is set as text: a line is
  // whatever the agent sent. `disabled`: the buttons are (read access).
  approvalCard(request, screen, decide, disabled) {
    const { el } = serialgate;
    const card = el("div", null, "approval");
    card.dataset.id = String(request.id);
    card.dataset.port = request.port;
    const head = el("div", null, "approval-head");
    const expires = el("span", null, "expires");
    expires.dataset.deadline = String(performance.now() + request.expires_in_s * 1000);
    head.append(el("span", `request ${request.id} on ${request.port}`), expires);
    card.append(head, el("div", `${request.who} asks to send`, "asker"));
    card.append(el("code", request.line, "line"));
    card.append(el("div", `${request.mode} mode · ${request.reason}`, "why"));
    if (screen && screen.length > 0) card.append(el("pre", screen.join("\n"), "screen-lines"));
    const buttons = el("div", null, "decide");
    const approve = el("button", "Approve", "approve");
    const deny = el("button", "Deny", "deny");
    for (const [button, yes] of [[approve, true], [deny, false]]) {
      button.type = "button";
      button.disabled = Boolean(disabled);
      button.onclick = () => {
        approve.disabled = true;
        deny.disabled = true;
        decide(request, yes);
      };
    }
    buttons.append(approve, deny);
    card.append(buttons);
    serialgate.countdown();
    return card;
  },

  // Shows the seconds left on every card's `.expires`, now and each
  // second (one timer for the page).
  countdown() {
    const tick = () => {
      for (const node of document.querySelectorAll(".approval .expires")) {
        const left = Math.max(0, Math.round((Number(node.dataset.deadline) - performance.now()) / 1000));
        node.textContent = left > 0 ? `expires in ${left} s` : "expired";
      }
    };
    tick();
    if (!serialgate.ticking) serialgate.ticking = setInterval(tick, 1000);
  },

  // An element with text (never HTML) and a class.
  el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  },
};
