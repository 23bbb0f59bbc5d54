//! At a serving gateway, what a site's forwarded calls have for the
//! agent's client, passed on to it: one relay per MCP session and site,
//! listening on the session's subject of client events there. A call's
//! progress goes out under the agent's own progress token; a question
//! for the client's user is asked only in the approve-or-deny form this
//! gateway asks itself, its message the site's, cleaned and naming the
//! site; the answer goes back to the site. Ends with the session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::client_user;
use crate::error::{ErrorCode, GateError};
use crate::fleet::client_relay::{
    ClientEvent, ClientEvents, MAX_CLIENT_EVENT, MAX_CLIENT_TEXT, UserAnswer,
};
use crate::fleet::each_message::each_message;
use crate::fleet::link::Fleet;
use crate::fleet::subjects;
use crate::fleet::wire::{VERSION, one_line};

/// Most questions of one site open at once with one session's user; more
/// are answered at once as not asked (people decide them).
const MAX_OPEN_QUESTIONS: usize = 16;
/// How long a progress note may take to reach the client.
const NOTE_DEADLINE: Duration = Duration::from_secs(1);

/// Who the site's session for this relay is: whose calls, through whom.
#[derive(Clone)]
pub struct SiteSessionOf {
    /// This gateway, as its calls name it.
    pub gateway: String,
    /// The MCP session's number here.
    pub session: u64,
    /// The token its calls come with.
    pub token: String,
}

/// A session's relay for one site.
pub struct SiteRelay {
    /// The id drawn for this session at the site (the subject's last
    /// token).
    id: String,
    /// The session's client shows forms to its user (it declared
    /// elicitation when it initialized).
    client_asks: bool,
    /// The progress token of each call running there, by call number.
    calls: Mutex<HashMap<u64, ProgressToken>>,
    /// The questions open with the user, by the site's id.
    questions: Mutex<HashMap<u64, DropGuard>>,
    _stop: DropGuard,
}

impl SiteRelay {
    /// Starts listening for `site`'s events for the session `of`, whose
    /// client is `peer`.
    pub async fn start(
        fleet: &Fleet,
        site: &str,
        peer: Peer<RoleServer>,
        of: SiteSessionOf,
    ) -> Result<Arc<SiteRelay>, GateError> {
        let id = format!(
            "{:016x}",
            getrandom::u64().map_err(|e| GateError::new(
                ErrorCode::PortUnavailable,
                format!("no random id for the fleet: {e}")
            ))?
        );
        let events = fleet
            .client()
            .subscribe(subjects::client_events(site, &id))
            .await
            .map_err(|e| GateError::new(ErrorCode::PortUnavailable, format!("the fleet: {e}")))?;
        let stop = CancellationToken::new();
        let relay = Arc::new(SiteRelay {
            id,
            client_asks: client_user::may_ask(&peer),
            calls: Mutex::default(),
            questions: Mutex::default(),
            _stop: stop.clone().drop_guard(),
        });
        let weak = Arc::downgrade(&relay);
        let reaches = Arc::new((peer, fleet.clone(), site.to_owned(), of));
        // The relay's drop cancels `stop`, which ends the loop.
        each_message(events, stop, move |message| {
            let relay = weak.upgrade();
            let event = if message.payload.len() <= MAX_CLIENT_EVENT {
                serde_json::from_slice::<ClientEvent>(&message.payload).ok()
            } else {
                None
            };
            let reaches = reaches.clone();
            async move {
                if let (Some(relay), Some(event)) = (relay, event) {
                    let (peer, fleet, site, of) = &*reaches;
                    relay.take(event, peer, fleet, site, of).await;
                }
            }
        });
        Ok(relay)
    }

    /// What a forwarded call says of the client: this relay's id, whether
    /// the call's progress is wanted, whether its user may be asked.
    pub fn events(&self, progress: bool) -> ClientEvents {
        ClientEvents {
            id: self.id.clone(),
            progress,
            questions: self.client_asks,
        }
    }

    /// Passes on call `call`'s progress under `token` until the guard
    /// drops.
    pub fn track(self: &Arc<Self>, call: u64, token: ProgressToken) -> Tracked {
        crate::sync::lock(&self.calls).insert(call, token);
        Tracked {
            relay: self.clone(),
            call,
        }
    }

    async fn take(
        self: &Arc<Self>,
        event: ClientEvent,
        peer: &Peer<RoleServer>,
        fleet: &Fleet,
        site: &str,
        of: &SiteSessionOf,
    ) {
        match event {
            ClientEvent::Progress {
                v,
                call,
                progress,
                total,
                message,
            } if v == VERSION => {
                let Some(token) = crate::sync::lock(&self.calls).get(&call).cloned() else {
                    return;
                };
                let mut note = ProgressNotificationParam::new(token, progress);
                note.total = total;
                if let Some(message) = message {
                    note = note.with_message(format!(
                        "site {site}: {}",
                        one_line(&message, MAX_CLIENT_TEXT)
                    ));
                }
                let _ = tokio::time::timeout(NOTE_DEADLINE, peer.notify_progress(note)).await;
            }
            ClientEvent::Ask { v, id, params } if v == VERSION => {
                self.ask(id, &params, peer, fleet, site, of);
            }
            ClientEvent::Withdraw { v, id } if v == VERSION => {
                crate::sync::lock(&self.questions).remove(&id);
            }
            _ => {}
        }
    }

    /// Asks the user the site's question `id` in this gateway's own form,
    /// and sends the site the answer (none when it cannot be asked).
    fn ask(
        self: &Arc<Self>,
        id: u64,
        params: &serde_json::Value,
        peer: &Peer<RoleServer>,
        fleet: &Fleet,
        site: &str,
        of: &SiteSessionOf,
    ) {
        let form = serde_json::from_value::<ElicitRequestParams>(params.clone())
            .ok()
            .filter(|_| self.client_asks)
            .and_then(|p| {
                let message = client_user::approval_message(&p)?;
                client_user::approval_form(format!(
                    "site {site}: {}",
                    one_line(message, MAX_CLIENT_TEXT)
                ))
            });
        let mut questions = crate::sync::lock(&self.questions);
        let form = form.filter(|_| questions.len() < MAX_OPEN_QUESTIONS);
        let withdrawn = CancellationToken::new();
        if form.is_some() {
            questions.insert(id, withdrawn.clone().drop_guard());
        }
        drop(questions);
        let (peer, fleet, site, of) = (peer.clone(), fleet.clone(), site.to_owned(), of.clone());
        let relay = Arc::downgrade(self);
        crate::task::spawn(async move {
            let approve = match form {
                Some(form) => tokio::select! {
                    // Dropping the question withdraws it from the client.
                    approve = client_user::ask_form(&peer, form, &site, id) => approve,
                    () = withdrawn.cancelled() => return,
                },
                None => {
                    tracing::info!(
                        "fleet: site {site}'s question {id} is not asked: not the approval form, the client takes no forms, or {MAX_OPEN_QUESTIONS} are open"
                    );
                    None
                }
            };
            if let Some(relay) = relay.upgrade() {
                crate::sync::lock(&relay.questions).remove(&id);
            }
            let answer = UserAnswer {
                v: VERSION,
                gateway: of.gateway,
                session: of.session,
                token: of.token,
                id,
                approve,
            };
            let payload = serde_json::to_vec(&answer).unwrap_or_default();
            if let Err(e) = fleet
                .client()
                .publish(subjects::user_answers(&site), payload.into())
                .await
            {
                tracing::warn!("fleet: site {site} was not given its user's answer: {e}");
            }
        });
    }
}

/// A call's progress passed on while it lives.
pub struct Tracked {
    relay: Arc<SiteRelay>,
    call: u64,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        crate::sync::lock(&self.relay.calls).remove(&self.call);
    }
}
