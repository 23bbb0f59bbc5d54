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
use crate::config::TokenAccess;
use crate::fleet::each_message::each_message;
use crate::fleet::forwarded_policy::ForwardedPolicy;
use crate::fleet::heartbeat;
use crate::fleet::in_flight::{Full, InFlight, Limits};
use crate::fleet::link::{Fleet, site_of};
use crate::fleet::subjects;
use crate::fleet::wire::{
    Alive, CallAnswer, CallCancelled, ForwardedCall, MAX_CALL, MAX_SESSION_ENDED, SessionEnded,
    VERSION,
};
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
/// read-only tokens together half of all and with the write tokens three
/// quarters, so that a flood from one caller, or from many of one access,
/// leaves the others their calls.
const RUN_LIMITS: Limits = Limits {
    total: 256,
    per_token: 32,
};

type Key = (String, u64, String);

/// A forwarded session: its in-process MCP session, and the rights its
/// serving gateway sent for the token (its access, whether it may use
/// stored credentials, its policy), which the session's caller has; other
/// rights sent later (a reload there lowered the token, say) start
/// another session.
struct SiteSession {
    loopback: Loopback,
    access: TokenAccess,
    use_credentials: bool,
    policy: Option<ForwardedPolicy>,
}

impl SiteSession {
    /// Whether `call` comes with the rights this session's caller has.
    fn has_rights_of(&self, call: &ForwardedCall) -> bool {
        self.access == call.access
            && self.use_credentials == call.use_credentials
            && self.policy == call.policy
    }
}

struct Kept<T> {
    session: T,
    last_used: Instant,
}

/// The forwarded sessions (a [`Loopback`] each), by serving gateway,
/// session and token.
#[derive(Clone)]
struct Sessions<T = Arc<SiteSession>> {
    kept: Arc<Mutex<HashMap<Key, Kept<T>>>>,
    /// When each serving gateway with sessions here was last heard from:
    /// a call, or its word that it lives (`fleet/heartbeat.rs`).
    heard: Arc<Mutex<HashMap<String, Instant>>>,
}

impl<T> Default for Sessions<T> {
    fn default() -> Self {
        Sessions {
            kept: Arc::default(),
            heard: Arc::default(),
        }
    }
}

impl<T: Clone> Sessions<T> {
    /// The session of `key`, if one is kept.
    fn get(&self, key: &Key) -> Option<T> {
        let mut kept = crate::sync::lock(&self.kept);
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

    /// Lets go of every session of `gateway`'s session `number` (one per
    /// token it called with); the sessions let go.
    fn end_of(&self, gateway: &str, number: u64) -> Vec<T> {
        let mut kept = crate::sync::lock(&self.kept);
        let ended: Vec<Key> = kept
            .keys()
            .filter(|k| k.0 == gateway && k.1 == number)
            .cloned()
            .collect();
        ended
            .iter()
            .filter_map(|k| kept.remove(k))
            .map(|k| k.session)
            .collect()
    }

    /// Notes a call of `gateway` at `now`.
    fn called_by(&self, gateway: &str, now: Instant) {
        let mut heard = crate::sync::lock(&self.heard);
        match heard.get_mut(gateway) {
            Some(at) => *at = now,
            None => {
                heard.insert(gateway.to_owned(), now);
            }
        }
    }

    /// Notes `gateway`'s word at `now` that it lives, if it has sessions
    /// here.
    fn alive(&self, gateway: &str, now: Instant) {
        if let Some(heard) = crate::sync::lock(&self.heard).get_mut(gateway) {
            *heard = now;
        }
    }

    /// Drops the sessions idle for [`SESSION_IDLE`] at `now`, then lets
    /// go of the sessions of every serving gateway not heard from for
    /// `silent`: each such gateway, with its sessions let go.
    fn silent(&self, silent: Duration, now: Instant) -> Vec<(String, Vec<T>)> {
        let mut heard = crate::sync::lock(&self.heard);
        let mut kept = crate::sync::lock(&self.kept);
        kept.retain(|_, k| now.saturating_duration_since(k.last_used) < SESSION_IDLE);
        // Only gateways with sessions here are watched, each from its
        // first call (or from now, should a sweep have come between a
        // first call and its session).
        let with_sessions: std::collections::HashSet<String> =
            kept.keys().map(|k| k.0.clone()).collect();
        heard.retain(|gateway, _| with_sessions.contains(gateway));
        for gateway in with_sessions {
            heard.entry(gateway).or_insert(now);
        }
        let gone: Vec<String> = heard
            .iter()
            .filter(|(_, at)| now.saturating_duration_since(**at) >= silent)
            .map(|(gateway, _)| gateway.clone())
            .collect();
        gone.into_iter()
            .map(|gateway| {
                heard.remove(&gateway);
                let keys: Vec<Key> = kept.keys().filter(|k| k.0 == gateway).cloned().collect();
                let sessions = keys
                    .iter()
                    .filter_map(|k| kept.remove(k))
                    .map(|k| k.session)
                    .collect();
                (gateway, sessions)
            })
            .collect()
    }

    /// Lets go of the session of `key`, if one is kept.
    fn remove(&self, key: &Key) -> Option<T> {
        crate::sync::lock(&self.kept).remove(key).map(|k| k.session)
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

/// Longest a write may wait at a site for a person's approval (the
/// config's bound on `approval_timeout`): the approval's own timeout ends
/// the wait well before, and the serving gateway gives up earlier if the
/// site falls silent.
const APPROVAL_ALLOWANCE: Duration = Duration::from_secs(24 * 3600);

/// The deadline of forwarded `tool` with `arguments`: a transfer's
/// [`TRANSFER_DEADLINE`], else [`call_deadline`]; and for a write, the
/// longest a person may take to approve its line besides (a policy at
/// either end may hold it), so that no side gives up on a line a person
/// may still approve and the site still send.
pub fn forwarded_deadline(
    tool: &str,
    arguments: &serde_json::Map<String, serde_json::Value>,
) -> Duration {
    let deadline = if TRANSFERS.contains(&tool) {
        TRANSFER_DEADLINE
    } else {
        call_deadline(arguments)
    };
    if crate::access::rules::classify(tool).0 >= TokenAccess::Write {
        deadline + APPROVAL_ALLOWANCE
    } else {
        deadline
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

/// The forwarded calls running here, by serving gateway and call number:
/// what cancels each.
type Running = Arc<Mutex<HashMap<(String, u64), CancellationToken>>>;

/// Most calls [`Running`] tracks; past it a call runs uncancellable.
const MAX_RUNNING: usize = 4096;

/// Cancels the call a [`CallCancelled`] in `payload` names, if it runs.
fn call_cancelled(running: &Running, payload: &[u8]) {
    if payload.len() > MAX_SESSION_ENDED {
        return;
    }
    let Ok(cancelled) = serde_json::from_slice::<CallCancelled>(payload) else {
        return;
    };
    let key = (cancelled.gateway, cancelled.call);
    if let Some(token) = crate::sync::lock(running).get(&key) {
        tracing::info!(
            "fleet: call {} of {} cancelled by its agent",
            key.1,
            crate::error::label(&key.0)
        );
        token.cancel();
    }
}

/// The `busy` refusal of a call of `caller` (`token@gateway`) beyond the
/// bound `full` of [`RUN_LIMITS`], logged at the 1st, 2nd, 4th… refusal.
fn busy(in_flight: &InFlight, caller: &str, full: Full) -> CallAnswer {
    let why = match full {
        Full::Token(n) => format!(
            "{caller} has {n} calls running at this site, the most one token of a serving gateway may have"
        ),
        Full::Access { access, share } => format!(
            "tokens of {} access (and weaker) have {share} calls running at this site, the most they may have together (the rest is kept for the tokens above them)",
            access.name()
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
    fleet: &Fleet,
    sessions: &Sessions,
    running: &Running,
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
    // The token's policy, as its serving gateway sent it: one that does
    // not read refuses the call rather than let it through unjudged.
    let policy = match call.policy.as_ref().map(ForwardedPolicy::read).transpose() {
        Ok(p) => p,
        Err(why) => {
            return CallAnswer::Refused(format!(
                "invalid_argument: the call's command policy cannot be applied here: {}; nothing was sent",
                crate::error::shown(&why)
            ));
        }
    };
    sessions.called_by(&call.gateway, Instant::now());
    let key = (call.gateway.clone(), call.session, call.token.clone());
    let kept = match sessions.get(&key) {
        // The serving gateway's config changed the token's rights: the
        // session's caller has the old ones, so it ends (its connections
        // and write holds with it), and the serving gateway connects
        // again in a new one.
        Some(s) if !s.has_rights_of(&call) => {
            tracing::info!(
                "fleet: {}'s access or command policy through {} changed; its session here starts again",
                crate::error::label(&call.token),
                crate::error::label(&call.gateway)
            );
            if let Some(old) = sessions.remove(&key) {
                old.loopback.end().await;
            }
            None
        }
        other => other,
    };
    let session = match kept {
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
                session.loopback.end().await;
            }
            let caller = Caller::via_fleet(
                &call.token,
                &call.gateway,
                call.access,
                call.use_credentials,
            )
            .with_forwarded_policy(policy);
            let server = GateServer::for_fleet(gateway.clone(), caller);
            let client = format!(
                "{}@{}",
                crate::error::label(&call.client),
                crate::error::label(&call.gateway)
            );
            // What its server has for the agent's client goes to the
            // serving gateway.
            let sends = call
                .client_events
                .as_ref()
                .and_then(|events| super::fleet_site_client::relay(fleet, events));
            match Loopback::start(server, &client, sends).await {
                Ok(loopback) => sessions.insert(
                    key,
                    Arc::new(SiteSession {
                        loopback,
                        access: call.access,
                        use_credentials: call.use_credentials,
                        policy: call.policy.clone(),
                    }),
                ),
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
    let deadline = forwarded_deadline(&call.tool, &call.arguments);
    let cancel = CancellationToken::new();
    let key = (call.gateway.clone(), call.call);
    let tracked = call.call != 0 && {
        let mut running = crate::sync::lock(running);
        running.len() < MAX_RUNNING && running.insert(key.clone(), cancel.clone()).is_none()
    };
    // Its progress notes carry its number at the serving gateway.
    let progress = call
        .client_events
        .as_ref()
        .filter(|events| events.progress && call.call != 0)
        .map(|_| call.call);
    let answered = match &call.resource {
        Some(uri) => session.loopback.read_resource(uri, deadline).await,
        None => {
            session
                .loopback
                .call(
                    &call.tool,
                    call.arguments,
                    deadline,
                    &cancel,
                    progress,
                    call.asked_in_result,
                )
                .await
        }
    };
    if tracked {
        crate::sync::lock(running).remove(&key);
    }
    match answered {
        Ok(result) => CallAnswer::Result(result),
        Err(e) => CallAnswer::Refused(e.to_string()),
    }
}

/// Ends the sessions here of the serving gateway's session that a
/// [`SessionEnded`] in `payload` names.
async fn session_ended(sessions: Sessions, payload: Vec<u8>) {
    if payload.len() > MAX_SESSION_ENDED {
        return;
    }
    let Ok(ended) = serde_json::from_slice::<SessionEnded>(&payload) else {
        tracing::warn!("fleet: dropped a session's end that does not read");
        return;
    };
    if ended.v != VERSION {
        return;
    }
    let gone = sessions.end_of(&ended.gateway, ended.session);
    if gone.is_empty() {
        return;
    }
    tracing::info!(
        "fleet: session {} of {} ended; ending its {} session(s) here, with their connections and write holds",
        ended.session,
        crate::error::label(&ended.gateway),
        gone.len()
    );
    for session in gone {
        session.loopback.end().await;
    }
}

/// Gives the session a [`UserAnswer`] in `payload` names its user's
/// answer to its question.
async fn user_answered(sessions: &Sessions, payload: &[u8]) {
    let Some(answer) = super::fleet_site_client::user_answer(payload) else {
        return;
    };
    let key = (answer.gateway.clone(), answer.session, answer.token.clone());
    if let Some(session) = sessions.get(&key) {
        session
            .loopback
            .answer(
                serde_json::Value::from(answer.id),
                super::fleet_site_client::answered(&answer),
            )
            .await;
    }
}

/// Notes the serving gateway an [`Alive`] in `payload` names as heard.
fn gateway_alive(sessions: &Sessions, payload: &[u8]) {
    if payload.len() > MAX_SESSION_ENDED {
        return;
    }
    if let Ok(alive) = serde_json::from_slice::<Alive>(payload)
        && alive.v == VERSION
    {
        sessions.alive(&alive.gateway, Instant::now());
    }
}

/// Drops the sessions idle an hour, and ends the sessions here of every
/// serving gateway silent for [`heartbeat::SILENT`] (killed, or cut off
/// that long), with their connections and write holds.
async fn end_silent(sessions: &Sessions) {
    for (gateway, gone) in sessions.silent(heartbeat::SILENT, Instant::now()) {
        tracing::info!(
            "fleet: serving gateway {} not heard from for {:?}; ending its {} session(s) here, with their connections and write holds",
            crate::error::label(&gateway),
            heartbeat::SILENT,
            gone.len()
        );
        for session in gone {
            session.loopback.end().await;
        }
    }
}

/// Serves the calls forwarded to `fleet`'s site until `stop`.
pub async fn serve_calls(
    gateway: Gateway,
    fleet: Fleet,
    stop: CancellationToken,
) -> Result<(), async_nats::SubscribeError> {
    let client = fleet.client().clone();
    let calls = client.subscribe(subjects::calls(&fleet.site)).await?;
    let ends = client
        .subscribe(subjects::session_ends(&fleet.site))
        .await?;
    let sessions = Sessions::default();
    let running = Running::default();
    let cancels = client
        .subscribe(subjects::call_cancels(&fleet.site))
        .await?;
    let cancelled = running.clone();
    each_message(cancels, stop.clone(), move |message| {
        call_cancelled(&cancelled, &message.payload);
        std::future::ready(())
    });
    let answers = client
        .subscribe(subjects::user_answers(&fleet.site))
        .await?;
    let answered = sessions.clone();
    each_message(answers, stop.clone(), move |message| {
        let sessions = answered.clone();
        async move { user_answered(&sessions, &message.payload).await }
    });
    let mut alive = client.subscribe(subjects::alive(&fleet.site)).await?;
    let (stop_alive, alive_sessions) = (stop.clone(), sessions.clone());
    crate::task::spawn(async move {
        let mut sweep = tokio::time::interval(heartbeat::EVERY);
        loop {
            tokio::select! {
                () = stop_alive.cancelled() => break,
                m = alive.next() => match m {
                    Some(m) => gateway_alive(&alive_sessions, &m.payload),
                    None => break,
                },
                _ = sweep.tick() => end_silent(&alive_sessions).await,
            }
        }
    });
    let ended = sessions.clone();
    each_message(ends, stop.clone(), move |message| {
        crate::task::spawn(session_ended(ended.clone(), message.payload.to_vec()));
        std::future::ready(())
    });
    let in_flight = InFlight::default();
    each_message(calls, stop, move |message| {
        if let Some(reply) = message.reply.clone() {
            let (gateway, sessions, client) = (gateway.clone(), sessions.clone(), client.clone());
            let fleet = fleet.clone();
            let running = running.clone();
            let in_flight = in_flight.clone();
            crate::task::spawn(async move {
                let answer = answer(
                    &gateway,
                    &fleet,
                    &sessions,
                    &running,
                    &in_flight,
                    &message.payload,
                )
                .await;
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
        std::future::ready(())
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
    fn a_call_of_another_wire_version_is_refused_naming_both() {
        let call = |v: u32| -> ForwardedCall {
            serde_json::from_value(serde_json::json!({
                "v": v, "gateway": "hub:1-aa", "session": 1, "token": "ops",
                "access": "write", "use_credentials": false, "client": "c",
                "tool": "send_command", "arguments": {}
            }))
            .expect("a call")
        };
        assert_eq!(refused(&call(VERSION)), None);
        let why = refused(&call(1)).expect("a version 1 call is refused");
        assert!(
            why.starts_with("invalid_argument:")
                && why.contains("version 1")
                && why.contains(&format!("reads {VERSION}")),
            "{why}"
        );
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
    fn a_serving_gateway_silent_too_long_loses_its_sessions_and_no_other_does() {
        let sessions: Sessions<u64> = Sessions::default();
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        sessions.called_by("hub:10-aa", at(0));
        sessions.insert(key("hub:10-aa", 1, "ops"), 1);
        sessions.insert(key("hub:10-aa", 2, "root"), 2);
        sessions.called_by("hub2:20-bb", at(0));
        sessions.insert(key("hub2:20-bb", 1, "ops"), 3);
        // nobody is silent yet
        assert!(sessions.silent(Duration::from_secs(10), at(9)).is_empty());
        // hub2 keeps saying it lives; a word from a gateway with no
        // session here is not kept
        sessions.alive("hub2:20-bb", at(8));
        sessions.alive("stranger:1-00", at(8));
        let mut gone = sessions.silent(Duration::from_secs(10), at(12));
        assert_eq!(gone.len(), 1);
        let (gateway, mut let_go) = gone.remove(0);
        let_go.sort();
        assert_eq!((gateway.as_str(), let_go), ("hub:10-aa", vec![1, 2]));
        assert_eq!(sessions.get(&key("hub2:20-bb", 1, "ops")), Some(3));
        assert!(!crate::sync::lock(&sessions.heard).contains_key("stranger:1-00"));
    }

    #[test]
    fn a_session_s_end_ends_its_sessions_for_every_token_and_no_other() {
        let sessions: Sessions<u64> = Sessions::default();
        sessions.insert(key("hub:10-aa", 1, "ops"), 1);
        sessions.insert(key("hub:10-aa", 1, "root"), 2);
        sessions.insert(key("hub:10-aa", 2, "ops"), 3);
        sessions.insert(key("hub2:20-bb", 1, "ops"), 4);
        let mut ended = sessions.end_of("hub:10-aa", 1);
        ended.sort();
        assert_eq!(ended, [1, 2]);
        assert_eq!(sessions.get(&key("hub:10-aa", 2, "ops")), Some(3));
        assert_eq!(sessions.get(&key("hub2:20-bb", 1, "ops")), Some(4));
        assert!(sessions.end_of("hub:10-aa", 1).is_empty());
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
