//! Who a request to `/mcp` comes from: bearer-token authentication, in the
//! middleware every request passes before rmcp sees it.
//!
//! Each request must carry `Authorization: Bearer <secret>`, the secret of
//! one of the `[[tokens]]` (its `secret_file`'s content, trimmed). The
//! presented secret is hashed (SHA-256) and compared in constant time
//! with the digest of *every* token, without stopping at a match, so the
//! time taken says nothing about which token (or how much of one) matched.
//! A missing or wrong token gets `401 Unauthorized` with
//! `WWW-Authenticate: Bearer`. A known token becomes a [`Caller`] in the
//! request's extensions (the `Authorization` header itself is removed),
//! which the MCP layer checks against the tool and port of every call
//! (see [`crate::access`]). Tokens are read from the config in force
//! at each request.
//!
//! Wrong bearer tokens are counted by source in the listener's one
//! failure throttle ([`crate::daemon::http::throttle`], shared with the
//! web view's sign-in): a source past its failures gets `429` with
//! `Retry-After` for every secret but a long one ([`Reach`]), on `/mcp`,
//! `/metrics` and the console WebSockets alike. Other sources are not
//! slowed.
//!
//! Once the caller is known, the same middleware holds it to its token's
//! and its access's shares of the connections
//! ([`crate::daemon::http::listener`], `429`), to the MCP
//! sessions it owns ([`crate::daemon::http::session_owners`], `403`), and counts
//! the response for the shutdown drain ([`crate::daemon::http::drain`]).
//!
//! In front of the console WebSockets (`/ports/{name}/console`,
//! `/console`) the web view's login cookie may stand in for the bearer
//! token, because a browser cannot put `Authorization` on a WebSocket:
//! then, and whenever a request to them carries an `Origin` (a browser's
//! always does), the origin must be the server's own, else `403`; so a page
//! of another site can never open a console, signed in or not (with
//! `auth = "none"` too, where the `Host` must also be a loopback name).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use sha2::Digest;
use subtle::{ConditionallySelectable, ConstantTimeEq};

use crate::access::Caller;
use crate::config::TokenConfig;
use crate::daemon::http::drain::{CallInFlight, InFlight};
use crate::daemon::http::listener::Admission;
use crate::daemon::http::session_owners::{self, SessionOwners};
use crate::daemon::http::throttle::Throttle;
use crate::daemon::http::web::browser_login::{self, BrowserLogins};
use crate::daemon::http::web::origin;
use crate::gateway::Gateway;

/// Who may call: nobody without a token, or (loopback, said explicitly)
/// everybody.
#[derive(Clone)]
pub(super) enum Auth {
    /// Bearer tokens from the config in force.
    Tokens(Gateway),
    /// `auth = "none"` on loopback: every caller has full access, under
    /// `[server] policy` of the config in force.
    None(Gateway),
}

/// Why a request was refused (logged; the client gets a 401).
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    /// No `Authorization: Bearer` header.
    Missing,
    /// An `Authorization` header of another scheme or shape.
    Malformed,
    /// A bearer token that is none of the configured ones.
    Unknown,
}

/// Which tokens a presented secret may be: any, or (from an address held
/// for wrong secrets) only those whose secret is long enough that nobody
/// guesses it ([`crate::config::LONG_SECRET_BYTES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Every token.
    All,
    /// Tokens with a long secret only.
    LongSecrets,
}

impl Reach {
    /// What a request from an address held (or not) may reach.
    pub fn from_address(held: bool) -> Reach {
        if held { Reach::LongSecrets } else { Reach::All }
    }
}

/// The token whose secret is `presented`, among those `reach` allows,
/// found in constant time: every token's digest is compared, and the loop
/// never stops early. The web view's sign-in uses it too.
pub fn find_token<'a>(
    tokens: &'a [TokenConfig],
    presented: &[u8],
    reach: Reach,
) -> Option<&'a TokenConfig> {
    let digest: [u8; 32] = sha2::Sha256::digest(presented).into();
    let mut found = u64::MAX;
    for (i, token) in tokens.iter().enumerate() {
        let equal = token.secret.digest()[..].ct_eq(&digest[..]);
        let reachable =
            subtle::Choice::from(u8::from(reach == Reach::All || token.secret.is_long()));
        found.conditional_assign(&(i as u64), equal & reachable);
    }
    usize::try_from(found).ok().and_then(|i| tokens.get(i))
}

/// The bearer token of an `Authorization` header.
fn bearer(headers: &HeaderMap) -> Result<&[u8], Refusal> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(Refusal::Missing)?
        .as_bytes();
    let space = value
        .iter()
        .position(|&b| b == b' ')
        .ok_or(Refusal::Malformed)?;
    let (scheme, rest) = value.split_at(space);
    let token = rest.trim_ascii();
    if !scheme.eq_ignore_ascii_case(b"bearer") || token.is_empty() {
        return Err(Refusal::Malformed);
    }
    Ok(token)
}

impl Auth {
    fn check(&self, headers: &HeaderMap, reach: Reach) -> Result<Caller, Refusal> {
        match self {
            Auth::None(gateway) => {
                Ok(Caller::anonymous().with_policy(gateway.config().server.policy.clone()))
            }
            Auth::Tokens(gateway) => {
                let presented = bearer(headers)?;
                let config = gateway.config();
                find_token(&config.tokens, presented, reach)
                    .map(Caller::from_token)
                    .ok_or(Refusal::Unknown)
            }
        }
    }
}

fn unauthorized(refusal: &Refusal) -> Response {
    let (challenge, text) = match refusal {
        Refusal::Missing => (
            r#"Bearer realm="serialgate""#,
            "unauthorized: send Authorization: Bearer <secret of one of the server's [[tokens]]>\n",
        ),
        Refusal::Malformed => (
            r#"Bearer realm="serialgate", error="invalid_request""#,
            "unauthorized: the Authorization header must be Bearer <secret>\n",
        ),
        Refusal::Unknown => (
            r#"Bearer realm="serialgate", error="invalid_token""#,
            "unauthorized: the bearer token is not one of the server's [[tokens]]\n",
        ),
    };
    (
        StatusCode::UNAUTHORIZED,
        [(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        )],
        text,
    )
        .into_response()
}

/// The state of the authentication middleware.
#[derive(Clone)]
pub(super) struct Gatekeeper {
    pub(super) auth: Auth,
    pub(super) owners: SessionOwners,
    pub(super) in_flight: InFlight,
    /// rmcp's sessions, to cancel a call whose connection closed.
    pub(super) sessions: Arc<LocalSessionManager>,
    /// Largest request body rmcp accepts (a body is read here first).
    pub(super) max_body: usize,
    /// In front of the console WebSockets: the web view's browser logins, whose
    /// cookie stands in for a bearer token (with the origin checked);
    /// `None` in front of `/mcp`, which takes bearer tokens only.
    pub(super) browsers: Option<BrowserLogins>,
    /// Wrong secrets by source, shared by every door that compares one.
    pub(super) throttle: Throttle,
}

/// Why a browser's request to a console WebSocket was refused (`403`).
fn cross_origin() -> Response {
    (
        StatusCode::FORBIDDEN,
        "this console may only be opened by the web view's own pages\n",
    )
        .into_response()
}

impl Gatekeeper {
    /// Who a request comes from: its bearer token, or (console WebSockets
    /// only) its web login cookie. `Err` is the response that refuses
    /// it.
    fn caller(&self, peer: SocketAddr, request: &Request) -> Result<Caller, Box<Response>> {
        let headers = request.headers();
        if let Some(browsers) = &self.browsers {
            let foreign = origin::has_origin(headers) && !origin::same_origin(headers);
            let rebound = matches!(self.auth, Auth::None(_)) && !origin::host_is_loopback(headers);
            if foreign || rebound {
                tracing::warn!(
                    "{peer}: refused {} {}: a browser of another origin",
                    request.method(),
                    request.uri()
                );
                return Err(Box::new(cross_origin()));
            }
            if let Auth::Tokens(gateway) = &self.auth
                && !headers.contains_key(header::AUTHORIZATION)
                && browser_login::login_id(headers).is_some()
            {
                return browsers.caller(headers, gateway).ok_or_else(|| {
                    tracing::warn!(
                        "{peer}: refused {} {}: an unknown or expired web login",
                        request.method(),
                        request.uri()
                    );
                    Box::new(unauthorized(&Refusal::Unknown))
                });
            }
        }
        // A source that guessed too often is held: of its secrets only a
        // long one is compared, which nobody guesses, so an engineer who
        // shares the address with a guesser (or with a client whose token
        // is stale) is not kept out. One that sends no secret has nothing
        // to guess with.
        let held = match self.auth {
            Auth::Tokens(_) if headers.contains_key(header::AUTHORIZATION) => {
                self.throttle.check(peer.ip()).err()
            }
            _ => None,
        };
        let reach = Reach::from_address(held.is_some());
        match (self.auth.check(headers, reach), held) {
            (Ok(caller), held) => {
                if held.is_some() {
                    tracing::info!(
                        "{peer}: {} {}: token {:?} let in with its long secret from an address held for wrong ones",
                        request.method(),
                        request.uri(),
                        caller.name
                    );
                }
                Ok(caller)
            }
            (Err(refusal), held) => {
                if refusal == Refusal::Unknown {
                    self.throttle.failed(peer.ip());
                }
                if let Some(held) = held {
                    tracing::warn!(
                        "{peer}: refused {} {}: too many wrong bearer tokens from this address",
                        request.method(),
                        request.uri()
                    );
                    return Err(Box::new(held.response()));
                }
                tracing::warn!(
                    "{peer}: refused {} {}: {refusal:?} bearer token",
                    request.method(),
                    request.uri()
                );
                Err(Box::new(unauthorized(&refusal)))
            }
        }
    }
}

/// The middleware in front of `/mcp`: 401 without a known token; 403 for a
/// request into an MCP session another token opened; else the caller goes
/// into the request's extensions (rmcp hands the request's
/// `http::request::Parts` to the MCP handlers).
pub(super) async fn authenticate(
    State(gate): State<Gatekeeper>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut request: Request,
    next: Next,
) -> Response {
    let caller = match gate.caller(peer, &request) {
        Ok(caller) => caller,
        Err(refused) => return *refused,
    };
    // A metrics token scrapes and does nothing else.
    if caller.access == crate::config::TokenAccess::Metrics && request.uri().path() != "/metrics" {
        tracing::warn!(
            "{peer}: refused {} {}: token {:?} has access metrics, which only scrapes /metrics",
            request.method(),
            request.uri(),
            caller.name
        );
        return (
            StatusCode::FORBIDDEN,
            "this token's access is metrics: it may only scrape /metrics\n",
        )
            .into_response();
    }
    if let Some(admission) = request.extensions().get::<Admission>()
        && let Err(crowded) = admission.authenticated(&caller.name, caller.access)
    {
        tracing::warn!(
            "{peer}: refused {} {}: token {:?}'s connection: {crowded:?}",
            request.method(),
            request.uri(),
            caller.name,
        );
        return crowded.response();
    }
    tracing::debug!(
        "{peer}: {} {} as {:?}",
        request.method(),
        request.uri(),
        caller.name
    );
    let session = session_owners::named(request.headers());
    if let Some(id) = &session
        && !gate.owners.allows(id, &caller.name)
    {
        tracing::warn!(
            "{peer}: refused {} {}: token {:?} used an MCP session another token opened",
            request.method(),
            request.uri(),
            caller.name
        );
        return session_owners::forbidden();
    }
    let is_delete = request.method() == axum::http::Method::DELETE;
    // The secret this request showed, as the config in force has it: a
    // session it opens (only a request naming none can) ends when a reload
    // removes or replaces it.
    let secret = match &gate.auth {
        Auth::Tokens(gateway) if session.is_none() && caller.is_config_token() => {
            crate::access::standing::token_digest(gateway, &caller.name)
        }
        _ => None,
    };
    let counted = if request.method() == axum::http::Method::GET {
        None
    } else {
        match gate.in_flight.start() {
            Some(guard) => Some(guard),
            None => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "serialgate is shutting down; retry when it is back\n",
                )
                    .into_response();
            }
        }
    };
    let caller = Arc::new(caller);
    request.headers_mut().remove(header::AUTHORIZATION);
    request.extensions_mut().insert(caller.clone());
    // A tool call in a session is read here first, to know what to cancel
    // if its connection closes before the result is written.
    let mut call = None;
    if let Some(id) = &session
        && request.method() == axum::http::Method::POST
    {
        let (parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, gate.max_body).await {
            Ok(bytes) => bytes,
            Err(e) => {
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "the request body could not be read ({e}); send at most {} bytes\n",
                        gate.max_body
                    ),
                )
                    .into_response();
            }
        };
        call = CallInFlight::of(&gate.sessions, id, &bytes);
        request = Request::from_parts(parts, Body::from(bytes));
    }
    let mut response = next.run(request).await;
    if let Some(guard) = counted {
        response = InFlight::track(response, guard, call);
    }
    gate.owners.answered(
        &gate.sessions,
        session.as_deref(),
        &caller,
        secret,
        is_delete,
        &mut response,
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{TokenAccess, TokenSecret};

    fn token(name: &str, secret: &str) -> TokenConfig {
        TokenConfig {
            name: name.into(),
            secret_file: "/s".into(),
            secret: TokenSecret::new(secret.as_bytes()),
            ports: vec!["*".into()],
            access: TokenAccess::Read,
            use_credentials: false,
            power: false,
            policy: None,
            approve: false,
        }
    }

    #[test]
    fn tokens_are_found_by_secret() {
        let tokens = [token("a", "alpha-secret"), token("b", "beta-secret")];
        let find = |secret: &[u8]| find_token(&tokens, secret, Reach::All).map(|t| t.name.clone());
        assert_eq!(find(b"beta-secret").as_deref(), Some("b"));
        assert_eq!(find(b"alpha-secret").as_deref(), Some("a"));
        assert!(find(b"alpha-secre").is_none());
        assert!(find(b"").is_none());
        assert!(find_token(&[], b"alpha-secret", Reach::All).is_none());
    }

    #[test]
    fn a_held_address_reaches_the_long_secrets_only() {
        let long = "0123456789abcdef0123456789abcdef";
        assert_eq!(long.len(), crate::config::LONG_SECRET_BYTES);
        let short = &long[1..];
        let tokens = [token("short", short), token("long", long)];
        let find = |secret: &str, reach| {
            find_token(&tokens, secret.as_bytes(), reach).map(|t| t.name.clone())
        };
        assert_eq!(find(long, Reach::LongSecrets).as_deref(), Some("long"));
        assert_eq!(find(short, Reach::LongSecrets), None);
        assert_eq!(find(short, Reach::All).as_deref(), Some("short"));
        assert_eq!(find(long, Reach::All).as_deref(), Some("long"));
    }

    #[test]
    fn bearer_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), Err(Refusal::Missing));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer  s3cret "),
        );
        assert_eq!(bearer(&h), Ok(&b"s3cret"[..]));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer x"));
        assert_eq!(bearer(&h), Ok(&b"x"[..]));
        for bad in ["Basic dXNlcjpwYXNz", "Bearer", "Bearer ", "s3cret"] {
            h.insert(header::AUTHORIZATION, HeaderValue::from_static(bad));
            assert_eq!(bearer(&h), Err(Refusal::Malformed), "{bad}");
        }
    }

    #[test]
    fn refusals_challenge() {
        let r = unauthorized(&Refusal::Unknown);
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        let challenge = r.headers()[header::WWW_AUTHENTICATE].to_str().unwrap();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
    }
}
