//! Which token owns each MCP session, and how many sessions one token, and
//! all of them together, may keep open.
//!
//! An MCP session belongs to the token that opened it: a request with
//! another token into it (a call, its SSE stream, a DELETE) gets `403`, and
//! a reload that removes the token or gives it a new secret ends it. One
//! token keeps at most [`SESSIONS_PER_TOKEN`] sessions, the tokens of one
//! access and every weaker one together their share of [`MAX_SESSIONS`]
//! ([`TokenAccess::share_of`]: half for read, three quarters with write),
//! and all tokens together all of it. Opening one more ends the least
//! recently used session of the opener's token, or of its access or a
//! weaker one, never one of a higher access: when only those are left to
//! end, the new session is refused (`503`). A DELETE that ends a session
//! is confirmed with `200`.
//!
//! Clients that speak MCP sessions (`Mcp-Session-Id`, protocol versions
//! before `2026-07-28`) keep their connections and consume cursors for the
//! session's lifetime (idle sessions end after [`SESSION_IDLE`]).
//! `2026-07-28` clients are sessionless (SEP-2567): rmcp serves each of
//! their requests statelessly, so their state is kept by token name plus the
//! optional `Serialgate-Session` header — see [`crate::mcp::scope`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::access::Caller;
use crate::access::shares::counted_as;
use crate::config::TokenAccess;

/// How long an MCP session may stay idle before the server ends it (its
/// connections are then detached). Agents think between calls; a short
/// timeout would lose their cursors.
pub const SESSION_IDLE: Duration = Duration::from_secs(60 * 60);
/// The header that carries an MCP session's id.
const SESSION_ID: &str = "mcp-session-id";

/// Most MCP sessions one token keeps open; opening one more ends the
/// token's least recently used session.
pub const SESSIONS_PER_TOKEN: usize = 32;
/// Most MCP sessions open at once, all tokens together; beyond it the
/// least recently used session of any token ends.
pub const MAX_SESSIONS: usize = 512;

/// Which token opened each MCP session (`Mcp-Session-Id`), so that no other
/// token can use, listen to or end it, and how many each token has open.
/// Entries not seen for [`SESSION_IDLE`] are forgotten (rmcp ends such
/// sessions too).
#[derive(Clone, Default)]
pub(super) struct SessionOwners {
    owners: Arc<Mutex<HashMap<String, Owner>>>,
}

/// The token that opened a session, by name, access and the digest of
/// the secret it showed then (`None` without auth), and when it was last
/// used.
struct Owner {
    token: String,
    access: TokenAccess,
    secret: Option<[u8; 32]>,
    seen: Instant,
}

impl SessionOwners {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Owner>> {
        crate::sync::lock(&self.owners)
    }

    /// Whether `caller` may use session `id` (an unknown id: rmcp decides).
    pub(super) fn allows(&self, id: &str, caller: &str) -> bool {
        let mut owners = self.lock();
        match owners.get_mut(id) {
            Some(owner) if owner.token == caller => {
                owner.seen = Instant::now();
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// Records a session `caller` (of `access`) opened with the secret of
    /// digest `secret`; returns the sessions to end so that the caller
    /// keeps at most `per_token`, the tokens of its access and weaker ones
    /// their share of `total`, and everyone at most `total`, least
    /// recently used first and never one of a higher access. `id` itself
    /// is among them when nothing else may end.
    fn opened(
        &self,
        id: &str,
        caller: &str,
        access: TokenAccess,
        secret: Option<[u8; 32]>,
        per_token: usize,
        total: usize,
    ) -> Vec<String> {
        let now = Instant::now();
        let mut owners = self.lock();
        owners.retain(|_, owner| now.duration_since(owner.seen) <= SESSION_IDLE);
        owners.insert(
            id.to_owned(),
            Owner {
                token: caller.to_owned(),
                access,
                secret,
                seen: now,
            },
        );
        let mine = |owner: &Owner| owner.token == caller;
        let at_or_below = |owner: &Owner| counted_as(owner.access) <= counted_as(access);
        let mut ended = Vec::new();
        // The oldest session `among` picks, other than the new one; the
        // new one when there is no other.
        let end_oldest = |owners: &mut HashMap<String, Owner>, among: &dyn Fn(&Owner) -> bool| {
            let oldest = owners
                .iter()
                .filter(|(other, owner)| other.as_str() != id && among(owner))
                .min_by_key(|(_, owner)| owner.seen)
                .map_or_else(|| id.to_owned(), |(other, _)| other.clone());
            owners.remove(&oldest);
            oldest
        };
        let share = access.share_of(total);
        // Until the new one is within every bound, or is itself ended.
        while owners.contains_key(id) {
            let among: &dyn Fn(&Owner) -> bool =
                if owners.values().filter(|o| mine(o)).count() > per_token {
                    &mine
                } else if owners.values().filter(|o| at_or_below(o)).count() > share
                    || owners.len() > total
                {
                    &at_or_below
                } else {
                    break;
                };
            ended.push(end_oldest(&mut owners, among));
        }
        ended
    }

    /// Forgets and returns the sessions whose token `config` no longer has,
    /// or has with another secret than the one that opened them: a reload
    /// leaves nothing open to a revoked or leaked secret (a session's
    /// stream of notifications included).
    fn revoked(&self, config: &crate::config::Config) -> Vec<(String, String)> {
        let mut owners = self.lock();
        let gone: Vec<String> = owners
            .iter()
            .filter(|(_, owner)| {
                owner.secret.is_some()
                    && config.token_named(&owner.token).map(|t| *t.secret.digest()) != owner.secret
            })
            .map(|(id, _)| id.clone())
            .collect();
        gone.into_iter()
            .filter_map(|id| owners.remove(&id).map(|owner| (id, owner.token)))
            .collect()
    }

    /// Ends, at every reload of `gateway`'s config until `cancel`, the
    /// sessions whose token it removed or gave a new secret.
    pub(super) fn end_revoked_at_reloads(
        &self,
        gateway: &crate::gateway::Gateway,
        sessions: &Arc<LocalSessionManager>,
        cancel: tokio_util::sync::CancellationToken,
    ) {
        let (owners, gateway, sessions) = (self.clone(), gateway.clone(), sessions.clone());
        let mut reloads = gateway.watch_config();
        crate::task::spawn(async move {
            loop {
                tokio::select! {
                    changed = reloads.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                    () = cancel.cancelled() => return,
                }
                for (id, token) in owners.revoked(&gateway.config()) {
                    tracing::info!(
                        "token {} was removed or given a new secret: its MCP session {id} ends",
                        crate::error::label(&token)
                    );
                    end_session(&sessions, id);
                }
            }
        });
    }

    fn closed(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Bookkeeping once rmcp answered `caller`'s request into `session`
    /// (`None`: the request named none): a session the response opened is
    /// recorded, ending the least recently used ones beyond the caps; a
    /// session a DELETE ended is forgotten, and its end confirmed with 200.
    pub(super) fn answered(
        &self,
        sessions: &Arc<LocalSessionManager>,
        session: Option<&str>,
        caller: &Caller,
        secret: Option<[u8; 32]>,
        is_delete: bool,
        response: &mut Response,
    ) {
        match (session, response.headers().get(SESSION_ID)) {
            (None, Some(id)) => {
                let Ok(id) = id.to_str().map(str::to_owned) else {
                    return;
                };
                let (name, access) = (&caller.name, caller.access);
                let ended =
                    self.opened(&id, name, access, secret, SESSIONS_PER_TOKEN, MAX_SESSIONS);
                for old in ended {
                    if old == id {
                        tracing::warn!(
                            "token {name:?} opened MCP session {id}: refused, every session that may end to make room is of a higher access"
                        );
                        *response = crowded(access);
                    } else {
                        tracing::info!(
                            "token {name:?} opened MCP session {id}: ending the least recently used session {old} of its token or access (at most {SESSIONS_PER_TOKEN} per token, {MAX_SESSIONS} in all)"
                        );
                    }
                    end_session(sessions, old);
                }
            }
            (Some(id), _) if is_delete && response.status().is_success() => {
                self.closed(id);
                // rmcp answers 202 Accepted; clients expect a session's end to
                // be confirmed with 200 (the Python SDK warns on anything else).
                if response.status() == StatusCode::ACCEPTED {
                    *response.status_mut() = StatusCode::OK;
                }
            }
            _ => {}
        }
    }
}

/// The MCP session a request names (its `Mcp-Session-Id`), if any.
pub(super) fn named(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The answer to a request that opened a session when every session
/// that could end to make room for it is of a higher access.
fn crowded(access: TokenAccess) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "the MCP sessions this gateway keeps for tokens of {} access are all taken by other tokens; try again when some end\n",
            access.name()
        ),
    )
        .into_response()
}

/// The answer to a request into an MCP session another token opened.
pub(super) fn forbidden() -> Response {
    (
        StatusCode::FORBIDDEN,
        "forbidden: this MCP session belongs to another token; open a session of your own\n",
    )
        .into_response()
}

/// Ends MCP session `id` in the background (its connections are detached).
fn end_session(sessions: &Arc<LocalSessionManager>, id: String) {
    use rmcp::transport::streamable_http_server::session::SessionManager;
    let sessions = sessions.clone();
    crate::task::spawn(async move {
        let id: Arc<str> = id.into();
        if let Err(e) = sessions.close_session(&id).await {
            tracing::debug!("ending MCP session {id}: {e}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADMIN: TokenAccess = TokenAccess::Admin;

    #[test]
    fn read_tokens_end_only_sessions_of_read_tokens_and_a_full_house_refuses_them() {
        let (read, write) = (TokenAccess::Read, TokenAccess::Write);
        let owners = SessionOwners::default();
        // An admin's session and a writer's, used long ago.
        assert!(
            owners
                .opened("admin1", "admin", ADMIN, None, 2, 8)
                .is_empty()
        );
        assert!(owners.opened("noc1", "noc", write, None, 2, 8).is_empty());
        // Readers fill their half (four of eight), then end their own.
        for i in 0..4 {
            let id = format!("r{i}");
            assert!(
                owners
                    .opened(&id, &format!("reader{i}"), read, None, 2, 8)
                    .is_empty()
            );
        }
        assert_eq!(owners.opened("r4", "reader4", read, None, 2, 8), ["r0"]);
        let open = |id: &str| owners.lock().contains_key(id);
        assert!(open("admin1") && open("noc1"));
        // Writers up to three quarters with them, then the oldest of those
        // ends (a writer's, here), never the admin's.
        assert!(owners.opened("noc2", "noc2", write, None, 2, 8).is_empty());
        assert_eq!(owners.opened("noc3", "noc3", write, None, 2, 8), ["noc1"]);
        assert!(open("admin1"));
        // Admins may end anyone's to make room.
        assert!(
            owners
                .opened("admin2", "admin2", ADMIN, None, 2, 8)
                .is_empty()
        );
        assert_eq!(
            owners.opened("admin3", "admin3", ADMIN, None, 2, 8),
            ["admin1"]
        );

        // A house full of admins' sessions: a reader's new one is the one
        // that ends (the client is told to try again), not an admin's.
        let owners = SessionOwners::default();
        for i in 0..4 {
            let (id, token) = (format!("a{i}"), format!("admin{i}"));
            assert!(owners.opened(&id, &token, ADMIN, None, 2, 4).is_empty());
        }
        assert_eq!(owners.opened("r", "reader", read, None, 2, 4), ["r"]);
        assert_eq!(owners.lock().len(), 4);
        assert!(!owners.lock().contains_key("r"));
    }

    #[test]
    fn sessions_belong_to_their_opener() {
        let owners = SessionOwners::default();
        assert!(owners.allows("s1", "a"), "unknown sessions: rmcp decides");
        assert!(owners.opened("s1", "a", ADMIN, None, 2, 10).is_empty());
        assert!(owners.allows("s1", "a"));
        assert!(!owners.allows("s1", "b"));
        owners.closed("s1");
        assert!(owners.allows("s1", "b"));
    }

    #[test]
    fn a_removed_token_or_a_replaced_secret_loses_its_sessions() {
        let token = |name: &str, secret: &[u8]| crate::config::TokenConfig {
            secret: crate::config::TokenSecret::new(secret),
            ..crate::config::TokenConfig::for_tests(name, crate::config::TokenAccess::Read)
        };
        let with = |tokens| {
            let mut config = crate::config::Config::default_with_builtins();
            config.tokens = tokens;
            config
        };
        let digest = |t: &crate::config::TokenConfig| Some(*t.secret.digest());
        let owners = SessionOwners::default();
        owners.opened("a1", "a", ADMIN, digest(&token("a", b"one")), 8, 8);
        owners.opened("b1", "b", ADMIN, digest(&token("b", b"two")), 8, 8);
        owners.opened("open", "anonymous", ADMIN, None, 8, 8);
        let same = with(vec![token("a", b"one"), token("b", b"two")]);
        assert!(owners.revoked(&same).is_empty());
        // a's secret replaced, b removed; the session without a secret stays.
        let mut ended = owners.revoked(&with(vec![token("a", b"new")]));
        ended.sort();
        assert_eq!(
            ended,
            [
                ("a1".to_owned(), "a".to_owned()),
                ("b1".to_owned(), "b".to_owned())
            ]
        );
        assert!(owners.allows("open", "anonymous"));
        assert!(
            owners.revoked(&with(Vec::new())).is_empty(),
            "forgotten once ended"
        );
    }

    #[test]
    fn a_token_keeps_its_newest_sessions() {
        let owners = SessionOwners::default();
        assert!(owners.opened("a1", "a", ADMIN, None, 2, 3).is_empty());
        assert!(owners.opened("a2", "a", ADMIN, None, 2, 3).is_empty());
        assert!(owners.allows("a1", "a"), "a1 is now the most recently used");
        assert_eq!(owners.opened("a3", "a", ADMIN, None, 2, 3), ["a2"]);
        assert!(owners.opened("b1", "b", ADMIN, None, 2, 3).is_empty());
        assert_eq!(
            owners.opened("b2", "b", ADMIN, None, 2, 3),
            ["a1"],
            "the oldest of all"
        );
        assert!(owners.allows("a2", "b"), "forgotten: rmcp answers for it");
    }
}
