//! Approval by the client's user for a client without a session (MCP
//! 2026-07-28, multi round-trip requests): such a client has no channel
//! on which the daemon could ask it anything while a call waits, so a call
//! whose line needs approval, under a policy that names the client's user
//! among its approvers, ends its first round with an `input_required`
//! result. It carries one form per held line (the same question
//! `mcp/client_user.rs` asks a client with a session) and a sealed
//! `requestState`; the client shows the forms to its user and calls
//! again with the answers and the state.
//!
//! Between the two rounds the request waits in the port's store
//! (`port/approvals.rs`) as any other: a person at a console or in the
//! web view may decide it first, and nobody deciding before the deadline
//! expires it. The second round finds it again ([`Parked`]), takes it out
//! (a state is spent once: replaying it finds nothing), checks that the
//! call asks to send the same text on the same port with the same token,
//! lets the user's answer decide it where nobody has, and goes on only
//! once it is approved.
//!
//! The state is sealed with an HMAC key made at start (rmcp's
//! `RequestStateCodec`), bound to the token, the tool and its arguments,
//! and expires with the request: a client cannot forge one, nor use one
//! for another call or another token. It holds only request ids.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ElicitRequest, ElicitResult, InputRequest, InputRequiredResult,
    ProtocolVersion, RequestStateCodec, SealOptions,
};
use rmcp::service::RequestContext;
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::approval_wait::{asking, mode_name, verdict};
use super::authorize::Held;
use super::client_user::{self, Question};
use crate::audit::Actor;
use crate::error::{ErrorCode, GateError, shown};
use crate::port::approvals::Decision;

/// How long a decided request stays findable for the call's second
/// round after its decision or expiry.
const KEPT_AFTER_DECISION: Duration = Duration::from_secs(60);

/// How long the second round waits for the store to report a decision
/// it has just been given.
const DECISION_SETTLES: Duration = Duration::from_secs(1);

/// What the first round of a held call leaves for its second.
pub enum Round {
    /// Every held line is approved: the tool runs.
    Proceed,
    /// The client's user is to be asked: the call's result.
    Ask(InputRequiredResult),
}

/// A request made in a call's first round, waiting for its second.
struct Parked {
    /// The port it is for.
    port: String,
    /// The exact text.
    text: String,
    /// The requester, whose session the user's answer is given as.
    requester: Actor,
    /// The request's end, once there is one.
    decision: watch::Receiver<Option<Decision>>,
    /// Withdraws the request.
    withdraw: CancellationToken,
}

/// Requests between their two rounds, by id. Bounded by the store's own
/// caps (per token and per port) and by their deadlines.
fn parked() -> &'static Mutex<HashMap<u64, Parked>> {
    static PARKED: OnceLock<Mutex<HashMap<u64, Parked>>> = OnceLock::new();
    PARKED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Locks [`parked`], whatever a panic elsewhere left.
fn lock() -> std::sync::MutexGuard<'static, HashMap<u64, Parked>> {
    parked()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The key states are sealed with, made once per process.
fn codec() -> Option<&'static RequestStateCodec> {
    static CODEC: OnceLock<Option<RequestStateCodec>> = OnceLock::new();
    CODEC
        .get_or_init(|| {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).ok()?;
            RequestStateCodec::try_new(key.to_vec()).ok()
        })
        .as_ref()
}

/// The key an input request of request `id` has in the result.
fn input_key(id: u64) -> String {
    format!("approve-{id}")
}

/// What a state is bound to: the token, the tool and its arguments as
/// the client sent them (before the access rules looked at them).
pub fn call_binding(token: &str, request: &CallToolRequestParams) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(token.as_bytes());
    hash.update([0]);
    hash.update(request.name.as_bytes());
    hash.update([0]);
    if let Some(arguments) = &request.arguments
        && let Ok(text) = serde_json::to_vec(arguments)
    {
        hash.update(&text);
    }
    hash.finalize().to_vec()
}

/// Whether this call's held lines are decided this way: the client speaks
/// without a session (2026-07-28 or later), declared that it shows forms
/// with the request, and every line's policy names the client's user.
pub fn applies(held: &[Held], context: &RequestContext<RoleServer>) -> bool {
    may_apply(context) && held.iter().all(|h| h.needs.client_user)
}

/// Whether a held line of this call could be decided this way: the
/// client speaks without a session and declared that it shows forms with
/// the request. Only then is the call's binding worth computing.
pub fn may_apply(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
        && client_user::may_ask_inline(context.meta.client_capabilities().as_ref())
}

/// One round of a held call: the first (no `requestState`) asks and
/// returns [`Round::Ask`]; the second takes the user's answers and
/// returns [`Round::Proceed`] once every line is approved, else `denied`.
pub async fn round(
    held: Vec<Held>,
    actor: &Actor,
    timeout: Duration,
    request: &CallToolRequestParams,
    binding: &[u8],
) -> Result<Round, GateError> {
    let Some(codec) = codec() else {
        return Err(GateError::new(
            ErrorCode::Denied,
            "no randomness to seal the request's state with; a person at the console may send the line",
        ));
    };
    match &request.request_state {
        None => ask(held, actor, timeout, codec, binding),
        Some(state) => {
            answer(held, actor, timeout, codec, state, request, binding).await?;
            Ok(Round::Proceed)
        }
    }
}

/// The first round: every held line goes to its port's store and is
/// parked; the result asks the user about each.
fn ask(
    held: Vec<Held>,
    actor: &Actor,
    timeout: Duration,
    codec: &RequestStateCodec,
    binding: &[u8],
) -> Result<Round, GateError> {
    let mut requests = BTreeMap::new();
    let mut ids = Vec::new();
    let mut longest = Duration::ZERO;
    for Held { port, needs } in held {
        let timeout = needs.timeout.unwrap_or(timeout);
        longest = longest.max(timeout);
        let name = port.name().to_owned();
        let mode = mode_name(needs.mode);
        // `applies` saw that every held line names the client's user.
        let asked = port.approvals().request(actor, asking(&needs, timeout));
        let ticket = match asked {
            Ok(ticket) => ticket,
            Err(e) => {
                // The call ends here: the lines parked before this one
                // would wait for a second round that never comes.
                withdraw(&ids);
                return Err(e);
            }
        };
        let id = ticket.id();
        let line = shown(&needs.text);
        let question = Question {
            id,
            port: &name,
            line: &line,
            mode,
            reason: &needs.reason,
            expires_in_s: timeout.as_secs(),
        };
        let Some(form) = client_user::form(&question) else {
            withdraw(&ids);
            return Err(GateError::new(
                ErrorCode::Denied,
                "the approval form could not be made; a person at the console may send the line",
            ));
        };
        requests.insert(
            input_key(id),
            InputRequest::Elicitation(ElicitRequest::new(form)),
        );
        tracing::info!(port = %name, request = id, "waiting for the approval of {line} by the client's user (in the call's result) or a person");
        let (decided, decision) = watch::channel(None);
        let withdraw = CancellationToken::new();
        let keeper = withdraw.clone();
        lock().insert(
            id,
            Parked {
                port: name,
                text: needs.text,
                requester: actor.clone(),
                decision,
                withdraw,
            },
        );
        // The request's own wait: it ends at a decision, the deadline or
        // the withdrawal, and the end is kept a while for the second
        // round, then forgotten.
        crate::task::spawn(async move {
            let end = ticket
                .wait(&keeper, Duration::from_secs(3600), |_| {})
                .await;
            let _ = decided.send(end);
            tokio::time::sleep(KEPT_AFTER_DECISION).await;
            lock().remove(&id);
        });
        ids.push(id.to_string());
    }
    let sealed = codec.seal_with(
        ids.join(",").as_bytes(),
        &SealOptions::new()
            .associated_data(binding)
            .ttl(longest + KEPT_AFTER_DECISION),
    );
    Ok(Round::Ask(InputRequiredResult::new(
        Some(requests),
        Some(sealed),
    )))
}

/// Withdraws the parked requests `ids` (their first round failed).
fn withdraw(ids: &[String]) {
    let parked = lock();
    for id in ids.iter().filter_map(|id| id.parse::<u64>().ok()) {
        if let Some(p) = parked.get(&id) {
            p.withdraw.cancel();
        }
    }
}

/// The refusal of a state that this daemon did not give for this call.
fn foreign_state() -> GateError {
    GateError::invalid(
        "the requestState is not one this daemon gave for this call and token, or it has expired; nothing was sent: call again without it to ask anew",
    )
}

/// The second round: the state names the requests the first made; each
/// must be for the line the call holds now, on the same port; the
/// user's answer decides it where nobody has; every one must be approved.
async fn answer(
    held: Vec<Held>,
    actor: &Actor,
    timeout: Duration,
    codec: &RequestStateCodec,
    state: &str,
    request: &CallToolRequestParams,
    binding: &[u8],
) -> Result<(), GateError> {
    let opened = codec
        .open_with(state, binding)
        .map_err(|_| foreign_state())?;
    let ids: Vec<u64> = std::str::from_utf8(&opened)
        .map_err(|_| foreign_state())?
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| foreign_state())?;
    if ids.len() != held.len() {
        return Err(foreign_state());
    }
    // Every request is taken out first: a state is spent once, whatever
    // follows.
    let taken: Vec<Option<Parked>> = {
        let mut parked = lock();
        ids.iter().map(|id| parked.remove(id)).collect()
    };
    for ((held, id), parked) in held.into_iter().zip(ids).zip(taken) {
        let name = held.port.name().to_owned();
        let line = shown(&held.needs.text);
        let Some(parked) = parked else {
            return Err(GateError::invalid(format!(
                "request {id} was already answered, or is long over; nothing was sent: call again without requestState to ask anew"
            )));
        };
        if parked.port != name
            || parked.text != held.needs.text
            || parked.requester.token != actor.token
        {
            parked.withdraw.cancel();
            return Err(GateError::invalid(format!(
                "request {id} was made for another line, port or token than this call's {line} on {name}; nothing was sent: call again without requestState"
            )));
        }
        let mut decision = parked.decision.clone();
        if decision.borrow().is_none() {
            let reply = request
                .input_responses
                .as_ref()
                .and_then(|r| r.get(&input_key(id)))
                .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
            let Some(reply) = reply else {
                parked.withdraw.cancel();
                return Err(GateError::new(
                    ErrorCode::Denied,
                    format!(
                        "{line} on {name}: your client sent no answer of its user to request {id}; it was withdrawn and nothing was sent"
                    ),
                ));
            };
            let approve = client_user::approves(&reply);
            if let Err(e) = held.port.approvals().decide_as_client_user(
                id,
                &held.needs.text,
                &parked.requester,
                approve,
            ) {
                // Decided or expired meanwhile: the store's end says how.
                tracing::info!(port = %name, request = id, "the client's user's answer came late: {}", e.message);
            }
        }
        let end = tokio::time::timeout(DECISION_SETTLES, decision.wait_for(Option::is_some))
            .await
            .ok()
            .and_then(|r| r.ok().and_then(|d| d.clone()));
        let Some(end) = end else {
            parked.withdraw.cancel();
            return Err(GateError::new(
                ErrorCode::Denied,
                format!("request {id} on {name} was not decided; nothing was sent: call again"),
            ));
        };
        let timeout = held.needs.timeout.unwrap_or(timeout);
        verdict(end, &line, id, &name, &held.needs.reason, timeout)?;
    }
    Ok(())
}
