//! The NUT network protocol (RFC 9271) to a `upsd`: one connection per
//! action, one line out and one line back per exchange, each line read
//! bounded and each exchange under the controller's deadline.
//!
//! An outlet's state is `GET VAR <ups> outlet.N.status`; switching it is
//! `INSTCMD <ups> outlet.N.load.on|off`, after `USERNAME` and `PASSWORD`
//! when the config names a user (upsd checks them at the command).

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::driver::{DriverError, OutletState, PowerDriver};
use crate::error::label;

/// Longest answer line read: NUT's lines are short; more is a broken peer.
const MAX_LINE: u64 = 1024;

/// A NUT server and the device on it whose outlets are switched.
pub struct Nut {
    /// `host:port`.
    pub address: String,
    /// The device's name on the server.
    pub ups: String,
    /// The user and password upsd knows, if the config names them.
    pub login: Option<(String, String)>,
    /// How long each exchange (and the connect) may take.
    pub deadline: Duration,
}

/// One connection to the server.
struct Conn {
    stream: BufReader<TcpStream>,
    deadline: Duration,
}

impl Conn {
    /// Sends `line` and reads the answer line, under the deadline.
    async fn exchange(&mut self, line: &str) -> Result<String, DriverError> {
        let deadline = self.deadline;
        tokio::time::timeout(deadline, async {
            self.stream
                .get_mut()
                .write_all(format!("{line}\n").as_bytes())
                .await
                .map_err(|e| DriverError::Unreachable(format!("writing to it failed: {e}")))?;
            let mut answer = Vec::new();
            let n = (&mut self.stream)
                .take(MAX_LINE)
                .read_until(b'\n', &mut answer)
                .await
                .map_err(|e| DriverError::Unreachable(format!("reading from it failed: {e}")))?;
            if n == 0 {
                return Err(DriverError::Unreachable(
                    "it closed the connection without an answer".into(),
                ));
            }
            if !answer.ends_with(b"\n") {
                return Err(DriverError::Unreachable(format!(
                    "its answer is longer than {MAX_LINE} bytes: is this a NUT server?"
                )));
            }
            Ok(String::from_utf8_lossy(&answer).trim().to_owned())
        })
        .await
        .map_err(|_| DriverError::Deadline(deadline))?
    }

    /// [`exchange`](Self::exchange), with an `ERR` answer as a refusal.
    async fn ok(&mut self, line: &str, what: &str) -> Result<String, DriverError> {
        let answer = self.exchange(line).await?;
        if answer.starts_with("ERR") {
            return Err(DriverError::Refused(format!("{what}: {}", label(&answer))));
        }
        Ok(answer)
    }
}

impl Nut {
    /// Connects under the deadline.
    async fn connect(&self) -> Result<Conn, DriverError> {
        let stream = tokio::time::timeout(self.deadline, TcpStream::connect(&self.address))
            .await
            .map_err(|_| DriverError::Deadline(self.deadline))?
            .map_err(|e| DriverError::Unreachable(e.to_string()))?;
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            stream: BufReader::new(stream),
            deadline: self.deadline,
        })
    }

    /// Says goodbye; a server that does not answer it is left as it is.
    async fn logout(mut conn: Conn) {
        let _ = conn.exchange("LOGOUT").await;
    }
}

impl PowerDriver for Nut {
    async fn state(&self, outlet: &str) -> Result<OutletState, DriverError> {
        let mut conn = self.connect().await?;
        let var = format!("outlet.{outlet}.status");
        let answer = conn
            .ok(
                &format!("GET VAR {} {var}", self.ups),
                &format!("GET VAR {var}"),
            )
            .await?;
        Nut::logout(conn).await;
        let prefix = format!("VAR {} {var} ", self.ups);
        let value = answer
            .strip_prefix(&prefix)
            .map(|v| v.trim_matches('"'))
            .ok_or_else(|| {
                DriverError::Unreachable(format!("it answered GET VAR with {:?}", label(&answer)))
            })?;
        Ok(match value.to_ascii_lowercase().as_str() {
            "on" => OutletState::On,
            "off" => OutletState::Off,
            _ => OutletState::Other(label(value)),
        })
    }

    async fn switch(&self, outlet: &str, on: bool) -> Result<String, DriverError> {
        let mut conn = self.connect().await?;
        if let Some((user, password)) = &self.login {
            conn.ok(&format!("USERNAME {user}"), "USERNAME").await?;
            conn.ok(&format!("PASSWORD \"{password}\""), "PASSWORD")
                .await?;
        }
        let command = format!("outlet.{outlet}.load.{}", if on { "on" } else { "off" });
        let answer = conn
            .ok(
                &format!("INSTCMD {} {command}", self.ups),
                &format!("INSTCMD {command}"),
            )
            .await?;
        Nut::logout(conn).await;
        Ok(format!("INSTCMD {command}: {}", label(&answer)))
    }
}
