"""An agent whose client speaks MCP 2026-07-28 (no session: every request
stands alone) and whose user answers serialgate's approval questions in
multi round-trip results (`input_required`), with the official Python SDK
(the `mcp` package) over streamable HTTP, printing one JSON object per
line for the Rust test to check.

    approval_mrtr.py URL TOKEN SCENARIO LINE [PORT]

The script connects to PORT (sw1 by default), wakes the switch (an empty line, its
prompt read) and sends LINE with send_text. SCENARIO:

- `approve`, `deny`, `decline`: the SDK drives the rounds itself; the
  user's elicitation callback approves, denies or declines.
- `replay`: the rounds are driven by hand; after the approved call, the
  same answer and requestState are sent again, then a forged state.
- `other`: the state given for LINE is sent with another line.
- `person`: the first round's question is printed and the script waits for
  a line on stdin (a person decides meanwhile), then answers `deny`.

Errors propagate: the test sees the traceback.
"""

import asyncio
import json
import sys

import mcp.types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def emit(kind, value):
    print(json.dumps({"kind": kind, "value": value}), flush=True)


def text_of(result):
    return result.content[0].text if result.content else ""


def user(answer):
    """The elicitation callback of a user who gives `answer`."""

    async def elicit(context, params):
        schema = params.requested_schema
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(by_alias=True, mode="json")
        emit("asked", {"message": params.message, "schema": schema})
        if answer in ("approve", "deny"):
            return types.ElicitResult(action="accept", content={"decision": answer})
        return types.ElicitResult(action=answer)

    return elicit


def answered(first, decision):
    """The responses to every input request of `first`."""
    responses = {}
    for key, request in (first.input_requests or {}).items():
        emit("asked", {"key": key, "message": request.params.message})
        responses[key] = types.ElicitResult(
            action="accept", content={"decision": decision}
        ).model_dump(by_alias=True, mode="json", exclude_none=True)
    return responses


async def by_hand(session, scenario, line):
    first = await session.call_tool(
        "send_text", {"text": line}, allow_input_required=True
    )
    emit("result_type", type(first).__name__)
    state = first.request_state
    if scenario == "person":
        emit("waiting", True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        responses = answered(first, "deny")
    else:
        responses = answered(first, "approve")
    if scenario == "other":
        other = await session.call_tool(
            "send_text",
            {"text": line + " 9"},
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )
        emit("other", {"is_error": other.is_error, "text": text_of(other)})
        return
    done = await session.call_tool(
        "send_text",
        {"text": line},
        input_responses=responses,
        request_state=state,
        allow_input_required=True,
    )
    emit("is_error", done.is_error)
    emit("text", text_of(done))
    if scenario == "replay":
        again = await session.call_tool(
            "send_text",
            {"text": line},
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )
        emit("replayed", {"is_error": again.is_error, "text": text_of(again)})
        forged = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
        bad = await session.call_tool(
            "send_text",
            {"text": line},
            input_responses=responses,
            request_state=forged,
            allow_input_required=True,
        )
        emit("forged", {"is_error": bad.is_error, "text": text_of(bad)})


async def main():
    url, token, scenario, line = sys.argv[1:5]
    port = sys.argv[5] if len(sys.argv) > 5 else "sw1"
    headers = {"Authorization": f"Bearer {token}"}
    auto = scenario in ("approve", "deny", "decline")
    callback = user(scenario) if auto else user("approve")
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, elicitation_callback=callback) as client:
            emit("protocol", client.protocol_version)
            connected = await client.call_tool("connect", {"port": port})
            emit("connect_error", connected.is_error)
            # Wake the switch so that its prompt shows the mode.
            await client.call_tool("send_text", {"text": ""})
            await client.call_tool("read_until_prompt", {"timeout": 5})
            if auto:
                result = await client.call_tool("send_text", {"text": line})
                emit("is_error", result.is_error)
                emit("text", text_of(result))
            else:
                await by_hand(client.session, scenario, line)


asyncio.run(main())
