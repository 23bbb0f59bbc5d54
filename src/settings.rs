//! Serial line settings and line endings: plain values shared by the config,
//! the ports and the MCP tools.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default baud rate of a console port when neither preset nor port says.
pub const DEFAULT_BAUD: u32 = 9600;

/// Parity bit setting of a serial line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum Parity {
    /// No parity bit (the setting of nearly every console).
    #[default]
    None,
    /// Even parity.
    Even,
    /// Odd parity.
    Odd,
}

/// Flow control of a serial line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum FlowControl {
    /// No flow control (the setting of nearly every console).
    #[default]
    None,
    /// RTS/CTS.
    Hardware,
    /// XON/XOFF.
    Software,
}

/// What is appended to text sent with `send_text` / `send_command`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum LineEnding {
    /// Carriage return, what a terminal's Enter key sends (consoles expect it).
    #[default]
    Cr,
    /// Line feed.
    Lf,
    /// Carriage return then line feed.
    Crlf,
    /// Nothing.
    None,
}

impl LineEnding {
    /// The bytes this line ending appends.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            LineEnding::Cr => b"\r",
            LineEnding::Lf => b"\n",
            LineEnding::Crlf => b"\r\n",
            LineEnding::None => b"",
        }
    }
}

/// Baud rate and framing of one serial line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LineSettings {
    /// Bits per second, e.g. 9600 or 115200.
    pub baud: u32,
    /// Data bits per character: 5, 6, 7 or 8.
    pub data_bits: u8,
    /// Parity bit.
    pub parity: Parity,
    /// Stop bits: 1 or 2.
    pub stop_bits: u8,
    /// Flow control.
    pub flow_control: FlowControl,
}

impl Default for LineSettings {
    fn default() -> Self {
        LineSettings {
            baud: DEFAULT_BAUD,
            data_bits: 8,
            parity: Parity::None,
            stop_bits: 1,
            flow_control: FlowControl::None,
        }
    }
}

impl LineSettings {
    /// Checks the values a serial driver accepts; the message says which is
    /// wrong and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if self.baud == 0 || self.baud > 4_000_000 {
            return Err(format!(
                "baud {} is out of range: use 50..=4000000, e.g. 9600 or 115200",
                self.baud
            ));
        }
        if !(5..=8).contains(&self.data_bits) {
            return Err(format!(
                "data_bits {} is out of range: use 5, 6, 7 or 8",
                self.data_bits
            ));
        }
        if !(1..=2).contains(&self.stop_bits) {
            return Err(format!(
                "stop_bits {} is out of range: use 1 or 2",
                self.stop_bits
            ));
        }
        Ok(())
    }
}

impl fmt::Display for LineSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parity = match self.parity {
            Parity::None => 'N',
            Parity::Even => 'E',
            Parity::Odd => 'O',
        };
        write!(
            f,
            "{} {}{}{}",
            self.baud, self.data_bits, parity, self.stop_bits
        )?;
        match self.flow_control {
            FlowControl::None => Ok(()),
            FlowControl::Hardware => write!(f, " rts/cts"),
            FlowControl::Software => write!(f, " xon/xoff"),
        }
    }
}
