//! Signing a browser in and out. The form is the only thing the web view
//! shows without a login: one self-contained page (no script, no asset)
//! that asks for a token's secret. `POST /web/signin` checks it like a
//! bearer token (constant time, every token compared) and starts a
//! server-side browser login (`browser_login.rs`); `POST /web/signout` ends it. Both must come from
//! the web view's own origin ([`super::origin`]); failed sign-ins are
//! logged with the client's address (never what was typed) and throttled
//! by source with the bearer tokens' failures ([`crate::daemon::http::throttle`]):
//! a held source is answered `429` for every secret but a long one.

use std::net::SocketAddr;

use axum::Form;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::browser_login::{self, LoginRefused, MAX_LOGINS};
use super::origin;
use super::state::WebState;
use crate::config::LONG_SECRET_BYTES;
use crate::daemon::http::auth::{Reach, find_token};

/// The largest sign-in form accepted (an oversized body is `413`).
pub const MAX_FORM_BYTES: usize = 8 * 1024;
/// The longest token secret the form takes; longer ones are refused
/// without being compared.
pub const MAX_TOKEN_BYTES: usize = 1024;

/// The sign-in form's fields.
#[derive(Deserialize)]
pub struct SignInForm {
    /// The token's secret.
    token: String,
}

/// `GET /web/signin`: the form (or, without auth, the ports page).
pub async fn form(State(state): State<WebState>) -> Response {
    if state.open {
        return Redirect::to("/web/").into_response();
    }
    page(StatusCode::OK, None)
}

/// `POST /web/signin`: a token's secret in, a login cookie out.
pub async fn sign_in(
    State(state): State<WebState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> Response {
    if state.open {
        return Redirect::to("/web/").into_response();
    }
    if !origin::same_origin(&headers) {
        tracing::warn!("{peer}: web sign-in refused: not sent from this server's sign-in page");
        return page(
            StatusCode::FORBIDDEN,
            Some("Sign in from this server's own sign-in page."),
        );
    }
    let ip = peer.ip();
    // A held address may still sign in with a long secret (see `auth`).
    let held = state.throttle.check(ip).err();
    let secret = form.token.trim().as_bytes();
    let config = state.gateway.config();
    let token = (secret.len() <= MAX_TOKEN_BYTES)
        .then(|| find_token(&config.tokens, secret, Reach::from_address(held.is_some())))
        .flatten()
        // A metrics token only scrapes: it signs in to nothing.
        .filter(|t| t.access != crate::config::TokenAccess::Metrics);
    let Some(token) = token else {
        state.throttle.failed(ip);
        if let Some(held) = held {
            tracing::warn!(
                "{peer}: web sign-in refused: too many failed sign-ins from this address"
            );
            let seconds = held.seconds();
            let mut response = page(
                StatusCode::TOO_MANY_REQUESTS,
                Some(&format!(
                    "Too many failed sign-ins from this address; try again in {seconds} seconds \
                     (a token whose secret has {LONG_SECRET_BYTES} characters or more is let in meanwhile)."
                )),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            return response;
        }
        tracing::warn!(
            "{peer}: web sign-in refused: {}",
            if secret.len() > MAX_TOKEN_BYTES {
                "an oversized token"
            } else {
                "not one of the [[tokens]]"
            }
        );
        return page(
            StatusCode::UNAUTHORIZED,
            Some("That is not the secret of one of this gateway's tokens."),
        );
    };
    let id = match state.logins.create(token, &config.tokens) {
        Ok(id) => id,
        Err(LoginRefused::NoRandomness) => {
            tracing::error!("web sign-in failed: the OS gave no random bytes for a login id");
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                Some("The gateway cannot sign you in now; try again."),
            );
        }
        Err(LoginRefused::Crowded { access, share }) => {
            tracing::warn!(
                "{peer}: web sign-in of token {:?} refused: the browser logins open to {} tokens are taken by others",
                token.name,
                access.name()
            );
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&format!(
                    "The gateway keeps {share} browser sign-ins for tokens of {} access (and weaker) and all are \
                     taken by other tokens; try again when some are signed out or expire.",
                    access.name()
                )),
            );
        }
        Err(LoginRefused::Full) => {
            tracing::warn!(
                "{peer}: web sign-in of token {:?} refused: every browser login is taken by other tokens",
                token.name
            );
            return page(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&format!(
                    "The gateway keeps {MAX_LOGINS} browser sign-ins and all are taken by other tokens; \
                     try again when some are signed out or expire."
                )),
            );
        }
    };
    tracing::info!("{peer}: token {:?} signed in to the web view", token.name);
    with_cookie(
        Redirect::to("/web/").into_response(),
        &browser_login::set_cookie(&id),
    )
}

/// `POST /web/signout`: ends the login on the server and clears the
/// cookie.
pub async fn sign_out(State(state): State<WebState>, headers: HeaderMap) -> Response {
    if !origin::same_origin(&headers) {
        return (
            StatusCode::FORBIDDEN,
            "sign out from the web view's own pages\n",
        )
            .into_response();
    }
    state.logins.end(&headers);
    with_cookie(
        Redirect::to("/web/signin").into_response(),
        &browser_login::clear_cookie(),
    )
}

fn with_cookie(mut response: Response, cookie: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The sign-in page, with `message` (escaped) above the form.
fn page(status: StatusCode, message: Option<&str>) -> Response {
    let message = message.map_or_else(String::new, |m| {
        format!("<p class=\"error\" role=\"alert\">{}</p>", escape_html(m))
    });
    let html = format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>serialgate: sign in</title>
<style>
body {{ font: 15px system-ui, sans-serif; background: #0f1419; color: #d8dee9; display: grid; place-items: center; min-height: 90vh; }}
form {{ background: #1b222c; padding: 2em; border-radius: 8px; width: min(26em, 90vw); }}
h1 {{ font-size: 1.2em; margin-top: 0; }}
input {{ width: 100%; box-sizing: border-box; padding: .5em; margin: .5em 0 1em; font: inherit; }}
button {{ padding: .5em 1.5em; font: inherit; }}
.error {{ color: #ff8a80; }}
</style>
</head>
<body>
<form method="post" action="/web/signin" id="signin">
<h1>serialgate</h1>
{message}
<label for="token">Token secret</label>
<input id="token" name="token" type="password" autocomplete="current-password" maxlength="{MAX_TOKEN_BYTES}" required autofocus>
<button type="submit">Sign in</button>
</form>
</body>
</html>
"#
    );
    (status, Html(html)).into_response()
}

/// Text made safe for HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            escape_html(r#"<script>"x" & 'y'</script>"#),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
    }
}
