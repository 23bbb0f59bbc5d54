//! systemd's readiness protocol (`Type=notify`): one datagram to the socket
//! named by `NOTIFY_SOCKET`, sent after the ports are open and the listener
//! is bound. Without systemd (no `NOTIFY_SOCKET`) it does nothing.

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Sends `state` (e.g. `READY=1`, `RELOADING=1`, `STOPPING=1`) to systemd.
/// Returns `Ok(false)` when not run by systemd.
pub fn notify(state: &str) -> io::Result<bool> {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return Ok(false);
    };
    let path = path.to_string_lossy().into_owned();
    let addr = match path.strip_prefix('@') {
        // An abstract socket (systemd's usual choice).
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes())?,
        None => SocketAddr::from_pathname(&path)?,
    };
    let socket = UnixDatagram::unbound()?;
    socket.send_to_addr(state.as_bytes(), &addr)?;
    Ok(true)
}

/// The interval systemd's watchdog expects pings at (`WatchdogSec=` sets
/// `WATCHDOG_USEC`, and `WATCHDOG_PID` when set must be this process);
/// `None` without a watchdog.
pub fn watchdog_interval() -> Option<std::time::Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.trim().parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID")
        && pid.trim().parse::<u32>().ok() != Some(std::process::id())
    {
        return None;
    }
    (usec > 0).then(|| std::time::Duration::from_micros(usec))
}

/// With a systemd watchdog, pings `WATCHDOG=1` at half its interval from
/// a task of the daemon's runtime, for the daemon's life: a runtime that
/// stops running tasks stops the pings and systemd restarts the unit. Once
/// only (after the first `READY=1`).
pub fn start_watchdog() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    let Some(interval) = watchdog_interval() else {
        return;
    };
    STARTED.call_once(|| {
        tracing::info!("systemd watchdog: pinging every {:?}", interval / 2);
        crate::task::spawn(async move {
            let mut tick = tokio::time::interval(interval / 2);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                notify_or_warn("WATCHDOG=1");
            }
        });
    });
}

/// Logs instead of failing: readiness is advisory for the daemon itself.
pub fn notify_or_warn(state: &str) {
    if let Err(e) = notify(state) {
        tracing::warn!("could not tell systemd {state:?}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_the_state_to_the_socket_systemd_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        // SAFETY of set_var: this is the only test that touches NOTIFY_SOCKET.
        unsafe { std::env::set_var("NOTIFY_SOCKET", &path) };
        assert!(notify("READY=1").unwrap());
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        unsafe { std::env::remove_var("NOTIFY_SOCKET") };
        assert!(!notify("READY=1").unwrap());
    }
}
