//! The reader task of one port: opens the device, appends everything it
//! reads to the OutputLog, and on a loss reopens the same path with backoff.
//! A remote console is the same: a connection that drops or is refused is
//! a loss, retried with the same backoff (never in a hot loop).

use std::time::Duration;

use tokio::time::Instant;

use super::{Port, PortState, device};

/// First wait before reopening a lost device.
pub const BACKOFF_START: Duration = Duration::from_millis(100);
/// Longest wait between reopen attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Runs until the port is closed.
pub(super) async fn run(port: Port) {
    let mut backoff = BACKOFF_START;
    let mut first = true;
    loop {
        if port.closing().is_cancelled() {
            break;
        }
        let device = port.spec().device;
        // The current line settings: a reopen after a loss uses what
        // `set_line_settings` last set, not only what the config said.
        match port.open_with_control().await {
            Ok((mut reader, writer, line)) => {
                port.install_writer(Some(writer)).await;
                if !first {
                    port.count_reconnect();
                }
                port.record(format!("opened {device} at {line}"));
                port.set_state(PortState::Open);
                if port.com_port().is_some() {
                    // rfc2217://: the line behind the console server gets
                    // the port's settings once the server agrees.
                    port.start_line_setup();
                }
                backoff = BACKOFF_START;
                let why = read_until_lost(&port, &mut reader).await;
                port.install_writer(None).await;
                match why {
                    None => break, // closing
                    Some(why) => {
                        port.record(format!("lost {device}: {why}"));
                        port.set_state(PortState::Lost);
                    }
                }
                // After the state: waiters hear of the loss even while a
                // pulse or BREAK still holds the control handle.
                port.drop_control().await;
            }
            Err(e) => {
                port.record(format!("cannot open {device}: {e}"));
                port.set_state(PortState::Lost);
            }
        }
        first = false;
        // Backoff: a timer between attempts, not a poll for data.
        let retry_at = Instant::now() + backoff;
        tokio::select! {
            _ = port.closing().cancelled() => break,
            _ = tokio::time::sleep_until(retry_at) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
        port.set_state(PortState::Reopening);
    }
    port.install_writer(None).await;
    port.drop_control().await;
    port.set_state(PortState::Closed);
    port.record("closed");
}

/// Reads until the device is lost (returns why) or the port closes (None).
async fn read_until_lost(port: &Port, reader: &mut device::DeviceReader) -> Option<String> {
    let eof = if port.is_remote() {
        "the console server closed the connection"
    } else {
        "end of file (device unplugged or closed)"
    };
    let log = port.log();
    let mut append = |data: &[u8]| log.append(data);
    loop {
        let read = tokio::select! {
            _ = port.closing().cancelled() => return None,
            read = reader.read_data(&mut append) => read,
        };
        match read {
            // A closed pty master, an unplugged adapter, or a remote
            // console that hung up: end of file.
            Ok(0) => return Some(eof.to_owned()),
            // The data is in the log already (telnet negotiation alone
            // carried none).
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Some(e.to_string()),
        }
    }
}
