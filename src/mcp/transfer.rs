//! `send_file` and `receive_file`: XMODEM, XMODEM-1K and YMODEM between a
//! file in `[server] files_dir` and the device (a boot loader's `xmodem`,
//! `loady`, `loadx`; a shell's `sb`/`sz`). Thin over `port::transfer`:
//! the arguments and the file here, the protocol on the port.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{JsonObject, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serialgate_xmodem::Protocol;
use sha2::{Digest, Sha256};

use super::args::{self, parse};
use super::server::GateServer;
use super::tool_result::ToolError;
use crate::error::{GateError, shown};
use crate::files::{FilesDir, MAX_FILE, sanitize};
use crate::port::transfer::{Direction, TransferJob, TransferReport, TransferStatus};

/// How long a transfer waits for the device to start it (the protocols'
/// own minute); the caller can cancel sooner.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Arguments of `send_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendFileArgs {
    /// A file name in files_dir.
    #[schemars(description = "File name in files_dir.")]
    pub file: String,
    /// xmodem, xmodem-1k (default) or ymodem.
    #[schemars(description = "xmodem, xmodem-1k (default), ymodem.")]
    pub protocol: Option<String>,
    /// The speed the device's command switched to.
    #[schemars(description = "Baud the device switched to; restored after.")]
    #[serde(default, deserialize_with = "args::opt_u64")]
    pub transfer_baud: Option<u64>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Arguments of `receive_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiveFileArgs {
    /// The name to save as in files_dir (YMODEM: default the sender's).
    #[schemars(description = "Save as (ymodem: the sender's name).")]
    pub file: Option<String>,
    /// ymodem (default) or xmodem.
    #[schemars(description = "ymodem (default) or xmodem.")]
    pub protocol: Option<String>,
    /// Replace an existing file.
    #[schemars(description = "Replace an existing file (else kept).")]
    #[serde(default, deserialize_with = "args::opt_bool")]
    pub overwrite: Option<bool>,
    /// The connection (default: the current one).
    pub connection: Option<String>,
}

/// Result of `send_file` and `receive_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TransferResult {
    /// The file in files_dir.
    pub file: String,
    /// The protocol spoken.
    pub protocol: String,
    /// Payload bytes moved (XMODEM received: padded to its blocks).
    pub bytes: u64,
    /// Data blocks moved.
    pub blocks: u64,
    /// Blocks sent again or refused (NAKs, timeouts).
    pub retries: u64,
    /// Seconds the transfer took.
    pub seconds: f64,
    /// SHA-256 of the file (as sent, or as saved).
    pub sha256: String,
    /// Line speed during the transfer.
    pub baud: u32,
    /// Payload bytes per second over the line's bytes per second at that
    /// baud (a pseudo-terminal is not paced, so there it exceeds 1).
    pub efficiency: f64,
    /// Sending: payload bytes over all bytes written (frames, EOT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framing_efficiency: Option<f64>,
    /// The baud the port is at now (the configured one put back).
    pub baud_after: u32,
    /// YMODEM: the name and size the device sent (receiving).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_name: Option<String>,
    /// YMODEM: the size the device announced (receiving).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_size: Option<u64>,
    /// Sending: true when the receiver went back to its prompt without
    /// acknowledging the end (lrzsz on a pseudo-terminal drops its last
    /// ACK as it exits); every data block was acknowledged. Check the file
    /// on the device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_unconfirmed: Option<bool>,
}

fn protocol_arg(
    given: Option<&str>,
    default: Protocol,
    allowed: &[Protocol],
) -> Result<Protocol, GateError> {
    let Some(name) = given.filter(|n| !n.trim().is_empty()) else {
        return Ok(default);
    };
    Protocol::parse(name)
        .filter(|p| allowed.contains(p))
        .ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|p| p.name()).collect();
            GateError::invalid(format!(
                "protocol {} is not one of {}",
                shown(name),
                names.join(", ")
            ))
        })
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl GateServer {
    /// The files_dir, or why transfers are off.
    fn files_dir(&self) -> Result<FilesDir, GateError> {
        let config = self.gateway.config();
        let Some(dir) = config.server.files_dir.as_deref() else {
            return Err(GateError::invalid(
                "file transfers are off: the operator sets [server] files_dir to the directory they use",
            ));
        };
        FilesDir::open(dir, config.server.files_max)
    }

    /// Runs `job` on the connection's port in a task of its own (so that
    /// a dropped request still ends the transfer properly: CAN CAN, the
    /// speed put back), cancelled with the request or the client.
    async fn transfer(
        &self,
        conn: &super::session::Connection,
        mut job: TransferJob,
        context: &RequestContext<RoleServer>,
    ) -> Result<TransferReport, GateError> {
        let cancel = tokio_util::sync::CancellationToken::new();
        job.cancel = cancel.clone();
        if let Some(token) = context.meta.get_progress_token() {
            let peer = context.peer.clone();
            job.progress = Some(Arc::new(move |s: &TransferStatus| {
                let (peer, token) = (peer.clone(), token.clone());
                let mut note =
                    ProgressNotificationParam::new(token, s.blocks as f64).with_message(format!(
                        "{} blocks sent, {} bytes, {} retries",
                        s.blocks, s.bytes, s.retries
                    ));
                if s.total_blocks > 0 {
                    note = note.with_total(s.total_blocks as f64);
                }
                crate::task::spawn(async move {
                    let _ = peer.notify_progress(note).await;
                });
            }));
        }
        let port = conn.port().clone();
        let actor = self.session.actor();
        let task = crate::task::spawn(async move { port.run_transfer(&actor, job).await });
        let (request, gone) = (context.ct.clone(), self.client_gone.clone());
        let stop = cancel.clone();
        let watcher = crate::task::spawn(async move {
            tokio::select! {
                () = request.cancelled() => stop.cancel(),
                () = gone.cancelled() => stop.cancel(),
                () = stop.cancelled() => {}
            }
        });
        let result = task
            .await
            .map_err(|e| GateError::invalid(format!("the transfer task failed: {e}")));
        cancel.cancel();
        let _ = watcher.await;
        result?
    }
}

fn result(file: String, protocol: Protocol, r: &TransferReport, data: &[u8]) -> TransferResult {
    let line_rate = f64::from(r.baud) / 10.0;
    let per_second = if r.seconds > 0.0 {
        r.stats.bytes as f64 / r.seconds
    } else {
        0.0
    };
    let round = |v: f64| (v * 1000.0).round() / 1000.0;
    TransferResult {
        file,
        protocol: protocol.name().to_owned(),
        bytes: r.stats.bytes,
        blocks: r.stats.blocks,
        retries: r.stats.retries,
        seconds: r.seconds,
        sha256: sha256_hex(data),
        baud: r.baud,
        efficiency: if line_rate > 0.0 {
            round(per_second / line_rate)
        } else {
            0.0
        },
        framing_efficiency: None,
        baud_after: r.settings_after.baud,
        sender_name: r.header_name.clone(),
        sender_size: r.header_size,
        end_unconfirmed: r.stats.end_unconfirmed.then_some(true),
    }
}

#[tool_router(router = transfer_router, vis = "pub(super)")]
impl GateServer {
    /// Sends a file from files_dir to the device.
    #[tool(
        description = "Send a file in files_dir by XMODEM/YMODEM after the device's receive command (ROMMON `xmodem -c`, U-Boot `loady`); cancel sends CAN CAN.",
        annotations(destructive_hint = true),
        input_schema = rmcp::handler::server::common::schema_for_input::<SendFileArgs>().unwrap_or_default()
    )]
    pub async fn send_file(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<TransferResult>, ToolError> {
        let a: SendFileArgs = parse("send_file", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let protocol = protocol_arg(
            a.protocol.as_deref(),
            Protocol::Xmodem1k,
            &[Protocol::Xmodem, Protocol::Xmodem1k, Protocol::Ymodem],
        )?;
        let baud = a
            .transfer_baud
            .map(|b| {
                u32::try_from(b)
                    .ok()
                    .filter(|b| (50..=4_000_000).contains(b))
                    .ok_or_else(|| {
                        GateError::invalid(format!(
                            "transfer_baud {b} is out of range: use e.g. 115200"
                        ))
                    })
            })
            .transpose()?;
        let data = self.files_dir()?.read(&a.file)?;
        let job = TransferJob {
            direction: Direction::Send,
            protocol,
            file: a.file.clone(),
            data: data.clone(),
            max_bytes: MAX_FILE,
            baud,
            start_timeout: START_TIMEOUT,
            cancel: Default::default(),
            progress: None,
        };
        let report = self.transfer(&conn, job, &context).await?;
        self.session.advance(&conn.name, report.end_offset);
        let mut out = result(a.file, protocol, &report, &data);
        out.framing_efficiency = Some(framing(report.stats.bytes, report.stats.line_bytes));
        Ok(Json(out))
    }

    /// Receives a file from the device into files_dir.
    #[tool(
        description = "Receive a file into files_dir by YMODEM/XMODEM after the device's send command.",
        input_schema = rmcp::handler::server::common::schema_for_input::<ReceiveFileArgs>().unwrap_or_default()
    )]
    pub async fn receive_file(
        &self,
        Parameters(raw): Parameters<JsonObject>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<TransferResult>, ToolError> {
        let a: ReceiveFileArgs = parse("receive_file", raw)?;
        let conn = self.session.get(a.connection.as_deref())?;
        let protocol = protocol_arg(
            a.protocol.as_deref(),
            Protocol::Ymodem,
            &[Protocol::Ymodem, Protocol::Xmodem],
        )?;
        let overwrite = a.overwrite.unwrap_or(false);
        let files = self.files_dir()?;
        let room = files.room().min(MAX_FILE);
        if room == 0 {
            return Err(GateError::invalid(format!(
                "files_dir is full (files_max {} bytes): remove files from it, or raise files_max, before receiving",
                self.gateway.config().server.files_max
            ))
            .into());
        }
        let given = a.file.filter(|f| !f.is_empty());
        match &given {
            Some(name) => {
                crate::files::check_name(name)?;
                if !overwrite && files.exists(name) {
                    return Err(GateError::invalid(format!(
                        "files_dir already has {}; give another file name, or overwrite: true",
                        shown(name)
                    ))
                    .into());
                }
            }
            None if protocol == Protocol::Xmodem => {
                return Err(GateError::invalid(
                    "xmodem carries no file name: give file, the name to save as",
                )
                .into());
            }
            None => {}
        }
        let job = TransferJob {
            direction: Direction::Receive,
            protocol,
            file: given
                .clone()
                .unwrap_or_else(|| "(the sender's name)".to_owned()),
            data: Vec::new(),
            max_bytes: room,
            baud: None,
            start_timeout: START_TIMEOUT,
            cancel: Default::default(),
            progress: None,
        };
        let mut report = self.transfer(&conn, job, &context).await?;
        self.session.advance(&conn.name, report.end_offset);
        let name = match given {
            Some(name) => name,
            None => report
                .header_name
                .as_deref()
                .and_then(sanitize)
                .ok_or_else(|| {
                    GateError::invalid(
                        "the device's file name cannot name a file here: call again with file",
                    )
                })?,
        };
        let data = std::mem::take(&mut report.data);
        files.write(&name, &data, overwrite)?;
        Ok(Json(result(name, protocol, &report, &data)))
    }
}

/// Payload over line bytes, rounded.
fn framing(payload: u64, line: u64) -> f64 {
    if line == 0 {
        return 0.0;
    }
    (payload as f64 / line as f64 * 1000.0).round() / 1000.0
}
