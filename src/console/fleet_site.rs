//! A site gateway serving the consoles that people at a serving gateway
//! open on its ports (`serialgate.site.<SITE>.console.…`): each person's
//! session runs here as a local attachment does (presence, the port's one
//! write hold, typing judged and audited here), under `token@gateway`
//! (`Caller::via_fleet`) and named `person@gateway`, but without the
//! output: the serving gateway reads that in ranges, once for all its
//! watchers, when this site says (`serialgate.from.<SITE>.console.head.…`)
//! that a watched port's output reaches further. A session its serving
//! gateway stops keeping ends after [`KEEP_FOR`], freeing its hold.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::attachment::{OUTGOING_FRAMES, Person, serve_for_fleet};
use super::fleet_wire::{
    ConsoleAnswer, ConsoleKeep, ConsoleOpen, HeadNotice, InFrame, KEEP_EVERY, KEEP_FOR,
    MAX_FLEET_TRANSCRIPT, MAX_RANGE, RangeAsk, RangeHead, TranscriptAsk, encode_range,
    encode_transcript, plain_id,
};
use super::protocol::{Frame, MAX_CLIENT_DATA_BYTES, MAX_JSON_BYTES};
use crate::access::Caller;
use crate::access::standing::Standing;
use crate::fleet::forwarded_policy::ForwardedPolicy;
use crate::fleet::link::Fleet;
use crate::fleet::subjects;
use crate::fleet::wire::{VERSION, plain_port_name};
use crate::gateway::Gateway;

/// Most console sessions of other gateways a site runs at once.
pub const MAX_FLEET_CONSOLES: usize = 1024;
/// The shortest pause between two notices of one port's output: a port
/// printing fast costs one notice (and one read) per pause, not per
/// chunk.
const NOTICE_PAUSE: Duration = Duration::from_millis(20);

/// One session of a person elsewhere.
struct Session {
    incoming: mpsc::Sender<Frame>,
    kept: Instant,
    _notices: Arc<DropGuard>,
}

/// The sessions and the ports whose output is told.
#[derive(Clone, Default)]
struct Sessions {
    sessions: Arc<Mutex<HashMap<String, Session>>>,
    notifiers: Arc<Mutex<HashMap<String, Weak<DropGuard>>>>,
}

/// Serves the consoles of other gateways on `fleet`'s site until `stop`.
pub async fn serve_consoles(
    gateway: Gateway,
    fleet: Fleet,
    stop: CancellationToken,
) -> Result<(), async_nats::SubscribeError> {
    let root = subjects::consoles(&fleet.site);
    let client = fleet.client().clone();
    let mut asked = client.subscribe(format!("{root}.>")).await?;
    let sessions = Sessions::default();
    crate::task::spawn(async move {
        let mut reap = tokio::time::interval(KEEP_EVERY);
        loop {
            let message = tokio::select! {
                () = stop.cancelled() => break,
                _ = reap.tick() => {
                    // Dropping a session's sender ends it: its hold is
                    // freed, its watchers told it left.
                    crate::sync::lock(&sessions.sessions).retain(|_, s| s.kept.elapsed() < KEEP_FOR);
                    continue;
                }
                m = asked.next() => match m {
                    Some(m) => m,
                    None => break,
                },
            };
            let Some(what) = message
                .subject
                .as_str()
                .strip_prefix(&root)
                .and_then(|s| s.strip_prefix('.'))
            else {
                continue;
            };
            if let Some(id) = what.strip_prefix("in.") {
                sessions.take_in(id, &message.payload);
                continue;
            }
            let Some(reply) = message.reply.clone() else {
                continue;
            };
            if what == "transcript" {
                // A file read: answered from a task of its own.
                let (gateway, client) = (gateway.clone(), client.clone());
                crate::task::spawn(async move {
                    let answer = transcript(&gateway, &message.payload).await;
                    if let Err(e) = client.publish(reply, answer.into()).await {
                        tracing::debug!("fleet: a transcript was not sent: {e}");
                    }
                });
                continue;
            }
            let answer = match what {
                "open" => sessions.open(&gateway, &fleet, &message.payload, &stop),
                "keep" => sessions.keep(&message.payload),
                "read" => read(&gateway, &message.payload),
                _ => continue,
            };
            if let Err(e) = client.publish(reply, answer.into()).await {
                tracing::debug!("fleet: a console answer was not sent: {e}");
            }
        }
    });
    Ok(())
}

/// A [`ConsoleAnswer`] as JSON.
fn answered(answer: &ConsoleAnswer) -> Vec<u8> {
    serde_json::to_vec(answer).unwrap_or_default()
}

impl Sessions {
    /// Opens a person's session; the answer.
    fn open(
        &self,
        gateway: &Gateway,
        fleet: &Fleet,
        payload: &[u8],
        stop: &CancellationToken,
    ) -> Vec<u8> {
        let refused = |why: String| answered(&ConsoleAnswer::Refused(why));
        if payload.len() > MAX_JSON_BYTES {
            return refused("invalid_argument: the request is too long".into());
        }
        let open: ConsoleOpen = match serde_json::from_slice(payload) {
            Ok(o) => o,
            Err(e) => return refused(format!("invalid_argument: no console request: {e}")),
        };
        let plain = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        };
        if open.v != VERSION
            || !plain_id(&open.id)
            || !plain(&open.gateway)
            || open.token.is_empty()
        {
            return refused(
                "invalid_argument: the request names no session, gateway or token this site takes"
                    .into(),
            );
        }
        let port = open.hello.port.clone();
        if !plain_port_name(&port) || gateway.port(&port).is_none_or(|p| p.adhoc) {
            return refused(format!(
                "port_unavailable: site {} has no port named {}",
                fleet.site,
                crate::error::shown(&port)
            ));
        }
        let mut sessions = crate::sync::lock(&self.sessions);
        if sessions.contains_key(&open.id) {
            return refused("invalid_argument: a session of that id runs".into());
        }
        if sessions.len() >= MAX_FLEET_CONSOLES {
            return refused(format!(
                "port_unavailable: site {} runs {MAX_FLEET_CONSOLES} consoles of other gateways; try again when one ends",
                fleet.site
            ));
        }
        let policy = match open.policy.as_ref().map(ForwardedPolicy::read).transpose() {
            Ok(p) => p,
            Err(why) => {
                return refused(format!(
                    "invalid_argument: {why}; the console was not opened"
                ));
            }
        };
        let caller = Caller::via_fleet(&open.token, &open.gateway, open.access, false)
            .with_forwarded_policy(policy)
            .approving(open.approve);
        let person = Person {
            standing: Standing::fixed(caller, gateway),
            name: format!(
                "{}@{}",
                crate::error::label(&open.person),
                crate::error::label(&open.gateway)
            ),
        };
        tracing::info!(
            "fleet: {} opens a console on {port} through {}",
            person.name,
            crate::error::label(&open.gateway)
        );
        let (in_tx, in_rx) = mpsc::channel(OUTGOING_FRAMES);
        let (out_tx, mut out_rx) = mpsc::channel::<Frame>(OUTGOING_FRAMES);
        let client = fleet.client().clone();
        let out_subject = subjects::console_out(&fleet.site, &open.id);
        crate::task::spawn(async move {
            // The events only: the output travels by ranges.
            while let Some(frame) = out_rx.recv().await {
                if let Frame::Json(text) = frame
                    && let Err(e) = client.publish(out_subject.clone(), text.into()).await
                {
                    tracing::debug!("fleet: a console message was not sent: {e}");
                }
            }
        });
        let notices = self.notices(gateway, fleet, &port, stop);
        sessions.insert(
            open.id.clone(),
            Session {
                incoming: in_tx.clone(),
                kept: Instant::now(),
                _notices: notices,
            },
        );
        drop(sessions);
        // The hello goes first, as from a client here.
        let hello = serde_json::to_string(&super::protocol::ClientMessage::Hello(open.hello))
            .unwrap_or_default();
        let _ = in_tx.try_send(Frame::Json(hello));
        let (gateway, stop, this, id) = (gateway.clone(), stop.clone(), self.clone(), open.id);
        crate::task::spawn(async move {
            serve_for_fleet(gateway, person, port, in_rx, out_tx, stop).await;
            crate::sync::lock(&this.sessions).remove(&id);
        });
        answered(&ConsoleAnswer::Ok)
    }

    /// Keeps a session; the answer says whether it runs.
    fn keep(&self, payload: &[u8]) -> Vec<u8> {
        let Ok(keep) = serde_json::from_slice::<ConsoleKeep>(&payload[..payload.len().min(1024)])
        else {
            return answered(&ConsoleAnswer::Refused("invalid_argument: no keep".into()));
        };
        match crate::sync::lock(&self.sessions).get_mut(&keep.id) {
            Some(s) => {
                s.kept = Instant::now();
                answered(&ConsoleAnswer::Ok)
            }
            None => answered(&ConsoleAnswer::Unknown),
        }
    }

    /// A frame for session `id`, if it runs.
    fn take_in(&self, id: &str, payload: &[u8]) {
        let Some(frame) = InFrame::decode(&payload[..payload.len().min(MAX_JSON_BYTES + 1)]) else {
            return;
        };
        let mut sessions = crate::sync::lock(&self.sessions);
        let frame = match frame {
            InFrame::Close => {
                sessions.remove(id);
                return;
            }
            InFrame::Json(text) => Frame::Json(text),
            // Bounded as at a console here (the attachment refuses more).
            InFrame::Data(bytes) => {
                Frame::Data(bytes[..bytes.len().min(MAX_CLIENT_DATA_BYTES + 1)].to_vec())
            }
        };
        if let Some(s) = sessions.get_mut(id) {
            s.kept = Instant::now();
            if s.incoming.try_send(frame).is_err() {
                tracing::warn!(
                    "fleet: a console of another gateway sends faster than its session here takes; a frame was dropped"
                );
            }
        }
    }

    /// The notices of `port`'s output, told while a session holds the
    /// guard.
    fn notices(
        &self,
        gateway: &Gateway,
        fleet: &Fleet,
        port: &str,
        stop: &CancellationToken,
    ) -> Arc<DropGuard> {
        let mut notifiers = crate::sync::lock(&self.notifiers);
        notifiers.retain(|_, n| n.strong_count() > 0);
        if let Some(guard) = notifiers.get(port).and_then(Weak::upgrade) {
            return guard;
        }
        let done = stop.child_token();
        let guard = Arc::new(done.clone().drop_guard());
        notifiers.insert(port.to_owned(), Arc::downgrade(&guard));
        if let Some(found) = gateway.port(port) {
            let log = found.port.log().clone();
            let client = fleet.client().clone();
            let subject = subjects::console_heads(&fleet.site, port);
            crate::task::spawn(async move {
                let mut heads = log.subscribe();
                let id = format!("{:016x}", log.id());
                loop {
                    tokio::select! {
                        () = done.cancelled() => break,
                        changed = heads.changed() => if changed.is_err() { break },
                    }
                    let head = *heads.borrow_and_update();
                    let notice = serde_json::to_vec(&HeadNotice {
                        log: id.clone(),
                        head,
                    })
                    .unwrap_or_default();
                    if let Err(e) = client.publish(subject.clone(), notice.into()).await {
                        tracing::debug!("fleet: an output notice was not sent: {e}");
                    }
                    // Rate, not synchronisation: what comes meanwhile is
                    // told by the next notice.
                    tokio::time::sleep(NOTICE_PAUSE).await;
                }
            });
        }
        guard
    }
}

/// Answers a range read of a port's output.
/// The end of a port's transcript (or its retained output) a
/// [`TranscriptAsk`] in `payload` asks for, at most
/// [`MAX_FLEET_TRANSCRIPT`] bytes, encoded by [`encode_transcript`].
async fn transcript(gateway: &Gateway, payload: &[u8]) -> Vec<u8> {
    let refused = |why: &str| encode_transcript(b'E', why);
    let Ok(ask) = serde_json::from_slice::<TranscriptAsk>(&payload[..payload.len().min(1024)])
    else {
        return refused("no transcript request");
    };
    let Some(found) = gateway
        .port(&ask.port)
        .filter(|p| ask.v == VERSION && !p.adhoc && plain_port_name(&ask.port))
    else {
        return refused("no such port");
    };
    match found.port.tail(MAX_FLEET_TRANSCRIPT).await {
        Ok(tail) => encode_transcript(if tail.transcript { b'T' } else { b'O' }, &tail.text),
        Err(why) => refused(&why),
    }
}

fn read(gateway: &Gateway, payload: &[u8]) -> Vec<u8> {
    // No range: the serving gateway shows this text as why.
    let refused = |why: &str| format!("port_unavailable: {why}").into_bytes();
    let Ok(ask) = serde_json::from_slice::<RangeAsk>(&payload[..payload.len().min(1024)]) else {
        return refused("no read");
    };
    let Some(found) = gateway
        .port(&ask.port)
        .filter(|p| !p.adhoc && plain_port_name(&ask.port))
    else {
        return refused("no such port");
    };
    let log = found.port.log();
    let view = log.view();
    let head = view.head();
    let start = ask.from.unwrap_or(head).min(head).max(view.oldest());
    let end = head.min(start + ask.max.min(MAX_RANGE) as u64);
    let bytes = if ask.from.is_some() {
        view.slice(start, end)
    } else {
        &[]
    };
    encode_range(
        &RangeHead {
            log: format!("{:016x}", log.id()),
            start,
            head,
        },
        bytes,
    )
}
