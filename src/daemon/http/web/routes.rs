//! The web view's routes: which need a browser login, the login and
//! origin checks in front of them, the per-token connection share, and
//! the headers of every response.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use super::state::WebState;
use super::{assets, origin, ports_live, signin, transcript};
use crate::access::Caller;
use crate::daemon::http::listener::Admission;

/// The Content-Security-Policy of every web view response: nothing but the
/// daemon itself (scripts, styles, WebSockets); inline styles are allowed
/// because xterm.js sizes its rows with `<style>` elements it writes, while
/// inline scripts are not.
pub const CSP: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The web view's routes, to merge beside `/mcp`.
pub fn router(state: WebState) -> Router {
    let signed_in_pages = Router::new()
        .route("/web/", get(assets::ports_page))
        .route("/web/console/{port}", get(assets::console_page))
        .route_layer(middleware::from_fn_with_state(state.clone(), page_login));
    let signed_in = Router::new()
        .route("/web/assets/{file}", get(assets::asset))
        .route("/web/whoami", get(whoami))
        .route("/web/ports/live", get(ports_live::live))
        .route("/web/console/{port}/transcript", get(transcript::download))
        .route_layer(middleware::from_fn_with_state(state.clone(), api_login));
    let public = Router::new()
        .route("/", get(|| async { Redirect::to("/web/") }))
        .route("/web", get(|| async { Redirect::to("/web/") }))
        .route("/web/signin", get(signin::form).post(signin::sign_in))
        .route("/web/signout", axum::routing::post(signin::sign_out))
        // Anything else under /web/ is a 404 from here, so that it carries
        // the same security headers as the pages.
        .route("/web/{*rest}", axum::routing::any(not_found))
        .route_layer(DefaultBodyLimit::max(signin::MAX_FORM_BYTES));
    Router::new()
        .merge(signed_in_pages)
        .merge(signed_in)
        .merge(public)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            security_headers,
        ))
        .with_state(state)
}

/// A path under `/web/` that is none of the view's.
async fn not_found() -> (axum::http::StatusCode, &'static str) {
    (
        axum::http::StatusCode::NOT_FOUND,
        "no such page: the web view is at /web/\n",
    )
}

/// The caller a request to the signed-in routes comes from, or `None`.
fn login_caller(state: &WebState, request: &Request) -> Option<Caller> {
    if state.open {
        return origin::host_is_loopback(request.headers()).then(Caller::anonymous);
    }
    state.logins.caller(request.headers(), &state.gateway)
}

/// In front of the pages: without a login, the sign-in form.
async fn page_login(State(state): State<WebState>, request: Request, next: Next) -> Response {
    match login_caller(&state, &request) {
        Some(caller) => admitted(caller, request, next).await,
        None => Redirect::to("/web/signin").into_response(),
    }
}

/// In front of assets, the live feed and downloads: without a login,
/// `401`; a WebSocket must also come from the page's own origin (`403`).
async fn api_login(State(state): State<WebState>, request: Request, next: Next) -> Response {
    let Some(caller) = login_caller(&state, &request) else {
        return (StatusCode::UNAUTHORIZED, "sign in first: /web/signin\n").into_response();
    };
    if request.headers().contains_key(header::UPGRADE) && !origin::same_origin(request.headers()) {
        tracing::warn!(
            "refused a web WebSocket to {}: its Origin is not this server's",
            crate::error::shown(request.uri().path())
        );
        return (
            StatusCode::FORBIDDEN,
            "this WebSocket may only be opened by the web view's own pages\n",
        )
            .into_response();
    }
    admitted(caller, request, next).await
}

/// Counts the connection as the caller's (the listener's shares of its
/// token and its access)
/// and hands the caller to the route.
async fn admitted(caller: Caller, mut request: Request, next: Next) -> Response {
    if let Some(admission) = request.extensions().get::<Admission>()
        && let Err(crowded) = admission.authenticated(&caller.name, caller.access)
    {
        tracing::warn!(
            "refused {}: token {:?}'s connection: {crowded:?}",
            crate::error::shown(request.uri().path()),
            caller.name
        );
        return crowded.response();
    }
    request.extensions_mut().insert(Arc::new(caller));
    next.run(request).await
}

/// How long a browser that saw the view over TLS keeps to `https://` for
/// this host: a year.
pub const HSTS: &str = "max-age=31536000";

/// The CSP and the no-cache, no-sniff, no-frame, same-origin-referrer headers on
/// every web view response; over TLS also `Strict-Transport-Security`, and
/// the login cookie marked `Secure` (never sent over plain HTTP).
async fn security_headers(State(state): State<WebState>, request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if state.tls {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        );
        let cookies: Vec<HeaderValue> = headers
            .get_all(header::SET_COOKIE)
            .iter()
            .filter_map(|c| {
                let text = c.to_str().ok()?;
                HeaderValue::from_str(&format!("{text}; Secure")).ok()
            })
            .collect();
        if !cookies.is_empty() {
            headers.remove(header::SET_COOKIE);
            for cookie in cookies {
                headers.append(header::SET_COOKIE, cookie);
            }
        }
    }
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        // Not `no-referrer`: under it Chromium sends `Origin: null` with
        // the sign-in form, which the origin check must refuse.
        HeaderValue::from_static("same-origin"),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// `GET /web/whoami`: the signed-in token's name and access, for the
/// pages' header and their buttons.
async fn whoami(axum::Extension(caller): axum::Extension<Arc<Caller>>) -> Response {
    axum::Json(serde_json::json!({
        "token": caller.name,
        "access": caller.access.name(),
    }))
    .into_response()
}
