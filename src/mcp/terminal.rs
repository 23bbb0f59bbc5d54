//! Tools for full-screen consoles: `send_keys` (named keys to the bytes a
//! terminal sends) and `screen` (the VT100 screen the output draws).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::{Json, tool, tool_router};
use schemars::JsonSchema;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::args::{self, MAX_SEND_BYTES, parse};
use super::describe::size;
use super::encoding::hex;
use super::server::GateServer;
use super::tool_result::ToolError;
use crate::error::GateError;
use crate::port::PortState;
use crate::terminal::keys::{self, CursorKeys, KEY_NAMES};
use crate::terminal::screen::{self, COLS, FALLBACK_WINDOW, ROWS, SEARCH_WINDOW};

/// Most keys in one `send_keys` call.
pub const MAX_KEYS: usize = 256;

/// Keys as a list of names or one space-separated string (for the schema).
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // describes the schema; `keys_arg` parses
enum KeysSchema {
    /// Key names in order, e.g. ["ctrl-c", "esc", "text:show ip", "enter"].
    List(Vec<String>),
    /// Key names separated by spaces, e.g. "ctrl-c esc up enter".
    Line(String),
}

/// How the cursor keys are encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CursorKeysArg {
    /// As the device last asked (`ESC[?1h` application, else normal).
    #[default]
    Auto,
    /// `ESC [ A`.
    Normal,
    /// `ESC O A`.
    Application,
}

/// Arguments of `send_keys`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendKeysArgs {
    /// Keys in order, as a list (["ctrl-c", "esc", "text:show ip", "enter"])
    /// or one space-separated string ("ctrl-c esc up enter"; there a
    /// text: key ends at the next space).
    #[serde(deserialize_with = "keys_arg")]
    #[schemars(with = "KeysSchema")]
    pub keys: Vec<String>,
    /// Cursor key encoding (up/down/left/right/home/end): auto (default:
    /// as the device asked with ESC[?1h/ESC[?1l), normal or application.
    #[serde(default, deserialize_with = "args::opt_enum")]
    pub cursor_keys: Option<CursorKeysArg>,
    /// Move the consume cursor to the head first (default false).
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub clear_buffer_first: Option<bool>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

fn keys_arg<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => {
            // A JSON array given as a string (clients that stringify arguments).
            if s.trim_start().starts_with('[')
                && let Ok(list) = serde_json::from_str::<Vec<String>>(&s)
            {
                return Ok(list);
            }
            Ok(keys::split_keys(&s))
        }
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s),
                other => Err(de::Error::custom(format!(
                    "key {} is {other}, not a key name; give names such as \"ctrl-c\" or \"text:abc\"",
                    i + 1
                ))),
            })
            .collect(),
        other => Err(de::Error::custom(format!(
            "keys must be a list of key names or a space-separated string, got {other}"
        ))),
    }
}

/// Result of `send_keys`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SendKeysResult {
    /// Bytes written to the device.
    pub bytes_sent: u64,
    /// The bytes written, as hex.
    pub hex: String,
    /// Cursor key encoding used: normal or application.
    pub cursor_keys: String,
    /// Log offset at the moment of sending: the reply starts here.
    pub cursor: u64,
}

/// Arguments of `screen`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenArgs {
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// A position on the screen, 0-based.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScreenPosition {
    /// Row, 0-based (the index in `rows`).
    pub row: u16,
    /// Column, 0-based.
    pub col: u16,
}

/// The screen's size.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScreenSize {
    /// Rows.
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

/// A run of reverse-video text, as menus show the selected item.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScreenHighlight {
    /// Row, 0-based.
    pub row: u16,
    /// Column of its first character, 0-based.
    pub col: u16,
    /// The text, trimmed.
    pub text: String,
}

/// Result of `screen`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScreenResult {
    /// The screen's rows, top to bottom, trailing blanks trimmed.
    pub rows: Vec<String>,
    /// Where the cursor is, 0-based.
    pub cursor: ScreenPosition,
    /// The screen's size ([`COLS`] × [`ROWS`]).
    #[schemars(description = format!("The screen's size ({COLS}×{ROWS})."))]
    pub size: ScreenSize,
    /// The window title the device set, if any.
    pub title: Option<String>,
    /// Reverse-video runs (a menu's selected item), top to bottom.
    pub highlights: Vec<ScreenHighlight>,
    /// A full-screen program switched to the alternate screen.
    pub alternate_screen: bool,
    /// The device hid the cursor.
    pub cursor_hidden: bool,
    /// The device asked for application cursor keys (send_keys follows it).
    pub application_cursor: bool,
    /// First log offset the screen was rebuilt from.
    pub start: u64,
    /// Log offset the screen reflects (the head when asked).
    pub end: u64,
    /// `start` is a full clear, so the screen is exact; false: rebuilt from
    /// the last [`FALLBACK_WINDOW`] bytes of scrolling output.
    #[schemars(description = format!(
        "`start` is a full clear, so the screen is exact; false: rebuilt from\n\
         the last {} of scrolling output.",
        size(FALLBACK_WINDOW)
    ))]
    pub from_clear: bool,
    /// The port's state.
    pub state: PortState,
}

#[tool_router(router = terminal_router, vis = "pub(super)")]
impl GateServer {
    /// Sends keystrokes by name (at most [`MAX_KEYS`] keys and
    /// [`MAX_SEND_BYTES`]), for menus and full-screen programs.
    #[tool(
        description = format!(
            "Send keystrokes by name, for menus and full-screen programs: ctrl-a\n\
             to ctrl-z, ctrl-@, ctrl-[, ctrl-\\, ctrl-], ctrl-^ (Cisco's escape),\n\
             ctrl-_, esc, tab, shift-tab, enter (CR), lf, backspace (0x7f; ctrl-h\n\
             is 0x08), delete, insert, up, down, left, right, home, end, pgup,\n\
             pgdn, f1-f12 (xterm sequences), space, and `text:<literal>` — as a\n\
             list, or one space-separated string. Nothing is appended (no\n\
             implied newline). At most {MAX_KEYS} keys and {}. Unknown names are\n\
             refused before anything is sent. BREAK: send_break.",
            size(MAX_SEND_BYTES as u64)
        ),
        input_schema = rmcp::handler::server::common::schema_for_input::<SendKeysArgs>().unwrap_or_default()
    )]
    pub async fn send_keys(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<SendKeysResult>, ToolError> {
        let a: SendKeysArgs = parse("send_keys", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        if a.keys.is_empty() || a.keys.len() > MAX_KEYS {
            return Err(GateError::invalid(format!(
                "keys has {} entries; give 1 to {MAX_KEYS} key names ({KEY_NAMES})",
                a.keys.len()
            ))
            .into());
        }
        let log = conn.port().log();
        let mode = match a.cursor_keys.unwrap_or_default() {
            CursorKeysArg::Normal => CursorKeys::Normal,
            CursorKeysArg::Application => CursorKeys::Application,
            CursorKeysArg::Auto if a.keys.iter().any(|k| keys::is_cursor_key(k)) => {
                if screen::application_cursor_at(log, log.head()) {
                    CursorKeys::Application
                } else {
                    CursorKeys::Normal
                }
            }
            CursorKeysArg::Auto => CursorKeys::Normal,
        };
        let bytes = keys::keys_bytes(&a.keys, mode).map_err(GateError::invalid)?;
        if bytes.is_empty() {
            return Err(
                GateError::invalid("the keys make no bytes (only empty text: keys)").into(),
            );
        }
        if bytes.len() > MAX_SEND_BYTES {
            return Err(GateError::invalid(format!(
                "the keys make {} bytes; at most {MAX_SEND_BYTES} per call",
                bytes.len()
            ))
            .into());
        }
        let cursor = self
            .send_bytes(&conn, "keys", &bytes, a.clear_buffer_first.unwrap_or(false))
            .await?;
        Ok(Json(SendKeysResult {
            bytes_sent: bytes.len() as u64,
            hex: hex(&bytes),
            cursor_keys: match mode {
                CursorKeys::Normal => "normal",
                CursorKeys::Application => "application",
            }
            .to_owned(),
            cursor,
        }))
    }

    /// The current VT100 screen of the port ([`COLS`] × [`ROWS`]), rebuilt
    /// from the output within [`SEARCH_WINDOW`] or [`FALLBACK_WINDOW`].
    #[tool(
        description = format!(
            "The current {COLS}×{ROWS} VT100 screen of the port, as a terminal would show\n\
             it: for menus, setup utilities and full-screen programs that draw\n\
             with cursor movements. `rows`\n\
             and `cursor` are 0-based; `highlights` lists reverse-video text (the\n\
             selected menu item). Rebuilt from the last full clear within the\n\
             last {} of output (`from_clear`), else from the last {}.\n\
             Moves no cursor.",
            size(SEARCH_WINDOW),
            size(FALLBACK_WINDOW)
        ),
        annotations(read_only_hint = true),
        input_schema = rmcp::handler::server::common::schema_for_input::<ScreenArgs>().unwrap_or_default()
    )]
    pub async fn screen(
        &self,
        Parameters(raw): Parameters<JsonObject>,
    ) -> Result<Json<ScreenResult>, ToolError> {
        let a: ScreenArgs = parse("screen", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let port = conn.port();
        let (snap, replay) = screen::screen_at(port.log(), port.log().head());
        let application_cursor = screen::application_cursor_at(port.log(), replay.end);
        Ok(Json(ScreenResult {
            rows: snap.rows,
            cursor: ScreenPosition {
                row: snap.cursor.row,
                col: snap.cursor.col,
            },
            size: ScreenSize {
                rows: ROWS,
                cols: COLS,
            },
            title: snap.title,
            highlights: snap
                .highlights
                .into_iter()
                .map(|h| ScreenHighlight {
                    row: h.row,
                    col: h.col,
                    text: h.text,
                })
                .collect(),
            alternate_screen: snap.alternate_screen,
            cursor_hidden: snap.cursor_hidden,
            application_cursor,
            start: replay.start,
            end: replay.end,
            from_clear: replay.from_clear,
            state: port.state(),
        }))
    }
}
