"""One MCP session with the official Python SDK (the `mcp` package), as an
agent framework would open it, printing one JSON object per line for the
Rust test to check.

    mcp_session.py stdio BINARY CONFIG      the daemon started over stdio
    mcp_session.py http URL TOKEN [CA_FILE] streamable HTTP with a bearer token;
                                            an https:// URL's certificate checked
                                            against CA_FILE (else the system's roots)

Each run lists the tools, connects to port sw1, and runs `show version` on
it with send_command. Errors propagate: the test sees the traceback.
"""

import asyncio
import json
import ssl
import sys

import httpx2

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import (
    MCP_DEFAULT_SSE_READ_TIMEOUT,
    MCP_DEFAULT_TIMEOUT,
    create_mcp_http_client,
)


def emit(kind, value):
    print(json.dumps({"kind": kind, "value": value}), flush=True)


async def run(session):
    init = await session.initialize()
    emit("server", init.server_info.name)
    tools = await session.list_tools()
    emit("tools", sorted(t.name for t in tools.tools))
    connected = await session.call_tool("connect", {"port": "sw1"})
    emit("connect_error", connected.is_error)
    result = await session.call_tool(
        "send_command", {"command": "show version"}
    )
    emit("send_command_error", result.is_error)
    emit("send_command", result.structured_content)


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(
            command=sys.argv[2], args=["serve", "--config", sys.argv[3]]
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await run(session)
    elif mode == "http":
        headers = {"Authorization": f"Bearer {sys.argv[3]}"}
        if len(sys.argv) > 4:
            # create_mcp_http_client's client with its timeouts, trusting
            # only the given CA (it takes no verify= of its own).
            http = httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(
                    MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT
                ),
                verify=ssl.create_default_context(cafile=sys.argv[4]),
            )
        else:
            http = create_mcp_http_client(headers=headers)
        async with http:
            async with streamable_http_client(sys.argv[2], http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await run(session)
    else:
        sys.exit(f"unknown mode {mode!r}: stdio or http")


asyncio.run(main())
