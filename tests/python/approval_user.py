"""An agent whose own user answers serialgate's approval questions, with
the official Python SDK (the `mcp` package) over streamable HTTP, printing
one JSON object per line for the Rust test to check.

    approval_user.py URL TOKEN ANSWER LINE [PORT]

ANSWER is what the user does when the daemon asks (elicitation/create):
`approve` or `deny` (the form accepted with that decision), `decline`,
`cancel`, `wait` (never answers: someone else must decide, and the
question is withdrawn), or `none` (the client declares no elicitation
capability at all). The script connects to PORT (sw1 unless given: a
serving gateway's `site/port` too), wakes the switch
(an empty line, its prompt read), sends LINE with
send_text, and prints what it was asked, the progress it heard, and the
call's result. Errors propagate: the test sees the traceback.
"""

import asyncio
import json
import sys

import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def emit(kind, value):
    print(json.dumps({"kind": kind, "value": value}), flush=True)


def user(answer):
    """The elicitation callback of a user who gives `answer`."""

    async def elicit(context, params):
        schema = params.requested_schema
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(by_alias=True, mode="json")
        emit("asked", {"message": params.message, "schema": schema})
        if answer in ("approve", "deny"):
            return types.ElicitResult(action="accept", content={"decision": answer})
        if answer in ("decline", "cancel"):
            return types.ElicitResult(action=answer)
        try:
            # `wait`: the user never answers.
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            emit("withdrawn", True)
            raise

    return elicit


async def main():
    url, token, answer, line = sys.argv[1:5]
    port = sys.argv[5] if len(sys.argv) > 5 else "sw1"
    headers = {"Authorization": f"Bearer {token}"}
    callback = None if answer == "none" else user(answer)
    progress = []

    async def heard(done, total, message):
        progress.append(message)

    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(
                streams[0], streams[1], elicitation_callback=callback
            ) as session:
                await session.initialize()
                connected = await session.call_tool("connect", {"port": port})
                emit("connect_error", connected.is_error)
                # Wake the switch so that its prompt shows the mode.
                await session.call_tool("send_text", {"text": ""})
                await session.call_tool("read_until_prompt", {"timeout": 5})
                emit("calling", line)
                result = await session.call_tool(
                    "send_text", {"text": line}, progress_callback=heard
                )
                emit("progress", progress)
                emit("is_error", result.is_error)
                emit("text", result.content[0].text if result.content else "")


asyncio.run(main())
