//! The lines waiting for a person's approval on one port: the store that
//! holds a call whose line its command policy sends only once a person
//! approves (`access/guard.rs`), until someone decides, the deadline
//! passes, or the call is withdrawn.
//!
//! A request records who asks (their actor, which carries their token),
//! the exact text, the mode it arrives in, the port and when; it gets an
//! id no other request of this daemon has. A decision names the id and
//! the exact text it was shown ([`Approvals::decide`]), and is bound to
//! them: it releases only that request, on this port, once (the request
//! leaves the store as it is decided), and the text the requester sends is
//! the one stored, which nobody changes after the request is made. The
//! person who decides must be a person (their actor has `person`) and, by
//! default, another credential than the requester's token (four eyes; see
//! [`may_decide`]). Where the policy names the client's user among its
//! approvers, the user of the requester's own MCP client may decide too
//! ([`Approvals::decide_as_client_user`], asked by the requester's own
//! door; whichever decision comes first is the one taken). Requests are
//! capped per token and in all, so that a caller cannot fill the store.
//!
//! Every request and its end (approved, denied, expired, withdrawn) goes
//! to the audit trail with who asked, who decided and the text, and is
//! counted for Prometheus ([`crate::metrics::approval`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::audit::{Actor, Audit, AuditRecord};
use crate::error::{ErrorCode, GateError, shown};

/// The most requests one token may have waiting on one port.
pub const MAX_PER_TOKEN: usize = 8;
/// The most requests waiting on one port in all.
pub const MAX_PENDING: usize = 64;

/// The longest text a request may hold: what a person can read at the
/// console before deciding, and what keeps the list of a port's requests
/// within one console message.
pub const MAX_TEXT_BYTES: usize = 2048;

/// Numbers requests across every port of the daemon, so that an id names
/// one request of one port.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How the audit trail and the requester's answer name the user of the
/// requester's own MCP client when they decide.
pub const CLIENT_USER: &str = "client_user";

/// Token names that are no `[[tokens]]` credential: the local operator
/// (stdio, and the console socket, where the kernel names the person) and
/// a loopback caller without auth (nobody is told apart there).
const NOT_CREDENTIALS: &[&str] = &["local", "anonymous"];

/// A request waiting for a person, as the console and `status` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PendingApproval {
    /// Its id, which a decision names.
    pub id: u64,
    /// The port it would be sent to.
    pub port: String,
    /// Who asks, as messages name them (`session 3 (client x, token y)`).
    pub who: String,
    /// The requester's token.
    pub token: String,
    /// The exact text that would be sent.
    pub line: String,
    /// The mode it arrives in (`exec`, `config`, `unknown`).
    pub mode: String,
    /// Why it needs approval (the rule and the policy).
    pub reason: String,
    /// When it was asked (RFC 3339).
    pub since: String,
    /// Seconds left before it expires (when it was listed).
    pub expires_in_s: u64,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// A person approved it: `by` names them.
    Approved {
        /// Who approved.
        by: String,
    },
    /// A person denied it: `by` names them.
    Denied {
        /// Who denied.
        by: String,
    },
    /// Nobody decided before the deadline.
    Expired,
    /// The daemon withdrew it undecided: `why` says why (a reload
    /// changed the policies it was judged by).
    Withdrawn {
        /// Why, as the requester is told.
        why: String,
    },
}

/// What a request asks to send.
#[derive(Debug, Clone)]
pub struct Asking {
    /// The exact text.
    pub line: String,
    /// The mode it arrives in.
    pub mode: String,
    /// Why it needs approval.
    pub reason: String,
    /// How long a person has to decide.
    pub timeout: Duration,
    /// A person with the requester's own token may decide it (the
    /// policy's `self_approve`); never an agent.
    pub self_approve: bool,
    /// The user of the requester's own MCP client may decide it (the
    /// policy's `approvers`).
    pub client_user: bool,
}

/// One pending request and the way to tell its requester.
struct Entry {
    request: PendingApproval,
    /// The requester, for the four-eyes check and the audit trail.
    requester: Actor,
    /// When it expires.
    deadline: Instant,
    /// See [`Asking::self_approve`].
    self_approve: bool,
    /// See [`Asking::client_user`].
    client_user: bool,
    decide: oneshot::Sender<Decision>,
}

/// The requests waiting on one port. Shared by the port's clones.
pub struct Approvals {
    port: String,
    audit: Audit,
    pending: Mutex<BTreeMap<u64, Entry>>,
    /// Bumped whenever a request comes or goes: consoles show the list.
    changed: watch::Sender<u64>,
}

impl Approvals {
    /// An empty store for `port`, auditing to `audit`.
    pub fn new(port: &str, audit: Audit) -> Arc<Approvals> {
        Arc::new(Approvals {
            port: port.to_owned(),
            audit,
            pending: Mutex::new(BTreeMap::new()),
            changed: watch::Sender::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Entry>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Told whenever a request comes or goes.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// How many requests wait now.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }

    /// The requests waiting now, oldest first.
    pub fn list(&self) -> Vec<PendingApproval> {
        let now = Instant::now();
        self.lock()
            .values()
            .map(|e| {
                let mut r = e.request.clone();
                r.expires_in_s = e.deadline.saturating_duration_since(now).as_secs();
                r
            })
            .collect()
    }

    /// Holds `asking` for a person's approval on behalf of `requester`.
    /// Refused (`denied`) when the requester's token, or the port, has
    /// too many requests waiting, or the text is over [`MAX_TEXT_BYTES`].
    pub fn request(
        self: &Arc<Self>,
        requester: &Actor,
        asking: Asking,
    ) -> Result<Ticket, GateError> {
        if asking.line.len() > MAX_TEXT_BYTES {
            crate::metrics::approval(&self.port, "refused");
            return Err(GateError::new(
                ErrorCode::Denied,
                format!(
                    "the text that needs approval is {} bytes long, more than the {MAX_TEXT_BYTES} a person is asked to review at the console; nothing was sent to {}: send it in smaller parts",
                    asking.line.len(),
                    self.port
                ),
            ));
        }
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut pending = self.lock();
            let own = pending
                .values()
                .filter(|e| e.requester.token == requester.token)
                .count();
            if own >= MAX_PER_TOKEN {
                crate::metrics::approval(&self.port, "refused");
                return Err(GateError::new(
                    ErrorCode::Denied,
                    format!(
                        "token {} already has {own} requests waiting for approval on {}, the most it may; nothing was sent: wait for a person to decide them",
                        shown(&requester.token),
                        self.port
                    ),
                ));
            }
            if pending.len() >= MAX_PENDING {
                crate::metrics::approval(&self.port, "refused");
                return Err(GateError::new(
                    ErrorCode::Denied,
                    format!(
                        "{} requests already wait for approval on {}, the most it holds; nothing was sent: try again once people have decided them",
                        pending.len(),
                        self.port
                    ),
                ));
            }
            let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
            let request = PendingApproval {
                id,
                port: self.port.clone(),
                who: requester.describe(),
                token: requester.token.clone(),
                line: asking.line,
                mode: asking.mode,
                reason: asking.reason,
                since: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
                expires_in_s: asking.timeout.as_secs(),
            };
            self.audit_event(requester, "approval request", &request, None);
            pending.insert(
                id,
                Entry {
                    request,
                    requester: requester.clone(),
                    deadline: Instant::now() + asking.timeout,
                    self_approve: asking.self_approve,
                    client_user: asking.client_user,
                    decide: tx,
                },
            );
            id
        };
        crate::metrics::approval(&self.port, "requested");
        self.bump();
        Ok(Ticket {
            id,
            store: self.clone(),
            answer: Some(rx),
        })
    }

    /// Decides request `id` as `decider` (a person at the console whose
    /// access the door checked): `line` is the text the person was shown,
    /// which must be the request's. Refused when no such request waits on
    /// this port (decided already, expired, another port's), when the text
    /// differs, or when [`may_decide`] says no.
    pub fn decide(
        &self,
        id: u64,
        line: &str,
        decider: &Actor,
        approve: bool,
    ) -> Result<PendingApproval, GateError> {
        self.settle(id, line, decider, decider.describe(), approve, |entry| {
            may_decide(&entry.requester, decider, entry.self_approve)
        })
    }

    /// Decides request `id` as the user of the requester's own MCP client
    /// (`requester` is the session that asked, its door asked its user):
    /// only for a request of that session, under a policy that names the
    /// client's user among its approvers, and for the text it showed. The
    /// audit trail names the decider `client_user` of that session.
    pub fn decide_as_client_user(
        &self,
        id: u64,
        line: &str,
        requester: &Actor,
        approve: bool,
    ) -> Result<PendingApproval, GateError> {
        let user = Actor {
            person: Some(CLIENT_USER.to_owned()),
            ..requester.clone()
        };
        let by = format!("{CLIENT_USER} of {}", requester.describe());
        self.settle(id, line, &user, by, approve, |entry| {
            if entry.requester.session != requester.session {
                return Err(GateError::new(
                    ErrorCode::Forbidden,
                    "only the user of the requesting session's own client decides it there",
                ));
            }
            if !entry.client_user {
                return Err(GateError::new(
                    ErrorCode::Forbidden,
                    "the policy does not name the client's user among its approvers: a person at the console decides it",
                ));
            }
            Ok(())
        })
    }

    /// Takes request `id` out as decided by `decider` (named `by` in the
    /// requester's answer) once `check` allows it, for `line` only.
    fn settle(
        &self,
        id: u64,
        line: &str,
        decider: &Actor,
        by: String,
        approve: bool,
        check: impl FnOnce(&Entry) -> Result<(), GateError>,
    ) -> Result<PendingApproval, GateError> {
        let entry = {
            let mut pending = self.lock();
            let Some(entry) = pending.get(&id) else {
                return Err(GateError::invalid(format!(
                    "no request {id} waits for approval on {}: it was decided, expired or withdrawn, or is another port's; nothing was sent",
                    self.port
                )));
            };
            if entry.request.line != line {
                return Err(GateError::invalid(format!(
                    "request {id} on {} is for {}, not {}: a decision is for the line it was shown; nothing was decided",
                    self.port,
                    shown(&entry.request.line),
                    shown(line)
                )));
            }
            check(entry)?;
            match pending.remove(&id) {
                Some(entry) => entry,
                None => return Err(GateError::invalid("the request went away")),
            }
        };
        let (decision, kind, outcome) = if approve {
            (Decision::Approved { by }, "approval approved", "approved")
        } else {
            (Decision::Denied { by }, "approval denied", "denied")
        };
        self.audit_event(decider, kind, &entry.request, Some(&entry.requester));
        crate::metrics::approval(&self.port, outcome);
        // The requester gone (its call cancelled as it was decided): the
        // decision is recorded and nothing is sent.
        let _ = entry.decide.send(decision);
        self.bump();
        Ok(entry.request)
    }

    /// Ends every request waiting here undecided, telling each requester
    /// `why`: what they were judged by no longer holds, and a person must
    /// not approve them under rules that are gone. Audited as withdrawn.
    pub fn withdraw_all(&self, why: &str) -> usize {
        self.withdraw_asked_by(|_| true, why)
    }

    /// Ends the requests waiting here undecided whose requester `asked`
    /// says, as [`Approvals::withdraw_all`] does: a requester that may
    /// no longer write must not have its line approved and sent.
    pub fn withdraw_asked_by(&self, asked: impl Fn(&Actor) -> bool, why: &str) -> usize {
        let ended: Vec<Entry> = {
            let mut waiting = self.lock();
            let ids: Vec<u64> = waiting
                .iter()
                .filter(|(_, entry)| asked(&entry.requester))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| waiting.remove(id)).collect()
        };
        for entry in &ended {
            self.audit_event(
                &entry.requester,
                "approval withdrawn",
                &entry.request,
                Some(&entry.requester),
            );
            crate::metrics::approval(&self.port, "withdrawn");
        }
        let count = ended.len();
        for entry in ended {
            let _ = entry.decide.send(Decision::Withdrawn {
                why: why.to_owned(),
            });
        }
        if count > 0 {
            self.bump();
        }
        count
    }

    /// Takes request `id` out without a decision (it expired, or its call
    /// was withdrawn); whether it was still waiting.
    fn end(&self, id: u64, kind: &str, outcome: &'static str) -> bool {
        let Some(entry) = self.lock().remove(&id) else {
            return false;
        };
        let requester = entry.requester.clone();
        self.audit_event(&requester, kind, &entry.request, Some(&requester));
        crate::metrics::approval(&self.port, outcome);
        self.bump();
        true
    }

    /// Audits a request's event: `actor` did it, `requester` asked.
    fn audit_event(
        &self,
        actor: &Actor,
        kind: &str,
        request: &PendingApproval,
        requester: Option<&Actor>,
    ) {
        let mut record = AuditRecord::now(&self.port, actor, kind, request.line.as_bytes(), false);
        record.approval = Some(request.id);
        record.requested_by = requester.map(Actor::describe);
        // Decided under the store's lock, so it cannot wait for a place:
        // like a session's lines, a full queue drops it (counted, warned
        // of, and in the daemon's log).
        self.audit.record_session(record);
    }
}

/// Whether `decider` may decide a request of `requester`: a person at
/// the console, and not with the requester's own `[[tokens]]` credential
/// (four eyes: a token cannot approve what it asked for by attaching a
/// console with itself). The local operator's stdio agent may be approved
/// from the local console socket, whose person the kernel names; a
/// loopback caller without auth tells nobody apart, and is not checked.
/// `self_approve` (the policy's): a person with the requester's token may.
pub fn may_decide(requester: &Actor, decider: &Actor, self_approve: bool) -> Result<(), GateError> {
    if decider.person.is_none() {
        return Err(GateError::new(
            ErrorCode::Forbidden,
            "only a person at the console decides a request for approval",
        ));
    }
    if decider.session == requester.session
        || (decider.token == requester.token
            && !self_approve
            && !NOT_CREDENTIALS.contains(&requester.token.as_str()))
    {
        return Err(GateError::new(
            ErrorCode::Forbidden,
            format!(
                "token {} asked for this approval, and cannot decide its own request (four eyes): a person with another token, or at the local console, decides it",
                shown(&requester.token)
            ),
        ));
    }
    Ok(())
}

/// A request waiting for its decision; dropping it withdraws the request.
pub struct Ticket {
    id: u64,
    store: Arc<Approvals>,
    answer: Option<oneshot::Receiver<Decision>>,
}

impl Ticket {
    /// The request's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Waits for the decision until the request's deadline (then
    /// [`Decision::Expired`]); `None` when `cancel` fires first (the
    /// request is withdrawn). `tick` is called every `every` while it
    /// waits, with the seconds left.
    pub async fn wait(
        mut self,
        cancel: &CancellationToken,
        every: Duration,
        mut tick: impl FnMut(u64),
    ) -> Option<Decision> {
        let deadline = self
            .store
            .lock()
            .get(&self.id)
            .map_or_else(Instant::now, |e| e.deadline);
        let mut answer = self.answer.take()?;
        let mut ticks = tokio::time::interval_at(Instant::now() + every, every);
        loop {
            tokio::select! {
                decided = &mut answer => {
                    return Some(decided.unwrap_or(Decision::Expired));
                }
                () = tokio::time::sleep_until(deadline) => {
                    if self.store.end(self.id, "approval expired", "expired") {
                        return Some(Decision::Expired);
                    }
                    // Decided just now.
                    return Some(answer.try_recv().unwrap_or(Decision::Expired));
                }
                _ = ticks.tick() => tick(deadline.saturating_duration_since(Instant::now()).as_secs()),
                () = cancel.cancelled() => return None,
            }
        }
    }
}

impl Ticket {
    /// Waits for the decision until the request's deadline (then
    /// [`Decision::Expired`]), keeping the ticket: for a holder that waits
    /// among other events and withdraws the request by dropping it.
    pub async fn decided(&mut self) -> Decision {
        let deadline = self
            .store
            .lock()
            .get(&self.id)
            .map_or_else(Instant::now, |e| e.deadline);
        let Some(answer) = self.answer.as_mut() else {
            return std::future::pending().await;
        };
        let decision = tokio::select! {
            decided = &mut *answer => decided.unwrap_or(Decision::Expired),
            () = tokio::time::sleep_until(deadline) => {
                if self.store.end(self.id, "approval expired", "expired") {
                    Decision::Expired
                } else {
                    // Decided just now.
                    answer.try_recv().unwrap_or(Decision::Expired)
                }
            }
        };
        self.answer = None;
        decision
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.store.end(self.id, "approval withdrawn", "withdrawn");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(token: &str) -> Actor {
        Actor {
            session: 1,
            client: "agent".into(),
            token: token.into(),
            person: None,
            config_token: false,
        }
    }

    fn person(token: &str, session: u64) -> Actor {
        Actor {
            session,
            client: "console".into(),
            token: token.into(),
            person: Some("alice".into()),
            config_token: false,
        }
    }

    fn asking(line: &str) -> Asking {
        Asking {
            line: line.into(),
            mode: "exec".into(),
            reason: "rule".into(),
            timeout: Duration::from_secs(60),
            self_approve: false,
            client_user: false,
        }
    }

    #[tokio::test]
    async fn a_decision_is_bound_to_its_request_and_spent_once() {
        let store = Approvals::new("sw1", Audit::log_only());
        let other = Approvals::new("sw2", Audit::log_only());
        let a = store.request(&agent("noc"), asking("reload")).unwrap();
        let b = store.request(&agent("noc"), asking("write erase")).unwrap();
        let alice = person("ops", 7);
        // Another line, another port: refused, nothing decided.
        let e = store
            .decide(a.id(), "write erase", &alice, true)
            .unwrap_err();
        assert!(e.message.contains("not \"write erase\""), "{e}");
        assert!(other.decide(a.id(), "reload", &alice, true).is_err());
        store.decide(a.id(), "reload", &alice, true).unwrap();
        // Spent.
        let e = store.decide(a.id(), "reload", &alice, true).unwrap_err();
        assert!(e.message.contains("no request"), "{e}");
        let cancel = CancellationToken::new();
        let d = a.wait(&cancel, Duration::from_secs(60), |_| {}).await;
        assert!(matches!(d, Some(Decision::Approved { .. })), "{d:?}");
        assert_eq!(store.list().len(), 1);
        // Withdrawn when its call goes away.
        drop(b);
        assert!(store.list().is_empty());
    }

    #[tokio::test]
    async fn four_eyes_and_caps() {
        let store = Approvals::new("sw1", Audit::log_only());
        let t = store.request(&agent("noc"), asking("reload")).unwrap();
        // The same token as a person: refused; an agent: refused.
        let e = store
            .decide(t.id(), "reload", &person("noc", 9), true)
            .unwrap_err();
        assert!(e.message.contains("four eyes"), "{e}");
        assert!(store.decide(t.id(), "reload", &agent("ops"), true).is_err());
        // Unless the policy lets a token approve its own (a person still).
        let mut own = asking("reload");
        own.self_approve = true;
        let o = store.request(&agent("ops"), own).unwrap();
        assert!(store.decide(o.id(), "reload", &agent("ops"), true).is_err());
        store
            .decide(o.id(), "reload", &person("ops", 9), true)
            .unwrap();
        // The local operator's agent, a local console person: allowed.
        let l = store.request(&agent("local"), asking("reload")).unwrap();
        store
            .decide(l.id(), "reload", &person("local", 9), false)
            .unwrap();
        let mut held = vec![t];
        while held.len() < MAX_PER_TOKEN {
            held.push(store.request(&agent("noc"), asking("reload")).unwrap());
        }
        let e = store
            .request(&agent("noc"), asking("reload"))
            .err()
            .unwrap();
        assert!(e.message.contains("the most it may"), "{e}");
        // Another token still may, not with a text no person reads.
        store.request(&agent("ops"), asking("reload")).unwrap();
        let long = "reload ".repeat(MAX_TEXT_BYTES);
        let e = store.request(&agent("ops"), asking(&long)).err().unwrap();
        assert!(e.message.contains("smaller parts"), "{e}");
    }

    #[tokio::test]
    async fn the_client_user_decides_only_its_own_sessions_requests_where_the_policy_says() {
        let store = Approvals::new("sw1", Audit::log_only());
        let mut asked = asking("reload");
        asked.client_user = true;
        let mine = store.request(&agent("noc"), asked.clone()).unwrap();
        let plain = store.request(&agent("noc"), asking("reload")).unwrap();
        let mut other = agent("noc");
        other.session = 2;
        // Another session of the same token, another line, a policy
        // without the client's user: refused, nothing decided.
        assert!(
            store
                .decide_as_client_user(mine.id(), "reload", &other, true)
                .is_err()
        );
        assert!(
            store
                .decide_as_client_user(mine.id(), "reload in 5", &agent("noc"), true)
                .is_err()
        );
        let e = store
            .decide_as_client_user(plain.id(), "reload", &agent("noc"), true)
            .unwrap_err();
        assert!(e.message.contains("approvers"), "{e}");
        store
            .decide_as_client_user(mine.id(), "reload", &agent("noc"), false)
            .unwrap();
        let d = mine
            .wait(&CancellationToken::new(), Duration::from_secs(60), |_| {})
            .await;
        assert_eq!(
            d,
            Some(Decision::Denied {
                by: "client_user of session 1 (client agent, token noc)".into()
            })
        );
        // Whoever comes first: a person decided, the client's user is late.
        let first = store.request(&agent("noc"), asked).unwrap();
        store
            .decide(first.id(), "reload", &person("ops", 7), true)
            .unwrap();
        assert!(
            store
                .decide_as_client_user(first.id(), "reload", &agent("noc"), false)
                .is_err()
        );
    }

    #[tokio::test]
    async fn nobody_deciding_expires() {
        let store = Approvals::new("sw1", Audit::log_only());
        let mut a = asking("reload");
        a.timeout = Duration::from_millis(300);
        let t = store.request(&agent("noc"), a).unwrap();
        let mut ticks = 0;
        let d = t
            .wait(&CancellationToken::new(), Duration::from_millis(50), |_| {
                ticks += 1
            })
            .await;
        assert_eq!(d, Some(Decision::Expired));
        assert!(ticks >= 2, "{ticks}");
        assert!(store.list().is_empty());
    }
}
