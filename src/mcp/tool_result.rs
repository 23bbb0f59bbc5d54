//! A tool call's result as MCP sends it: a failure is a result with
//! `isError: true` whose text starts with the stable code (a `busy` one
//! with MCP's way to take the hold, `connect` with `take_over: true`); a
//! large output is moved into the result, not copied. The code of a
//! failure is kept as a type until the call is counted in the metrics.

use std::cell::Cell;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, IntoContents};

use super::server::GateServer;
use crate::error::{ErrorCode, GateError};

/// What an agent does about a port another session holds: MCP's hint on
/// a `busy` error that names the holder.
pub(super) const TAKE_OVER_HINT: &str = "To write, connect again with take_over: true (the holder becomes read-only; taking it from another token's session needs admin access)";

tokio::task_local! {
    /// The code of the failure a tool call ended with, noted where the
    /// failure becomes a result and read when the call is counted.
    static FAILED_WITH: Cell<Option<ErrorCode>>;
}

/// A tool failure: becomes a result with `isError: true` whose text starts
/// with the error code.
#[derive(Debug)]
pub struct ToolError(pub GateError);

impl From<GateError> for ToolError {
    fn from(e: GateError) -> Self {
        ToolError(e)
    }
}

impl IntoContents for ToolError {
    fn into_contents(self) -> Vec<ContentBlock> {
        // Outside a counted call (none today) there is nothing to note.
        let _ = FAILED_WITH.try_with(|code| code.set(Some(self.0.code)));
        vec![ContentBlock::text(mcp_text(self.0))]
    }
}

/// An error's text as an agent reads it: the code, the message, and for a
/// held port how to take the hold over MCP.
fn mcp_text(e: GateError) -> String {
    e.with_hold_hint(TAKE_OVER_HINT).to_string()
}

/// A refusal before any tool ran, as a tool result (`isError`, text
/// starting with the code), and its code for the metrics.
pub(super) fn error_result(e: GateError) -> (CallToolResponse, ErrorCode) {
    let code = e.code;
    (
        CallToolResult::error(vec![ContentBlock::text(mcp_text(e))]).into(),
        code,
    )
}

/// Runs a tool call and counts it in the metrics, labelled by the code of
/// the failure it ended with (as a type, never read back from the text).
pub(super) async fn counted<F>(router: &ToolRouter<GateServer>, tool: &str, call: F) -> F::Output
where
    F: std::future::Future<Output = Result<CallToolResponse, rmcp::ErrorData>>,
{
    let (response, failed) = FAILED_WITH
        .scope(Cell::new(None), async {
            let response = call.await;
            (response, FAILED_WITH.with(Cell::get))
        })
        .await;
    if let Ok(response) = &response {
        let outcome = match response {
            CallToolResponse::Complete(result) if result.is_error == Some(true) => {
                failed.map_or("error", ErrorCode::as_str)
            }
            _ => "ok",
        };
        count_call(router, tool, outcome);
    }
    response
}

/// Counts a tool call in the metrics, by tool (names no tool has count as
/// `unknown`, so a caller cannot grow the label set) and outcome (`ok`, an
/// error code, or `error` for a failure without one).
pub(super) fn count_call(router: &ToolRouter<GateServer>, tool: &str, outcome: &str) {
    let tool = if router.has_route(tool) {
        tool
    } else {
        "unknown"
    };
    crate::metrics::tool_call(tool, outcome);
}

/// Largest `output` a result also copies into its text block. Above it the
/// text block says where the output is and carries the other fields, so a
/// 20 MB result is not held and sent twice (MCP asks for the text copy
/// with a SHOULD, for clients that predate `structuredContent`; the
/// clients that validate results, the Python SDK's and the Inspector,
/// read `structuredContent`, and no model reads a megabyte inline).
pub(crate) const TEXT_COPY_MAX: usize = 1 << 20;

/// A structured result whose `output` string is moved into the JSON value,
/// not copied: `fields` is serialised with an empty `output`, which is
/// then replaced. The text copy is the JSON of the whole while the output
/// is at most [`TEXT_COPY_MAX`] bytes.
pub(super) fn structured_output<T: serde::Serialize>(
    fields: &T,
    output: String,
    links: Vec<rmcp::model::Resource>,
) -> Result<CallToolResult, ToolError> {
    let mut json = serde_json::to_value(fields).map_err(|e| {
        ToolError(GateError::invalid(format!(
            "result could not be encoded: {e}"
        )))
    })?;
    let big = output.len() > TEXT_COPY_MAX;
    let text = if big {
        let mut fields = json.clone();
        if let Some(map) = fields.as_object_mut() {
            map.remove("output");
        }
        format!(
            "output: {} bytes, in structuredContent.output only (no text copy above {} bytes); the other fields: {fields}",
            output.len(),
            TEXT_COPY_MAX
        )
    } else {
        String::new()
    };
    if let Some(slot) = json.get_mut("output") {
        *slot = serde_json::Value::String(output);
    }
    let text = if big { text } else { json.to_string() };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json);
    result
        .content
        .extend(links.into_iter().map(ContentBlock::resource_link));
    Ok(result)
}
