//! The attach protocol over a WebSocket on the HTTP listener, for people
//! at a remote terminal (and the browser view): `GET /ports/{name}/console`
//! attaches to that port, `GET /console` to the port the hello names (or
//! lists them). The bearer token (or, from the web view's own pages, its
//! session cookie) is checked by the same middleware as `/mcp`; its port
//! globs and access apply to what the person may watch and write, and
//! are checked again at every reload and when its browser login ends
//! ([`crate::access::standing`]). A text message is a JSON message, a
//! binary message data.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::access::Caller;
use crate::access::standing::Standing;
use crate::console::attachment::{self, OUTGOING_FRAMES, Person};
use crate::console::protocol::{Frame, MAX_JSON_BYTES};
use crate::daemon::http::web::browser_login::{self, BrowserLogins};
use crate::daemon::http::web::login_standing;
use crate::gateway::Gateway;

/// What the console routes need.
#[derive(Clone)]
pub(super) struct ConsoleState {
    /// The ports.
    pub(super) gateway: Gateway,
    /// Ends every attachment at shutdown.
    pub(super) cancel: CancellationToken,
    /// The web view's browser logins, whose end closes the consoles
    /// they opened.
    pub(super) logins: BrowserLogins,
    /// `auth = "none"` on loopback: every caller is anonymous, nothing
    /// to revoke.
    pub(super) open: bool,
}

/// `GET /ports/{name}/console`: attach to `name`.
pub(super) async fn attach_port(
    State(state): State<ConsoleState>,
    Path(name): Path<String>,
    Extension(caller): Extension<Arc<Caller>>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    upgrade_to_console(upgrade, state, &caller, &headers, Some(name))
}

/// `GET /console`: attach to the port the hello names, or list them.
pub(super) async fn attach_any(
    State(state): State<ConsoleState>,
    Extension(caller): Extension<Arc<Caller>>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    upgrade_to_console(upgrade, state, &caller, &headers, None)
}

/// How the caller of a console WebSocket is re-checked, as the
/// authentication middleware found it: without auth, never; with a
/// browser login's cookie (and no bearer token), against that login; with
/// a bearer token, by the token's name at every reload.
fn standing(state: &ConsoleState, caller: &Caller, headers: &HeaderMap) -> Standing {
    if state.open {
        return Standing::fixed(caller.clone(), &state.gateway);
    }
    if !headers.contains_key(header::AUTHORIZATION)
        && browser_login::login_id(headers).is_some()
        && let Some(standing) =
            login_standing(&state.logins, &state.gateway, caller.clone(), headers)
    {
        return standing;
    }
    Standing::token(caller.clone(), &state.gateway)
}

fn upgrade_to_console(
    upgrade: WebSocketUpgrade,
    state: ConsoleState,
    caller: &Caller,
    headers: &HeaderMap,
    only_port: Option<String>,
) -> Response {
    let person = Person {
        standing: standing(&state, caller, headers),
        name: caller.name.clone(),
    };
    upgrade
        .max_message_size(MAX_JSON_BYTES)
        .max_frame_size(MAX_JSON_BYTES)
        .on_upgrade(move |socket| pump(socket, state, person, only_port))
}

/// Moves frames between the WebSocket and a person's attachment ([`crate::console::attachment`]).
async fn pump(socket: WebSocket, state: ConsoleState, person: Person, only_port: Option<String>) {
    let (mut sink, mut stream) = socket.split();
    let (in_tx, in_rx) = mpsc::channel(OUTGOING_FRAMES);
    let (out_tx, mut out_rx) = mpsc::channel::<Frame>(OUTGOING_FRAMES);
    let reader = crate::task::spawn(async move {
        while let Some(Ok(message)) = stream.next().await {
            let frame = match message {
                Message::Text(text) => Frame::Json(text.as_str().to_owned()),
                Message::Binary(bytes) => Frame::Data(bytes.to_vec()),
                Message::Close(_) => return,
                // axum answers pings itself.
                Message::Ping(_) | Message::Pong(_) => continue,
            };
            if in_tx.send(frame).await.is_err() {
                return;
            }
        }
    });
    let writer = crate::task::spawn(async move {
        while let Some(frame) = out_rx.recv().await {
            let message = match frame {
                Frame::Json(text) => Message::Text(text.into()),
                Frame::Data(bytes) => Message::Binary(bytes.into()),
            };
            if sink.send(message).await.is_err() {
                return;
            }
        }
        let _ = sink.close().await;
    });
    attachment::serve(
        state.gateway,
        person,
        only_port,
        in_rx,
        out_tx,
        state.cancel,
    )
    .await;
    reader.abort();
    attachment::finish_writer(writer).await;
}
