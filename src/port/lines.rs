//! The line-control types the port and its devices share: [`LineControl`],
//! what a port's line control needs from an open device, and the modem
//! lines it reads and sets ([`ModemLine`], [`ModemStatus`]).
//!
//! The real implementations of the trait are `device::DeviceControl`, a
//! second descriptor on the open tty (see `device.rs` for why a duplicate
//! and how it keeps `TIOCEXCL`), and `comport::ComPortControl`, the
//! COM-PORT-OPTION side of an `rfc2217://` console server's connection;
//! unit tests use a fake that records calls. Operations return futures
//! because a console server answers over the network.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::comport_link::ComPortLink;
use crate::settings::LineSettings;

/// A modem control output line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModemLine {
    /// Data Terminal Ready.
    Dtr,
    /// Request To Send.
    Rts,
}

impl ModemLine {
    /// The line's usual name, e.g. `DTR`.
    pub fn label(self) -> &'static str {
        match self {
            ModemLine::Dtr => "DTR",
            ModemLine::Rts => "RTS",
        }
    }
}

/// The modem control lines of a serial port, as the driver reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ModemStatus {
    /// Data Terminal Ready (output).
    pub dtr: bool,
    /// Request To Send (output).
    pub rts: bool,
    /// Clear To Send (input).
    pub cts: bool,
    /// Data Set Ready (input).
    pub dsr: bool,
    /// Carrier Detect (input).
    pub cd: bool,
    /// Ring Indicator (input).
    pub ri: bool,
}

/// What a [`LineControl`] operation returns: a boxed future, so that the
/// trait stays object-safe while an RFC 2217 console server is asked over
/// the network (a local tty answers at once, with a ready future).
pub type ControlFuture<'a, T> = Pin<Box<dyn Future<Output = io::Result<T>> + Send + 'a>>;

/// What a port's line control needs from the device. Implemented by the
/// open serial device, by an RFC 2217 console server's connection
/// (`comport.rs`) and, in tests, by a fake that records calls.
pub trait LineControl: Send {
    /// Starts (`true`) or ends (`false`) a BREAK condition on the line.
    fn set_break(&mut self, on: bool) -> ControlFuture<'_, ()>;
    /// Sets a modem control output line.
    fn write_line(&mut self, line: ModemLine, level: bool) -> ControlFuture<'_, ()>;
    /// Reads every modem control line.
    fn modem_status(&mut self) -> ControlFuture<'_, ModemStatus>;
    /// Applies baud rate and framing to the open line.
    fn apply_settings(&mut self, line: LineSettings) -> ControlFuture<'_, ()>;
    /// The RFC 2217 state of the connection, for `status`; `None` for a
    /// local tty.
    fn com_port(&self) -> Option<Arc<ComPortLink>> {
        None
    }
}
