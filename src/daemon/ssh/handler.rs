//! One SSH connection's handler: public-key authentication of a
//! `[[people]]` entry, and the refusal of everything the door does not
//! do. A person gets one session channel, a terminal and the console of a
//! port ([`super::terminal`]); port forwarding (local, remote, dynamic),
//! agent and X11 forwarding, subsystems (sftp), exec of anything but a
//! port name and environment variables beyond `TERM` and `LANG` are
//! refused and logged. The terminal's size (pty-req, window-change) and a
//! BREAK (RFC 4335 `break`, OpenSSH's `~B`) are passed on to the console
//! ([`super::terminal::Requests`]). What the person may do once in is
//! asked of [`crate::access`], never decided here.

use std::net::{IpAddr, Ipv4Addr};

use russh::keys::PublicKey;
use russh::server::{Auth, ChannelOpenHandle, Msg, PublicKeyOffer, Session, VerifiedPublicKey};
use russh::{ChannelId, ChannelOpenFailure, MethodKind, MethodSet};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::limits::{Admission, Crowded, Gate, PersonSlot};
use super::target::{Login, parse_exec, parse_user};
use super::terminal::{self, Requests, Start, WindowSize};
use crate::access::Caller;
use crate::error::shown;
use crate::gateway::Gateway;

/// Environment variables a client may set: what a terminal needs.
const ALLOWED_ENV: [&str; 2] = ["TERM", "LANG"];

/// Who authenticated on a connection.
struct SignedIn {
    login: Login,
    caller: Caller,
    key: PublicKey,
    /// Its place among the person's connections; `Err` when they (or the
    /// people of their access) held their share already, and this one
    /// may only be told so.
    slot: Result<PersonSlot, Crowded>,
}

/// One SSH connection.
pub struct Connection {
    gateway: Gateway,
    gate: Gate,
    peer: IpAddr,
    admission: Option<Admission>,
    shutdown: CancellationToken,
    signed_in: Option<SignedIn>,
    /// The session channel, once opened: keys and requests go to its task.
    channel: Option<ChannelId>,
    /// Tells the session task how to start (shell or exec), once.
    start: Option<tokio::sync::oneshot::Sender<Start>>,
    /// The terminal's size as the client last said, for the session task.
    size: watch::Sender<WindowSize>,
    /// BREAKs asked for on the session channel (their length in ms), for
    /// the session task.
    breaks: Option<mpsc::Sender<u32>>,
}

impl Connection {
    /// A connection from `peer`, counted among the unauthenticated until
    /// it authenticates.
    pub fn new(
        gateway: Gateway,
        gate: Gate,
        peer: Option<std::net::SocketAddr>,
        admission: Admission,
        shutdown: CancellationToken,
    ) -> Connection {
        Connection {
            gateway,
            gate,
            peer: peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.ip()),
            admission: Some(admission),
            shutdown,
            signed_in: None,
            channel: None,
            start: None,
            size: watch::Sender::new(WindowSize::default()),
            breaks: None,
        }
    }

    /// The methods offered: public keys only.
    pub fn methods() -> MethodSet {
        MethodSet::from(&[MethodKind::PublicKey][..])
    }

    fn reject() -> Auth {
        Auth::Reject {
            proceed_with_methods: Some(Connection::methods()),
            partial_success: false,
        }
    }

    /// The person `user` names and whether `key` is one of theirs.
    fn person_key(&self, user: &str, key: &PublicKey) -> Option<(Login, Caller)> {
        let login = parse_user(user).ok()?;
        let config = self.gateway.config();
        let person = config.people.iter().find(|p| p.name == login.person)?;
        person
            .has_key(key)
            .then(|| (login.clone(), Caller::from_person(person)))
    }

    fn refused(&self, what: &str) {
        let who = self.signed_in.as_ref().map_or_else(
            || "someone".to_owned(),
            |s| format!("person {:?}", s.caller.name),
        );
        tracing::warn!(peer = %self.peer, "ssh: refused {what} for {who}: this door only attaches to ports");
    }

    /// Refuses a request on `channel` that wants a reply.
    fn fail(
        &self,
        channel: ChannelId,
        session: &mut Session,
        what: &str,
    ) -> Result<(), russh::Error> {
        self.refused(what);
        session.channel_failure(channel)
    }

    /// A rejection, or the end of the connection once its address or
    /// user is held for failures.
    fn unless_held(&self, user: &str) -> Result<Auth, russh::Error> {
        if self.gate.held(self.peer, user).is_some() {
            return Err(russh::Error::Disconnect);
        }
        Ok(Connection::reject())
    }

    /// Whether `channel` is the session channel of this connection.
    fn ours(&self, channel: ChannelId) -> bool {
        self.channel == Some(channel)
    }

    /// The terminal is `cols` by `rows` now.
    fn resized(&self, cols: u32, rows: u32) {
        let size = WindowSize { cols, rows };
        tracing::debug!(peer = %self.peer, "ssh: the terminal is {cols}x{rows}");
        self.size.send_replace(size);
    }

    /// Hands the session task how to start; a second shell or exec is refused.
    fn begin(
        &mut self,
        channel: ChannelId,
        start: Start,
        session: &mut Session,
    ) -> Result<(), russh::Error> {
        let start = match &self.signed_in {
            Some(SignedIn {
                slot: Err(crowded), ..
            }) => Start::Refused(crowded.message()),
            _ => start,
        };
        match self.start.take() {
            Some(tx) if self.ours(channel) => {
                let _ = tx.send(start);
                session.channel_success(channel)
            }
            _ => self.fail(channel, session, "a second shell or command on one channel"),
        }
    }
}

impl russh::server::Handler for Connection {
    type Error = russh::Error;

    async fn auth_none(&mut self, user: &str) -> Result<Auth, Self::Error> {
        tracing::debug!(peer = %self.peer, user = %shown(user), "ssh: asked for the methods");
        Ok(Connection::reject())
    }

    async fn auth_password(&mut self, user: &str, _password: &str) -> Result<Auth, Self::Error> {
        self.refused(&format!("password authentication (as {})", shown(user)));
        self.gate.failed(self.peer, user);
        self.unless_held(user)
    }

    async fn auth_keyboard_interactive<'a>(
        &'a mut self,
        user: &str,
        _submethods: &str,
        _response: Option<russh::server::Response<'a>>,
    ) -> Result<Auth, Self::Error> {
        self.refused(&format!(
            "keyboard-interactive authentication (as {})",
            shown(user)
        ));
        self.gate.failed(self.peer, user);
        self.unless_held(user)
    }

    async fn auth_publickey_offered(
        &mut self,
        user: &str,
        offer: PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        if self.person_key(user, offer.public_key).is_some() {
            // Theirs: always checked, held or not (see `limits`).
            return Ok(Auth::Accept);
        }
        if let Some(held) = self.gate.held(self.peer, user) {
            tracing::warn!(
                peer = %self.peer,
                user = %shown(user),
                "ssh: too many failed attempts; refusing keys for {} s and closing the connection",
                held.seconds()
            );
            self.gate.failed(self.peer, user);
            // Held: no more tries on this connection.
            return Err(russh::Error::Disconnect);
        } else {
            tracing::info!(peer = %self.peer, user = %shown(user), "ssh: a key that is not this person's was refused");
        }
        self.gate.failed(self.peer, user);
        Ok(Connection::reject())
    }

    async fn auth_publickey(
        &mut self,
        user: &str,
        key: VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        let Some((login, caller)) = self.person_key(user, key.public_key) else {
            self.gate.failed(self.peer, user);
            return Ok(Connection::reject());
        };
        tracing::info!(
            peer = %self.peer,
            person = %caller.name,
            key = %key.public_key.fingerprint(russh::keys::HashAlg::Sha256),
            "ssh: person signed in"
        );
        let slot = self.gate.sign_in(&caller.name, caller.access);
        match (&slot, &self.admission) {
            (Ok(_), _) => {
                if let Some(admission) = self.admission.take() {
                    admission.authenticated();
                }
            }
            // Still among the unauthenticated: closed at their deadline,
            // or sooner to make room, and told why either way.
            (Err(crowded), Some(admission)) => {
                match crowded {
                    Crowded::Person => tracing::warn!(
                        peer = %self.peer,
                        person = %caller.name,
                        "ssh: person holds {} connections already; this one is refused",
                        super::limits::MAX_PER_PERSON
                    ),
                    Crowded::Access { access, share } => tracing::warn!(
                        peer = %self.peer,
                        person = %caller.name,
                        "ssh: the people of {} access hold {share} connections already; this one is refused",
                        access.name()
                    ),
                }
                admission.over_cap.refuse(*crowded);
            }
            (Err(_), None) => {}
        }
        self.signed_in = Some(SignedIn {
            login,
            caller,
            key: key.public_key.clone(),
            slot,
        });
        Ok(Auth::Accept)
    }

    async fn channel_open_session(
        &mut self,
        channel: russh::Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        let Some(signed_in) = &self.signed_in else {
            reply
                .reject(ChannelOpenFailure::AdministrativelyProhibited)
                .await;
            return Ok(());
        };
        if self.channel.is_some() {
            self.refused("a second session on one connection");
            reply
                .reject(ChannelOpenFailure::AdministrativelyProhibited)
                .await;
            return Ok(());
        }
        let (start_tx, start_rx) = tokio::sync::oneshot::channel();
        let (breaks_tx, breaks_rx) = mpsc::channel(terminal::PENDING_BREAKS);
        self.channel = Some(channel.id());
        self.start = Some(start_tx);
        self.breaks = Some(breaks_tx);
        let requests = Requests {
            start: start_rx,
            size: self.size.subscribe(),
            breaks: breaks_rx,
        };
        reply.accept().await;
        crate::task::spawn(terminal::run(
            self.gateway.clone(),
            signed_in.caller.clone(),
            signed_in.key.clone(),
            signed_in.login.port.clone(),
            channel,
            requests,
            self.shutdown.clone(),
        ));
        Ok(())
    }

    async fn channel_open_direct_tcpip(
        &mut self,
        _channel: russh::Channel<Msg>,
        host: &str,
        port: u32,
        _originator: &str,
        _originator_port: u32,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.refused(&format!(
            "port forwarding to {}:{port} (ssh -L, -D or -W)",
            shown(host)
        ));
        reply
            .reject(ChannelOpenFailure::AdministrativelyProhibited)
            .await;
        Ok(())
    }

    async fn channel_open_direct_streamlocal(
        &mut self,
        _channel: russh::Channel<Msg>,
        path: &str,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.refused(&format!("forwarding to the socket {}", shown(path)));
        reply
            .reject(ChannelOpenFailure::AdministrativelyProhibited)
            .await;
        Ok(())
    }

    async fn channel_open_x11(
        &mut self,
        _channel: russh::Channel<Msg>,
        _address: &str,
        _port: u32,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.refused("an X11 channel");
        reply
            .reject(ChannelOpenFailure::AdministrativelyProhibited)
            .await;
        Ok(())
    }

    async fn channel_open_forwarded_tcpip(
        &mut self,
        _channel: russh::Channel<Msg>,
        _host: &str,
        _port: u32,
        _originator: &str,
        _originator_port: u32,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.refused("a forwarded-tcpip channel");
        reply
            .reject(ChannelOpenFailure::AdministrativelyProhibited)
            .await;
        Ok(())
    }

    async fn tcpip_forward(
        &mut self,
        address: &str,
        port: &mut u32,
        _session: &mut Session,
    ) -> Result<bool, Self::Error> {
        self.refused(&format!(
            "remote port forwarding of {}:{port} (ssh -R)",
            shown(address)
        ));
        Ok(false)
    }

    async fn streamlocal_forward(
        &mut self,
        path: &str,
        _session: &mut Session,
    ) -> Result<bool, Self::Error> {
        self.refused(&format!("remote forwarding of the socket {}", shown(path)));
        Ok(false)
    }

    async fn agent_request(
        &mut self,
        _channel: ChannelId,
        _session: &mut Session,
    ) -> Result<bool, Self::Error> {
        self.refused("agent forwarding (ssh -A)");
        Ok(false)
    }

    async fn x11_request(
        &mut self,
        channel: ChannelId,
        _single: bool,
        _protocol: &str,
        _cookie: &str,
        _screen: u32,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.fail(channel, session, "X11 forwarding (ssh -X)")
    }

    async fn env_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        _value: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        if ALLOWED_ENV.contains(&name) && self.ours(channel) {
            return session.channel_success(channel);
        }
        self.fail(
            channel,
            session,
            &format!("the environment variable {}", shown(name)),
        )
    }

    async fn pty_request(
        &mut self,
        channel: ChannelId,
        _term: &str,
        cols: u32,
        rows: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(russh::Pty, u32)],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        if self.ours(channel) {
            self.resized(cols, rows);
            return session.channel_success(channel);
        }
        self.fail(channel, session, "a terminal on another channel")
    }

    async fn window_change_request(
        &mut self,
        channel: ChannelId,
        cols: u32,
        rows: u32,
        _pix_width: u32,
        _pix_height: u32,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        // No reply: the request never wants one.
        if self.ours(channel) {
            self.resized(cols, rows);
        }
        Ok(())
    }

    async fn break_request(
        &mut self,
        channel: ChannelId,
        length_ms: u32,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let passed = self.ours(channel)
            && self
                .breaks
                .as_ref()
                .is_some_and(|breaks| breaks.try_send(length_ms).is_ok());
        if passed {
            return session.channel_success(channel);
        }
        tracing::info!(peer = %self.peer, "ssh: a BREAK was not sent: no console on the channel takes it yet, or BREAKs are already waiting");
        session.channel_failure(channel)
    }

    async fn shell_request(
        &mut self,
        channel: ChannelId,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.begin(channel, Start::Shell, session)
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        match parse_exec(data) {
            Ok(request) => self.begin(channel, Start::Port(request), session),
            Err(why) => {
                let command = String::from_utf8_lossy(data);
                self.fail(
                    channel,
                    session,
                    &format!("the command {} ({why})", shown(&command)),
                )?;
                if let Some(tx) = self.start.take() {
                    let _ = tx.send(Start::Refused(why));
                }
                Ok(())
            }
        }
    }

    async fn subsystem_request(
        &mut self,
        channel: ChannelId,
        name: &str,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.fail(
            channel,
            session,
            &format!("the subsystem {} (sftp, scp -s)", shown(name)),
        )?;
        if let Some(tx) = self.start.take() {
            let _ = tx.send(Start::Refused(format!(
                "the subsystem {} is not served: this door only attaches to ports",
                shown(name)
            )));
        }
        Ok(())
    }
}
