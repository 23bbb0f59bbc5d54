//! A site gateway serving the calls the fleet forwards to its ports.
//!
//! Each call names the serving gateway, its session and the token that
//! gateway authorised; the calls of one (gateway, session, token) share a
//! session here ([`Loopback`]), so `connect` then `send_command` use one
//! connection and cursor, and run as local calls do, under a caller named
//! `token@gateway` (`Caller::via_fleet`): the audit trail and the write
//! hold name both. Only what NATS lets reach this site's call subject
//! arrives here (the subject permissions of the fleet's credentials).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::loopback::Loopback;
use super::server::GateServer;
use crate::access::Caller;
use crate::fleet::in_flight::{Full, InFlight, Limits};
use crate::fleet::link::{Fleet, site_of};
use crate::fleet::subjects;
use crate::fleet::wire::{CallAnswer, ForwardedCall, MAX_CALL, VERSION};
use crate::gateway::Gateway;

/// How long a forwarded session is kept without a call.
const SESSION_IDLE: Duration = Duration::from_secs(60 * 60);
/// Most forwarded sessions one token of one serving gateway keeps; its
/// least recently used goes, so that a token opening sessions in a loop
/// ends only its own, never another token's connections and holds.
const MAX_SESSIONS_PER_TOKEN: usize = 64;
/// Most forwarded sessions kept at once; the least recently used goes.
const MAX_SESSIONS: usize = 1024;

/// Most forwarded calls this site runs at once: one token of a serving
/// gateway may have 32 (as many as that gateway lets it send), the
/// read-only tokens together half of all, so that a flood from one
/// caller leaves the others their calls.
const RUN_LIMITS: Limits = Limits {
    total: 256,
    per_token: 32,
    read_only: 128,
};

type Key = (String, u64, String);

struct Kept<T> {
    session: T,
    last_used: Instant,
}

/// The forwarded sessions (a [`Loopback`] each), by serving gateway,
/// session and token.
#[derive(Clone)]
struct Sessions<T = Arc<Loopback>> {
    kept: Arc<Mutex<HashMap<Key, Kept<T>>>>,
}

impl<T> Default for Sessions<T> {
    fn default() -> Self {
        Sessions {
            kept: Arc::default(),
        }
    }
}

impl<T: Clone> Sessions<T> {
    /// The session of `key`, if one is kept; expired ones are dropped.
    fn get(&self, key: &Key) -> Option<T> {
        let mut kept = crate::sync::lock(&self.kept);
        kept.retain(|_, k| k.last_used.elapsed() < SESSION_IDLE);
        let k = kept.get_mut(key)?;
        k.last_used = Instant::now();
        Some(k.session.clone())
    }

    /// Lets go of the sessions of any earlier process of `gateway`'s site
    /// (it restarted: its sessions ended with it); the sessions let go.
    fn supersede(&self, gateway: &str) -> Vec<T> {
        let site = site_of(gateway);
        let mut kept = crate::sync::lock(&self.kept);
        let earlier: Vec<Key> = kept
            .keys()
            .filter(|k| k.0 != gateway && site_of(&k.0) == site)
            .cloned()
            .collect();
        earlier
            .iter()
            .filter_map(|k| kept.remove(k))
            .map(|k| k.session)
            .collect()
    }

    fn insert(&self, key: Key, session: T) -> T {
        let mut kept = crate::sync::lock(&self.kept);
        let same_token = |k: &Key| k.0 == key.0 && k.2 == key.2;
        if !kept.contains_key(&key)
            && kept.keys().filter(|k| same_token(k)).count() >= MAX_SESSIONS_PER_TOKEN
            && let Some(oldest) = kept
                .iter()
                .filter(|(k, _)| same_token(k))
                .min_by_key(|(_, k)| k.last_used)
                .map(|(key, _)| key.clone())
        {
            kept.remove(&oldest);
        }
        if kept.len() >= MAX_SESSIONS
            && let Some(oldest) = kept
                .iter()
                .min_by_key(|(_, k)| k.last_used)
                .map(|(key, _)| key.clone())
        {
            kept.remove(&oldest);
        }
        kept.entry(key)
            .or_insert(Kept {
                session,
                last_used: Instant::now(),
            })
            .session
            .clone()
    }
}

/// The deadline of a forwarded call: the tool's own `timeout` (seconds)
/// and a margin, at least 30 s, at most the longest wait and a margin.
pub fn call_deadline(arguments: &serde_json::Map<String, serde_json::Value>) -> Duration {
    let asked = arguments
        .get("timeout")
        .and_then(|t| t.as_f64().or_else(|| t.as_str()?.trim().parse().ok()))
        .filter(|t| t.is_finite() && *t >= 0.0)
        .unwrap_or(0.0)
        .min(super::args::MAX_TIMEOUT_S);
    Duration::from_secs_f64(asked.max(20.0) + 10.0)
}

/// The tools that move a file between the site's files_dir and a device.
pub const TRANSFERS: [&str; 2] = ["send_file", "receive_file"];

/// How long a forwarded transfer may take: a large image at a boot
/// loader's speed takes long, and the device's start a minute.
const TRANSFER_DEADLINE: Duration = Duration::from_secs(2 * 60 * 60);

/// The deadline of a forwarded call of `tool`: a transfer's
/// [`TRANSFER_DEADLINE`], else [`call_deadline`].
pub fn tool_deadline(
    tool: &str,
    arguments: &serde_json::Map<String, serde_json::Value>,
) -> Duration {
    if TRANSFERS.contains(&tool) {
        TRANSFER_DEADLINE
    } else {
        call_deadline(arguments)
    }
}

/// Why a forwarded call is refused before it runs, if it is.
fn refused(call: &ForwardedCall) -> Option<String> {
    if call.v != VERSION {
        return Some(format!(
            "invalid_argument: the call is of wire version {}, and this site reads {VERSION}",
            call.v
        ));
    }
    let plain = |s: &str, max: usize| {
        !s.is_empty()
            && s.len() <= max
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
    };
    if !plain(&call.tool, 64) || !plain(&call.gateway, 64) || call.token.is_empty() {
        return Some(
            "invalid_argument: the call names no tool, gateway or token this site takes".into(),
        );
    }
    None
}

/// The `busy` refusal of a call of `caller` (`token@gateway`) beyond the
/// bound `full` of [`RUN_LIMITS`], logged at the 1st, 2nd, 4th… refusal.
fn busy(in_flight: &InFlight, caller: &str, full: Full) -> CallAnswer {
    let why = match full {
        Full::Token(n) => format!(
            "{caller} has {n} calls running at this site, the most one token of a serving gateway may have"
        ),
        Full::ReadOnly(n) => format!(
            "read-only tokens have {n} calls running at this site, the most they may have together (the rest is kept for tokens that write)"
        ),
        Full::Total(n) => {
            format!("{n} forwarded calls are running at this site, the most it runs at once")
        }
    };
    if let Some(n) = in_flight.refused_to_log() {
        tracing::warn!("fleet: a forwarded call refused as busy: {why} ({n} refused so far)");
    }
    CallAnswer::Refused(format!(
        "busy: {why}; wait for one of them to finish, then call again (a shorter timeout frees them sooner)"
    ))
}

/// Runs one forwarded call; the answer to send back.
async fn answer(
    gateway: &Gateway,
    sessions: &Sessions,
    in_flight: &InFlight,
    payload: &[u8],
) -> CallAnswer {
    if payload.len() > MAX_CALL {
        return CallAnswer::Refused(format!(
            "invalid_argument: the call is {} bytes, more than {MAX_CALL}",
            payload.len()
        ));
    }
    let call: ForwardedCall = match serde_json::from_slice(payload) {
        Ok(c) => c,
        Err(e) => return CallAnswer::Refused(format!("invalid_argument: no call: {e}")),
    };
    if let Some(why) = refused(&call) {
        return CallAnswer::Refused(why);
    }
    let caller = format!(
        "{}@{}",
        crate::error::label(&call.token),
        crate::error::label(&call.gateway)
    );
    let _slot = match in_flight.start("", &caller, call.access, &RUN_LIMITS) {
        Ok(slot) => slot,
        Err(full) => return busy(in_flight, &caller, full),
    };
    let key = (call.gateway.clone(), call.session, call.token.clone());
    let session = match sessions.get(&key) {
        Some(s) => s,
        None => {
            // Its connections and write holds here end before this
            // gateway's first call runs.
            let earlier = sessions.supersede(&call.gateway);
            if !earlier.is_empty() {
                tracing::info!(
                    "fleet: {} is a new process of site {}'s gateway; ending the {} session(s) of the one before, with their connections and write holds",
                    crate::error::label(&call.gateway),
                    crate::error::label(site_of(&call.gateway)),
                    earlier.len()
                );
            }
            for session in earlier {
                session.end().await;
            }
            let caller = Caller::via_fleet(
                &call.token,
                &call.gateway,
                call.access,
                call.use_credentials,
            );
            let server = GateServer::for_fleet(gateway.clone(), caller);
            let client = format!(
                "{}@{}",
                crate::error::label(&call.client),
                crate::error::label(&call.gateway)
            );
            match Loopback::start(server, &client).await {
                Ok(s) => sessions.insert(key, Arc::new(s)),
                Err(e) => return CallAnswer::Refused(e.to_string()),
            }
        }
    };
    tracing::info!(
        "fleet: {} calls {} through {}",
        crate::error::label(&call.token),
        call.tool,
        crate::error::label(&call.gateway)
    );
    let deadline = tool_deadline(&call.tool, &call.arguments);
    let answered = match &call.resource {
        Some(uri) => session.read_resource(uri, deadline).await,
        None => session.call(&call.tool, call.arguments, deadline).await,
    };
    match answered {
        Ok(result) => CallAnswer::Result(result),
        Err(e) => CallAnswer::Refused(e.to_string()),
    }
}

/// Serves the calls forwarded to `fleet`'s site until `stop`.
pub async fn serve_calls(
    gateway: Gateway,
    fleet: Fleet,
    stop: CancellationToken,
) -> Result<(), async_nats::SubscribeError> {
    let client = fleet.client().clone();
    let mut calls = client.subscribe(subjects::calls(&fleet.site)).await?;
    let sessions = Sessions::default();
    let in_flight = InFlight::default();
    tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                () = stop.cancelled() => break,
                m = calls.next() => match m {
                    Some(m) => m,
                    None => break,
                },
            };
            let Some(reply) = message.reply.clone() else {
                continue;
            };
            let (gateway, sessions, client) = (gateway.clone(), sessions.clone(), client.clone());
            let in_flight = in_flight.clone();
            tokio::spawn(async move {
                let answer = answer(&gateway, &sessions, &in_flight, &message.payload).await;
                let mut bytes = serde_json::to_vec(&answer).unwrap_or_default();
                if bytes.len() > MAX_CALL {
                    bytes = serde_json::to_vec(&CallAnswer::Refused(format!(
                        "invalid_argument: the result is {} bytes, more than the {MAX_CALL} a call through the fleet may answer; read the output in pages with read_output (max_bytes)",
                        bytes.len()
                    )))
                    .unwrap_or_default();
                }
                if let Err(e) = client.publish(reply, bytes.into()).await {
                    tracing::warn!("fleet: the answer to a forwarded call was not sent: {e}");
                }
            });
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(gateway: &str, session: u64, token: &str) -> Key {
        (gateway.to_owned(), session, token.to_owned())
    }

    #[test]
    fn a_token_opening_sessions_in_a_loop_ends_only_its_own() {
        let sessions: Sessions<u64> = Sessions::default();
        sessions.insert(key("hub", 0, "ops"), 0);
        for n in 1..=(MAX_SESSIONS_PER_TOKEN as u64 * 3) {
            sessions.insert(key("hub", n, "reader"), n);
        }
        assert_eq!(sessions.get(&key("hub", 0, "ops")), Some(0));
        let readers = (1..=(MAX_SESSIONS_PER_TOKEN as u64 * 3))
            .filter(|n| sessions.get(&key("hub", *n, "reader")).is_some())
            .count();
        assert_eq!(readers, MAX_SESSIONS_PER_TOKEN);
        // the newest are kept
        let newest = MAX_SESSIONS_PER_TOKEN as u64 * 3;
        assert_eq!(sessions.get(&key("hub", newest, "reader")), Some(newest));
        // a kept key is found again, not replaced
        assert_eq!(sessions.insert(key("hub", 0, "ops"), 99), 0);
    }

    #[test]
    fn a_serving_gateway_started_again_ends_the_sessions_of_the_one_before() {
        let sessions: Sessions<u64> = Sessions::default();
        sessions.insert(key("hub:10-aa", 1, "ops"), 1);
        sessions.insert(key("hub:10-aa", 2, "root"), 2);
        sessions.insert(key("hq:20-bb", 1, "ops"), 3);
        // its own sessions stay
        assert_eq!(sessions.supersede("hub:10-aa"), Vec::<u64>::new());
        // the same pid, another start
        let mut earlier = sessions.supersede("hub:10-cc");
        earlier.sort();
        assert_eq!(earlier, [1, 2]);
        assert_eq!(sessions.get(&key("hub:10-aa", 1, "ops")), None);
        // another site's serving gateway is untouched
        assert_eq!(sessions.get(&key("hq:20-bb", 1, "ops")), Some(3));
    }
}
