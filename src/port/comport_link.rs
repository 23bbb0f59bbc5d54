//! The COM-PORT-OPTION state of one `rfc2217://` connection (RFC 2217,
//! codec in [`crate::remote::rfc2217`]): whether the server agreed to the
//! option, and what it answered and notified. The reader task feeds it
//! what the server says; the port's control handle (`comport.rs`) waits on
//! it for answers, and `status` shows it.

use tokio::sync::watch;

use crate::remote::rfc2217::{
    ComPort, Command, LINESTATE_MASK, MODEMSTATE_MASK, OPT_COM_PORT, RemoteLineState,
    RemoteModemState,
};
use crate::remote::telnet::Telnet;

/// Where the COM-PORT-OPTION negotiation of a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Negotiation {
    /// WILL sent, no answer yet.
    Pending,
    /// The server said DO: commands may go.
    Agreed,
    /// The server said DONT: it has no RFC 2217 (a plain telnet port).
    Refused,
}

impl Negotiation {
    /// The state's name, as `status` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Negotiation::Pending => "pending",
            Negotiation::Agreed => "agreed",
            Negotiation::Refused => "refused",
        }
    }
}

/// What one connection knows of the server's COM-PORT-OPTION side.
#[derive(Debug, Clone)]
pub struct ComPortView {
    /// The option's negotiation.
    pub negotiation: Negotiation,
    /// Answers and notifications received.
    pub com: ComPort,
}

/// A connection's COM-PORT-OPTION state, shared by its reader (which
/// updates it) and its control handle and `status` (which read it). A
/// `watch` channel, so a waiting command wakes on each answer.
#[derive(Debug)]
pub struct ComPortLink {
    view: watch::Sender<ComPortView>,
}

impl Default for ComPortLink {
    fn default() -> Self {
        ComPortLink::new()
    }
}

impl ComPortLink {
    /// A connection whose WILL COM-PORT-OPTION was just sent.
    pub fn new() -> ComPortLink {
        let (view, _) = watch::channel(ComPortView {
            negotiation: Negotiation::Pending,
            com: ComPort::default(),
        });
        ComPortLink { view }
    }

    /// Takes in what the reader's telnet state received: the option's
    /// negotiation and subnegotiations. When the server has just agreed,
    /// appends the masks that ask for modem and line state notifications
    /// to `replies` (sent by the reader with its negotiation replies).
    pub(super) fn update(&self, telnet: &mut Telnet, replies: &mut Vec<u8>) {
        let subs = telnet.take_subnegotiations();
        let negotiation = if telnet.local_enabled(OPT_COM_PORT) {
            Negotiation::Agreed
        } else if telnet.local_pending(OPT_COM_PORT) {
            Negotiation::Pending
        } else {
            Negotiation::Refused
        };
        let mut agreed_now = false;
        self.view.send_if_modified(|v| {
            let changed = v.negotiation != negotiation || !subs.is_empty();
            agreed_now = v.negotiation != negotiation && negotiation == Negotiation::Agreed;
            v.negotiation = negotiation;
            v.com.receive_all(subs);
            changed
        });
        if agreed_now {
            for mask in [
                Command::SetModemstateMask(MODEMSTATE_MASK),
                Command::SetLinestateMask(LINESTATE_MASK),
            ] {
                // Masks never fail to encode (only a Cisco rate can).
                let _ = mask.encode(false, replies);
            }
        }
    }

    /// A receiver that wakes on each change: what a command waits on
    /// for its answer.
    pub(super) fn subscribe(&self) -> watch::Receiver<ComPortView> {
        self.view.subscribe()
    }

    /// A copy of what the connection knows now.
    pub fn view(&self) -> ComPortView {
        self.view.borrow().clone()
    }

    /// The modem lines the server last notified, if it did.
    pub fn modem_state(&self) -> Option<RemoteModemState> {
        self.view
            .borrow()
            .com
            .modem_state
            .map(RemoteModemState::from_bits)
    }

    /// The line conditions the server last notified, if it did.
    pub fn line_state(&self) -> Option<RemoteLineState> {
        self.view
            .borrow()
            .com
            .line_state
            .map(RemoteLineState::from_bits)
    }
}
