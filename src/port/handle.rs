//! The [`Port`] handle: a cheap clonable handle over one serial line's
//! parts, like mini-redis's `Db`: a std `Mutex` never held across
//! `.await`, and `watch` channels that wake waiters when bytes arrive or
//! the state changes.
//!
//! Each concern of the port is a part owned by its own file, its fields
//! private there: the device and its line control (`connection.rs`), the
//! log and its waiters (`wait.rs`), the hold and the people present
//! (`sharing.rs`), the transfer under way (`transfer.rs`), the watches and
//! alerts (`alerts.rs`), the confirm watch (`confirm_watch.rs`) and the
//! event history (`state.rs`). [`Shared`] is those parts plus the spec,
//! the transcript and audit handles and the closing token; the handle's
//! methods are the port as the rest of the daemon sees it, and compose the
//! parts where an act spans several (a session's write checks the hold and
//! the transfer, writes through the device and records in the transcript
//! and the audit trail). The operations that need the whole port (the
//! reader task, line control, baud detection, running a transfer) are
//! `impl Port` blocks in files of their own, above this one.

use std::sync::Arc;
use std::time::Duration;

use regex::bytes::Regex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::alerts::{AlertHook, Alerts};
use super::comport_link::ComPortLink;
use super::confirm_watch::{ConfirmWatch, PendingConfirm, Watched};
use super::connection::{Connection, ControlSlot, WriteFailure};
use super::device::DeviceWriter;
use super::presence::{Participant, PresenceGuard};
use super::sharing::{self, Holder, Sharing, Taken};
use super::state::{DOWN_RETRY, Events, PortEvent, PortState, WRITE_TIMEOUT};
use super::transfer::{TransferStatus, Transfers};
use super::wait::{WaitPort, Waiters};
use crate::audit::{Actor, Audit, AuditRecord, AuditSlot};
use crate::error::{ErrorCode, GateError};
use crate::log::OutputLog;
use crate::remote::RemoteAddr;
use crate::settings::LineSettings;
use crate::transcript::{SentRecord, Transcript, TranscriptConfig};

/// What the port is and how it is opened. Name, device and retention are
/// fixed for the port's life; `line` is the configured settings in the
/// spec a port starts with, and the current ones (changed by
/// `set_line_settings`) in what [`Port::spec`] returns.
#[derive(Debug, Clone)]
pub struct PortSpec {
    /// The port's name (configured name, or the ad-hoc connection name).
    pub name: String,
    /// Device path, e.g. `/dev/ttyUSB0`.
    pub device: String,
    /// Baud rate and framing.
    pub line: LineSettings,
    /// Bytes of output kept.
    pub retention: usize,
    /// Quick losses in a row (each within `QUICK_LOSS` of opening,
    /// `reader.rs`) after which the port is `down`; 0: never.
    pub down_after: u32,
    /// The stored credentials the port logs in with: their secrets are
    /// masked in the output (`mask.rs`).
    pub credentials: Option<std::sync::Arc<crate::config::Credentials>>,
    /// The standing watches matched against the output (alerts.rs).
    pub watches: Vec<crate::config::watches::Watch>,
    /// The preset's prompts, which tell a login prompt from a command
    /// line when a write arrives (`login_trust.rs`).
    pub prompts: Option<super::login_trust::PromptJudge>,
}

/// What a port records besides its OutputLog: a transcript file (with
/// `log_dir`) and the daemon's audit trail.
#[derive(Clone)]
pub struct PortServices {
    /// Where the transcript goes, if anywhere.
    pub transcript: Option<TranscriptConfig>,
    /// The audit trail every session write goes to.
    pub audit: Audit,
    /// Told of every alert (metrics, the webhook); never blocks.
    pub on_alert: Option<AlertHook>,
}

impl Default for PortServices {
    fn default() -> Self {
        PortServices {
            transcript: None,
            audit: Audit::log_only(),
            on_alert: None,
        }
    }
}

/// A handle on one serial line. Clones share the line.
#[derive(Clone)]
pub struct Port {
    shared: Arc<Shared>,
}

/// The parts of one port, one per concern (see the module docs).
struct Shared {
    spec: PortSpec,
    /// What happened to the port (`status`).
    events: Events,
    /// The open device, its line control and its state.
    connection: Connection,
    /// The OutputLog and the calls waiting on it.
    waiters: Waiters,
    /// The write holder and the people at the console.
    sharing: Sharing,
    /// A file transfer under way.
    transfers: Transfers,
    /// A change awaiting confirmation.
    confirm: ConfirmWatch,
    /// The standing watches and their alerts.
    alerts: Alerts,
    /// The transcript writer, with `log_dir`.
    transcript: Option<Transcript>,
    /// Where session writes are audited.
    audit: Audit,
    /// Whether anyone typed at the command line: then a login prompt may
    /// be a program's, and the stored credentials are not typed.
    login_trust: super::login_trust::LoginTrust,
    /// Lines waiting for a person's approval.
    approvals: Arc<super::approvals::Approvals>,
    /// Cancelled when the port closes; stops the reader task.
    closing: CancellationToken,
}

impl Port {
    /// Makes the port's parts, its transcript following the log; nothing
    /// runs yet (`Port::start`, `reader.rs`, starts the reader task).
    pub(super) fn new(
        spec: PortSpec,
        services: PortServices,
        shutdown: &CancellationToken,
    ) -> Port {
        let waiters = Waiters::new(spec.retention);
        let closing = shutdown.child_token();
        // The transcript follows the log from the start, whether or not
        // anyone is attached; a directory it cannot write is logged, and
        // the port runs without a transcript rather than not at all.
        let transcript = services.transcript.and_then(|config| {
            Transcript::start(&spec.name, waiters.log().clone(), config, closing.clone())
                .map_err(|e| tracing::warn!(port = %spec.name, "no transcript: {e}"))
                .ok()
        });
        Port {
            shared: Arc::new(Shared {
                alerts: Alerts::new(&spec.name, spec.watches.clone(), services.on_alert),
                events: Events::new(&spec.name),
                connection: Connection::new(spec.line),
                waiters,
                sharing: Sharing::new(),
                transfers: Transfers::default(),
                confirm: ConfirmWatch::default(),
                approvals: super::approvals::Approvals::new(&spec.name, services.audit.clone()),
                spec,
                transcript,
                audit: services.audit,
                login_trust: Default::default(),
                closing,
            }),
        }
    }

    /// The lines waiting on this port for a person's approval.
    pub fn approvals(&self) -> &Arc<super::approvals::Approvals> {
        &self.shared.approvals
    }

    /// The standing watches and the alerts they raised.
    pub(crate) fn alerts(&self) -> &Alerts {
        &self.shared.alerts
    }

    /// The port's name.
    pub fn name(&self) -> &str {
        &self.shared.spec.name
    }

    /// The device path or URL, as configured.
    pub(crate) fn device(&self) -> &str {
        &self.shared.spec.device
    }

    /// How the port is opened, with the current line settings.
    pub fn spec(&self) -> PortSpec {
        PortSpec {
            line: self.line_settings(),
            ..self.shared.spec.clone()
        }
    }

    /// Everything the device sent.
    pub fn log(&self) -> &OutputLog {
        self.shared.waiters.log()
    }

    /// The device part: the open device, its state and counters.
    pub(super) fn connection(&self) -> &Connection {
        &self.shared.connection
    }

    /// The line control state (`control.rs`, `baud_detect.rs`).
    pub(super) fn control(&self) -> &ControlSlot {
        self.shared.connection.control()
    }

    /// The transfer part (`transfer_drive.rs`).
    pub(super) fn transfers(&self) -> &Transfers {
        &self.shared.transfers
    }

    /// The current state.
    pub fn state(&self) -> PortState {
        self.shared.connection.state()
    }

    /// A receiver that changes with the state.
    pub fn watch_state(&self) -> watch::Receiver<PortState> {
        self.shared.connection.watch_state()
    }

    /// Waits until the state satisfies `done`, at most `timeout`; returns
    /// the state reached.
    pub async fn wait_for_state(
        &self,
        timeout: Duration,
        done: impl Fn(PortState) -> bool,
    ) -> PortState {
        let mut rx = self.watch_state();
        let reached = tokio::time::timeout(timeout, rx.wait_for(|s| done(*s))).await;
        match reached {
            Ok(Ok(state)) => *state,
            _ => self.state(),
        }
    }

    /// How many times the device was reopened after a loss.
    pub fn reconnects(&self) -> u64 {
        self.shared.connection.reconnects()
    }

    /// Bytes written to the device since the port started.
    pub fn bytes_written(&self) -> u64 {
        self.shared.connection.bytes_written()
    }

    /// The most recent events, oldest first.
    pub fn events(&self) -> Vec<PortEvent> {
        self.shared.events.recent()
    }

    /// Records an event (`status` shows the newest).
    pub(crate) fn record(&self, what: impl Into<String>) {
        self.record_event(what);
    }

    /// Records an event and returns it.
    pub(crate) fn record_event(&self, what: impl Into<String>) -> PortEvent {
        self.shared.events.record(what)
    }

    /// The last time the open device went away (when, and why); `None`
    /// if it never did.
    pub fn last_loss(&self) -> Option<PortEvent> {
        self.shared.connection.last_loss()
    }

    /// Remembers the latest loss of the open device.
    pub(crate) fn set_last_loss(&self, event: PortEvent) {
        self.shared.connection.set_last_loss(event);
    }

    /// Why the port is `down`; `None` unless it is.
    pub fn down_reason(&self) -> Option<String> {
        self.shared.connection.down_reason()
    }

    /// Whether the device was ever open.
    pub fn ever_opened(&self) -> bool {
        self.shared.connection.ever_opened()
    }

    /// Moves the port to `state` (the reader task's, and `down` goes
    /// through [`set_down`](Self::set_down)).
    pub(crate) fn set_state(&self, state: PortState) {
        self.shared.connection.set_state(state);
    }

    /// Marks the port `down`, saying why.
    pub(crate) fn set_down(&self, reason: String) {
        self.shared.connection.set_down(reason);
    }

    /// Cancelled when the port closes.
    pub(crate) fn closing(&self) -> &CancellationToken {
        &self.shared.closing
    }

    /// Counts one reopen after a loss.
    pub(crate) fn count_reconnect(&self) {
        self.shared.connection.count_reconnect();
    }

    /// Installs (or, with `None`, removes) the open device's writer.
    pub(crate) async fn install_writer(&self, writer: Option<DeviceWriter>) {
        self.shared.connection.install_writer(writer).await;
    }

    /// Calls waiting on this port's output right now.
    pub fn active_waits(&self) -> u64 {
        self.shared.waiters.active()
    }

    /// The transcript of this port, with `log_dir`.
    pub fn transcript(&self) -> Option<&Transcript> {
        self.shared.transcript.as_ref()
    }

    /// The current line settings: the configured ones until
    /// `set_line_settings` changes them; a reopen after a loss uses these.
    pub fn line_settings(&self) -> LineSettings {
        self.control().settings()
    }

    /// The RFC 2217 state of the open connection (rfc2217:// ports while
    /// open): what `status` shows of the server's notifications.
    pub fn com_port(&self) -> Option<Arc<ComPortLink>> {
        self.control().com_port()
    }

    /// Whether the device is a remote console (`tcp://`, `telnet://`,
    /// `rfc2217://`).
    pub fn is_remote(&self) -> bool {
        RemoteAddr::is_url(&self.shared.spec.device)
    }

    /// Writes bytes to the device, serialized with every other write to
    /// this port. Fails with `port_lost` when the device is not open and
    /// `timeout` when it does not take the bytes within [`WRITE_TIMEOUT`].
    /// Callers go through [`write_as`](Self::write_as) (sessions) or
    /// [`write`](Self::write) (the gateway), which record the write.
    pub(super) async fn write_unrecorded(&self, bytes: &[u8]) -> Result<(), GateError> {
        match self.shared.connection.write(bytes).await {
            Ok(()) => Ok(()),
            Err(WriteFailure::NotOpen) => Err(self.not_open_error()),
            Err(WriteFailure::Failed(e)) => Err(GateError::new(
                ErrorCode::PortLost,
                format!(
                    "writing to {} failed: {e}; the port is being reopened, check `status` and retry",
                    self.name()
                ),
            )),
            Err(WriteFailure::TimedOut) => Err(GateError::new(
                ErrorCode::Timeout,
                format!(
                    "{} did not take {} bytes within {}s (flow control holding the line?); check the cabling and flow_control",
                    self.name(),
                    bytes.len(),
                    WRITE_TIMEOUT.as_secs()
                ),
            )),
        }
    }

    /// The error for an operation on a port that is not open now.
    pub fn not_open_error(&self) -> GateError {
        let (name, device, why) = (self.name(), self.device(), self.last_event());
        match self.state() {
            PortState::Closed => GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "{name} is closed (the gateway is shutting down, or a config reload removed or changed it); connect again to use the port now configured"
                ),
            ),
            PortState::Down => GateError::new(
                ErrorCode::PortLost,
                format!(
                    "{name} ({device}) is down: {}; it is retried every {}s or when the device reappears; check the cable, the adapter and the device's power, then `status`",
                    self.down_reason().unwrap_or_else(|| why.clone()),
                    DOWN_RETRY.as_secs()
                ),
            ),
            _ if !self.ever_opened() => GateError::new(
                ErrorCode::PortUnavailable,
                format!(
                    "{name} ({device}) could not be opened: {why}; {}; it is retried in the background",
                    if self.is_remote() {
                        "check the address and that the console server listens there"
                    } else {
                        "check the device path, cabling and permissions"
                    }
                ),
            ),
            _ => GateError::new(
                ErrorCode::PortLost,
                format!(
                    "{name} ({device}) is lost: {why}; it is reopened automatically when the device returns, check `status`"
                ),
            ),
        }
    }

    fn last_event(&self) -> String {
        self.shared
            .events
            .last_what()
            .unwrap_or_else(|| "no event yet".to_owned())
    }

    /// Closes the port for good: the reader stops, the device is closed,
    /// and the transcript has everything that arrived.
    pub async fn close(&self) {
        self.shared.closing.cancel();
        let _ = self
            .wait_for_state(Duration::from_secs(5), |s| s == PortState::Closed)
            .await;
        if let Some(t) = &self.shared.transcript {
            let _ = t
                .wait_written(self.log().head(), 0, Duration::from_secs(5))
                .await;
        }
    }
}

/// The hold and the people present (the part is `sharing.rs`).
impl Port {
    /// Who holds the port for writing now.
    pub fn holder(&self) -> Option<Holder> {
        self.shared.sharing.holder()
    }

    /// Makes `actor` the writer when nobody holds the port (or `actor`
    /// already does); otherwise `busy`, naming the holder. With
    /// `take_over` it takes the hold from anyone, unchecked: a session's
    /// take-over goes through [`Port::take_writer`] instead, which asks
    /// who may take it.
    pub fn claim_writer(&self, actor: &Actor, take_over: bool) -> Result<(), GateError> {
        self.take_writer(actor, |holder| match holder {
            Some(h) if !take_over => Err(sharing::busy(self.name(), h)),
            _ => Ok(()),
        })
    }

    /// Makes `actor` the writer if `may_take` allows it, given the current
    /// holder (`None`: the port is free); the other holder becomes
    /// read-only. `may_take` is asked under the hold's lock, so the holder
    /// it judges is the one replaced, and it is not asked when `actor`
    /// already holds the port.
    pub fn take_writer(
        &self,
        actor: &Actor,
        may_take: impl FnOnce(Option<&Holder>) -> Result<(), GateError>,
    ) -> Result<(), GateError> {
        match self.shared.sharing.take(actor, may_take)? {
            Taken::Already => {}
            Taken::From(previous) => self.record(format!(
                "take-over: {} took the write hold from {previous}",
                actor.describe()
            )),
            Taken::Free => self.record(format!("{} holds the port for writing", actor.describe())),
        }
        Ok(())
    }

    /// Lets go of the write hold if `session` has it.
    pub fn release_writer(&self, session: u64) {
        if let Some(h) = self.shared.sharing.release(session) {
            self.record(format!("{} released the write hold", h.who));
        }
    }

    /// Writes for a session: claims the write hold (or fails `busy`),
    /// takes the write's place in the audit trail (or fails `timeout`,
    /// having sent nothing), writes, and records the write in the
    /// transcript and the audit trail (`sensitive` bytes as redacted).
    pub async fn write_as(
        &self,
        actor: &Actor,
        kind: &'static str,
        bytes: &[u8],
        sensitive: bool,
    ) -> Result<(), GateError> {
        self.claim_writer(actor, false)?;
        self.refuse_during_transfer()?;
        let slot = self.reserve_audit().await?;
        self.shared.login_trust.note_write(
            self.shared.spec.prompts.as_ref(),
            self.log(),
            actor,
            kind,
            bytes,
        );
        self.write_unrecorded(bytes).await?;
        if let Some(t) = &self.shared.transcript {
            t.record_sent(SentRecord {
                kind,
                bytes: (!sensitive).then(|| bytes.to_vec()),
                who: actor.person.as_ref().map(|_| actor.describe()),
            });
        }
        slot.record(AuditRecord::now(self.name(), actor, kind, bytes, sensitive));
        Ok(())
    }

    /// Takes a place in the audit trail for an act about to be done on
    /// this port; `timeout` when the trail is too far behind (the act
    /// must then not be done).
    pub async fn reserve_audit(&self) -> Result<AuditSlot, GateError> {
        self.shared
            .audit
            .reserve()
            .await
            .map_err(|e| GateError::new(ErrorCode::Timeout, format!("{}: {e}", self.name())))
    }

    /// What tells the port's prompts apart (its preset's prompt and
    /// modes), for a door that judges what is typed at them.
    pub fn prompts(&self) -> Option<&super::login_trust::PromptJudge> {
        self.shared.spec.prompts.as_ref()
    }

    /// The first write that reached the device's command line rather than
    /// a login prompt, if there was one: while there was, a login prompt
    /// may be a program's, and the stored credentials are not typed.
    pub fn commands_typed(&self) -> Option<super::login_trust::CommandsTyped> {
        self.shared.login_trust.commands_typed()
    }

    /// Records in the audit trail, in the place `slot` took before the
    /// act, that `actor` did `kind` with `bytes` (the bytes a write sent;
    /// empty for a BREAK).
    pub fn audit_as(&self, slot: AuditSlot, actor: &Actor, kind: &str, bytes: &[u8]) {
        slot.record(AuditRecord::now(self.name(), actor, kind, bytes, false));
    }

    /// Records a session's attach, detach or take-over as a port event and
    /// in the audit trail.
    pub fn record_session_event(&self, actor: &Actor, kind: &str) {
        self.record(format!("{} {kind}", actor.describe()));
        self.shared
            .audit
            .record_session(AuditRecord::now(self.name(), actor, kind, b"", false));
    }

    /// Records that `actor`'s write was refused by its command policy
    /// (`why`: the refusal, which names the line, escaped and bounded) as
    /// a port event and in the audit trail, so that attempts leave a trace
    /// as approvals and denials do.
    pub fn record_refusal(&self, actor: &Actor, why: &str) {
        self.record(format!("{} was refused: {why}", actor.describe()));
        self.shared.audit.record_session(AuditRecord::now(
            self.name(),
            actor,
            "policy refusal",
            why.as_bytes(),
            false,
        ));
    }

    /// Records a power action on the port's outlets (`what`: the action,
    /// the outlets and their controllers' answers, or its failure) as a
    /// port event and in the audit trail, as done by `actor`.
    pub fn record_power(&self, actor: &Actor, what: &str) {
        self.record(format!("{} {what}", actor.describe()));
        self.shared.audit.record_session(AuditRecord::now(
            self.name(),
            actor,
            "power",
            what.as_bytes(),
            false,
        ));
    }

    /// Writes for the gateway itself (answers to terminal queries, baud
    /// probes): recorded in the transcript as such, not held by a session.
    pub async fn write(&self, bytes: &[u8]) -> Result<(), GateError> {
        self.refuse_during_transfer()?;
        self.write_unrecorded(bytes).await?;
        if let Some(t) = &self.shared.transcript {
            t.record_sent(SentRecord {
                kind: "gateway",
                bytes: Some(bytes.to_vec()),
                who: None,
            });
        }
        Ok(())
    }

    /// Puts `participant` on the port's list until the guard drops.
    pub fn join(&self, participant: Participant) -> PresenceGuard {
        let session = participant.session;
        self.shared.sharing.join(participant);
        let port = self.clone();
        PresenceGuard::new(move || port.shared.sharing.leave(session))
    }

    /// The people attached now, in the order they came.
    pub fn people(&self) -> Vec<Participant> {
        self.shared.sharing.people()
    }

    /// Changes whenever someone joins or leaves, or the write holder
    /// changes.
    pub fn watch_presence(&self) -> watch::Receiver<u64> {
        self.shared.sharing.watch()
    }
}

/// The transfer under way and the confirm watch (their parts are
/// `transfer.rs` and `confirm_watch.rs`).
impl Port {
    /// The transfer under way, with its progress now.
    pub fn transfer(&self) -> Option<TransferStatus> {
        self.shared.transfers.status()
    }

    /// `busy` while a transfer runs: no other bytes may enter its stream.
    pub(crate) fn refuse_during_transfer(&self) -> Result<(), GateError> {
        self.shared.transfers.refuse(self.name())
    }

    /// Arms the watch for a change `by` committed with `how`, rolling back
    /// after `minutes` unless confirmed; the device's rollback message
    /// (`rolled_back`) is looked for in the output from offset `from`.
    /// Replaces an earlier watch.
    pub fn arm_confirm_watch(
        &self,
        by: &str,
        how: &str,
        minutes: u64,
        rolled_back: Regex,
        from: u64,
    ) -> PendingConfirm {
        let watched = Watched {
            log: self.log().clone(),
            events: self.shared.events.clone(),
            closing: self.shared.closing.clone(),
        };
        self.shared
            .confirm
            .arm(watched, by, how, minutes, rolled_back, from)
    }

    /// Disarms the watch after a confirmation; whether one was armed.
    pub fn disarm_confirm_watch(&self, confirmed_by: &str) -> bool {
        self.shared
            .confirm
            .disarm(&self.shared.events, confirmed_by)
    }

    /// The change awaiting confirmation, if any.
    pub fn pending_confirm(&self) -> Option<PendingConfirm> {
        self.shared.confirm.pending()
    }
}

impl WaitPort for Port {
    fn name(&self) -> &str {
        Port::name(self)
    }

    fn waiters(&self) -> &Waiters {
        &self.shared.waiters
    }

    fn state(&self) -> PortState {
        Port::state(self)
    }

    fn watch_state(&self) -> watch::Receiver<PortState> {
        Port::watch_state(self)
    }

    fn claim_writer(&self, actor: &Actor, take_over: bool) -> Result<(), GateError> {
        Port::claim_writer(self, actor, take_over)
    }

    async fn write_as(
        &self,
        actor: &Actor,
        kind: &'static str,
        bytes: &[u8],
        sensitive: bool,
    ) -> Result<(), GateError> {
        Port::write_as(self, actor, kind, bytes, sensitive).await
    }
}
