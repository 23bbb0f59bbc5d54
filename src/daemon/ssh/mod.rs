//! The SSH door: engineers (`[[people]]`) reach every port with their own
//! `ssh`, as they reach a console server's (`ssh alice:sw1@host`). The
//! module map:
//!
//! - [`host_key`]: the gateway's Ed25519 host key, made once in `state_dir`;
//! - `limits`: connection caps, the deadline to authenticate, failed
//!   attempts throttled by address and by user;
//! - `handler`: one connection: public-key authentication, the refusal
//!   of everything but a terminal on a port, and the terminal's size and
//!   BREAKs passed on to it;
//! - `target`: the port a user name or a command asks for;
//! - `terminal`: the port menu and a port's console, the attach protocol
//!   read through the console client's own session.
//!
//! Who may do what is asked of `crate::access` (a person is a
//! [`crate::access::Caller`] with a standing re-checked at every reload).

mod handler;
pub mod host_key;
mod limits;
mod target;
mod terminal;

use std::sync::Arc;
use std::time::Duration;

use russh::server::{Config as SshConfig, run_stream};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::gateway::Gateway;

/// How long to wait after a failed accept (e.g. no file descriptors left).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How long a closed connection is given to say goodbye.
const GOODBYE: Duration = Duration::from_secs(2);
/// A quiet peer is asked whether it is there this often; three unanswered
/// asks close the connection (a watched console may be quiet for hours,
/// so there is no idle timeout).
const KEEPALIVE: Duration = Duration::from_secs(60);

/// Binds `[server] ssh_listen` and serves the SSH door on it until
/// `shutdown`; prints `ssh at ADDR (host key SHA256:...)` to stderr once
/// bound. Nothing to do without one; a host key or address that fails
/// stops the start, with the reason.
pub(crate) async fn start(gateway: &Gateway, shutdown: &CancellationToken) -> anyhow::Result<()> {
    let config = gateway.config();
    let Some(listen) = &config.server.ssh_listen else {
        return Ok(());
    };
    let Some(state_dir) = &config.server.state_dir else {
        anyhow::bail!("ssh_listen needs [server] state_dir for the SSH host key");
    };
    let key = host_key::load_or_create(state_dir).map_err(anyhow::Error::msg)?;
    let fingerprint = host_key::fingerprint(&key);
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen for SSH on {listen}: {e}"))?;
    let local = listener.local_addr()?;
    let ssh = Arc::new(SshConfig {
        methods: handler::Connection::methods(),
        keys: vec![key],
        auth_rejection_time: Duration::from_millis(500),
        auth_rejection_time_initial: Some(Duration::ZERO),
        max_auth_attempts: 6,
        inactivity_timeout: None,
        keepalive_interval: Some(KEEPALIVE),
        keepalive_max: 3,
        nodelay: true,
        ..SshConfig::default()
    });
    eprintln!("serialgate: ssh at {local} (host key {fingerprint})");
    tracing::info!(
        "SSH door at {local}, host key {fingerprint}, {} person(s); at most {} connections, {} not yet authenticated, {} per person, {} for people of read access together, {} with write, {:?} to authenticate",
        config.people.len(),
        limits::MAX_CONNECTIONS,
        limits::MAX_UNAUTHENTICATED,
        limits::MAX_PER_PERSON,
        crate::config::TokenAccess::Read.share_of(limits::SIGNED_IN_ROOM),
        crate::config::TokenAccess::Write.share_of(limits::SIGNED_IN_ROOM),
        limits::AUTH_DEADLINE
    );
    crate::task::spawn(accept(listener, ssh, gateway.clone(), shutdown.clone()));
    Ok(())
}

/// Accepts connections under the caps until `shutdown`.
async fn accept(
    listener: TcpListener,
    ssh: Arc<SshConfig>,
    gateway: Gateway,
    shutdown: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits::MAX_CONNECTIONS));
    let gate = limits::Gate::default();
    let mut refused: u64 = 0;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("ssh: accept failed: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refused += 1;
            if refused % 1000 == 1 {
                tracing::warn!(
                    "ssh: {} connections are open; refused {refused} so far",
                    limits::MAX_CONNECTIONS
                );
            }
            continue;
        };
        let admission = gate.admit();
        let evicted = admission.evicted.clone();
        let signed_in = admission.signed_in.clone();
        let over_cap = admission.over_cap.clone();
        let handler = handler::Connection::new(
            gateway.clone(),
            gate.clone(),
            Some(peer),
            admission,
            shutdown.clone(),
        );
        let ssh = ssh.clone();
        let shutdown = shutdown.clone();
        crate::task::spawn(async move {
            serve(ssh, stream, handler, evicted, signed_in, over_cap, shutdown).await;
            drop(slot);
        });
    }
}

/// Runs one connection: closed when it does not authenticate within
/// [`limits::AUTH_DEADLINE`] or a newer one takes its place among the
/// unauthenticated (as is one whose person, or the people of their
/// access, hold their share of the door already: `over_cap`).
async fn serve(
    ssh: Arc<SshConfig>,
    stream: tokio::net::TcpStream,
    handler: handler::Connection,
    evicted: CancellationToken,
    signed_in: CancellationToken,
    over_cap: limits::OverCap,
    shutdown: CancellationToken,
) {
    // A person over their share is told so, however it ends.
    let unless_over_cap = |why: String| over_cap.message().unwrap_or(why);
    let deadline = tokio::time::Instant::now() + limits::AUTH_DEADLINE;
    // The session first: its first step sends the door's version, which a
    // connection evicted before it was ever polled (many arriving at
    // once, a loaded machine) would otherwise close without.
    let started = tokio::select! {
        biased;
        started = run_stream(ssh, stream, handler) => started,
        () = tokio::time::sleep_until(deadline) => return,
        () = evicted.cancelled() => return,
    };
    let Ok(mut running) = started else {
        return;
    };
    let why = tokio::select! {
        _ = &mut running => return,
        () = tokio::time::sleep_until(deadline), if !signed_in.is_cancelled() => {
            unless_over_cap(format!("not authenticated within {} s", limits::AUTH_DEADLINE.as_secs()))
        }
        () = evicted.cancelled(), if !signed_in.is_cancelled() => {
            unless_over_cap("too many connections are waiting to authenticate".to_owned())
        }
        () = signed_in.cancelled() => {
            tokio::select! {
                _ = &mut running => return,
                () = shutdown.cancelled() => "the gateway is shutting down".to_owned(),
            }
        }
    };
    let handle = running.handle();
    let _ = handle
        .disconnect(russh::Disconnect::ByApplication, why, String::new())
        .await;
    let _ = tokio::time::timeout(GOODBYE, running).await;
}
