#!/usr/bin/env python3
"""What a call costs a client of the official Python MCP SDK.

Starts a simulated Cisco switch (`serialgate simulate cisco-ios`) and the
daemon over stdio (`serialgate serve`), as the SDK's stdio client does,
then times `list_presets`, `status` and `send_command {"command": "show clock"}`: the whole
`call_tool` (request, server, response, the SDK's parsing and its
output-schema validation), and the validation alone (the SDK's compiled
validator run on the same structured result). Also prints the size of
`tools/list`: the whole JSON, and the model-visible part (name,
description, inputSchema of each tool).

    python3 -m venv VENV && VENV/bin/pip install mcp
    cargo build --release
    VENV/bin/python peers/sdk-cost.py [path/to/serialgate] [calls]
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/serialgate"
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    with tempfile.TemporaryDirectory() as tmp:
        link = os.path.join(tmp, "sw1")
        sim = subprocess.Popen(
            [binary, "simulate", "cisco-ios", "--link", link],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(200):
                if os.path.exists(link):
                    break
                await asyncio.sleep(0.01)
            config = os.path.join(tmp, "serialgate.toml")
            with open(config, "w") as f:
                f.write(f'[ports.sw1]\ndevice = "{link}"\npreset = "cisco-ios"\n')
            params = StdioServerParameters(
                command=binary,
                args=["serve", "--config", config],
                env={"SERIALGATE_LOG": "warn"},
            )
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = await session.list_tools()
                    await report(session, tools, calls)
        finally:
            sim.terminate()
            sim.wait()


async def report(session, tools, calls):
    listed = [t.model_dump(by_alias=True, exclude_none=True) for t in tools.tools]
    total = len(json.dumps({"tools": listed}, separators=(",", ":")))
    visible = sum(
        len(
            json.dumps(
                {
                    "name": t["name"],
                    "description": t.get("description"),
                    "inputSchema": t["inputSchema"],
                },
                separators=(",", ":"),
            )
        )
        for t in listed
    )
    schemas = {t["name"]: t.get("outputSchema") for t in listed}
    print(
        f"tools/list: {len(listed)} tools, {total} bytes; model-visible {visible} bytes; "
        f"status outputSchema {len(json.dumps(schemas.get('status'), separators=(',', ':')))} bytes, "
        f"send_command outputSchema {len(json.dumps(schemas.get('send_command'), separators=(',', ':')))} bytes"
    )
    await session.call_tool("connect", {"port": "sw1"})
    await session.call_tool("send_text", {"text": ""})
    await session.call_tool("read_until_prompt", {"timeout": 5})
    figures = {"tools": len(listed), "tools_list_bytes": total, "model_visible_bytes": visible}
    for name, args in [
        ("list_presets", {}),
        ("status", {}),
        ("send_command", {"command": "show clock"}),
    ]:
        for _ in range(20):
            r = await session.call_tool(name, args)
        assert not r.is_error, r
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            r = await session.call_tool(name, args)
            times.append((time.perf_counter() - t) * 1e3)
            assert not r.is_error, r
        validator = session._output_schema_validator(name, schemas[name])
        value = r.structured_content
        v_times = []
        for _ in range(calls):
            t = time.perf_counter()
            validator.validate(value)
            v_times.append((time.perf_counter() - t) * 1e3)
        p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
        v50 = percentile(v_times, 0.5)
        print(
            f"{name}: call_tool p50 {p50:.3f} ms (p95 {p95:.3f}); "
            f"output-schema validation alone p50 {v50:.3f} ms; "
            f"result {len(json.dumps(value))} bytes"
        )
        figures[name] = {
            "call_p50_ms": round(p50, 3),
            "call_p95_ms": round(p95, 3),
            "validate_p50_ms": round(v50, 4),
        }
    print(json.dumps(figures))


asyncio.run(main())
