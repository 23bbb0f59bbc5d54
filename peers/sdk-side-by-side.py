#!/usr/bin/env python3
"""serialgate and serial-console-mcp through the official Python MCP SDK,
side by side in one run: what a newcomer measures with the client most
agents are built on.

Each server gets a simulated Cisco switch of its own (`serialgate simulate
cisco-ios`), is started over stdio as the SDK's stdio client starts it,
and is brought to the switch's privileged prompt. Then, for each server in
turn, the same calls are timed as whole `call_tool`s (request, server,
response, the SDK's parsing and its output-schema validation):

- `list_presets`: no port I/O, the answer alone;
- `paged`: `show running-config` at the switch's 24-line pager, 2 000 lines
  and 86 `--More--` prompts answered (serialgate: one `send_command`, its
  preset answers the pager; serial-console-mcp: `send_text` then
  `read_until_prompt` with `auto_reply`, its own way to page).

Every paged reply is checked to end at the prompt and hold the config's
last line, so a figure never times a failure.

    peers/install-peers.sh          # serial-console-mcp into bench-out/venv
    cargo build --release
    target/test-venv/bin/python peers/sdk-side-by-side.py \
        [--serialgate target/release/serialgate] \
        [--scm bench-out/venv/bin/serial-console-mcp] [--calls 300] [--pages 10]
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

PROMPT = "SW1#"
ENABLE_PASSWORD = "cisco"
# The simulated switch's running config ends with this line.
LAST_LINE = "end"


def text_of(result):
    """The first text content of a tool result."""
    for c in result.content:
        if getattr(c, "type", None) == "text":
            return c.text
    return ""


async def wait_for(path, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear within {seconds} s")
        await asyncio.sleep(0.01)


class Serialgate:
    name = "serialgate"

    def __init__(self, binary, tmp, link):
        config = os.path.join(tmp, "serialgate.toml")
        with open(config, "w") as f:
            f.write(
                '[server]\nretention = "16MiB"\n\n'
                f'[ports.sw1]\ndevice = "{link}"\npreset = "cisco-ios"\n'
            )
        self.params = StdioServerParameters(
            command=binary,
            args=["serve", "--config", config],
            env={"SERIALGATE_LOG": "warn"},
        )

    async def login(self, s):
        await s.call_tool("connect", {"port": "sw1"})
        await s.call_tool("send_text", {"text": ""})
        await s.call_tool("read_until_prompt", {"timeout": 5})
        await s.call_tool("send_text", {"text": "enable"})
        await s.call_tool("read_until_prompt", {"prompt": "Password:", "timeout": 5})
        await s.call_tool("send_text", {"text": ENABLE_PASSWORD})
        r = await s.call_tool("read_until_prompt", {"timeout": 5})
        assert PROMPT in r.structured_content["prompt_text"], r

    async def paged(self, s):
        r = await s.call_tool(
            "send_command",
            {"command": "show running-config", "timeout": 120, "max_output": 16 << 20},
        )
        out = r.structured_content
        assert out["matched"] is True, out
        lines = out["output"].rstrip("\n").split("\n")
        return lines, out.get("auto_replies", 0)


class SerialConsoleMcp:
    name = "serial-console-mcp"

    def __init__(self, binary, tmp, link):
        self.link = link
        self.params = StdioServerParameters(
            command=binary,
            args=[],
            # It remembers connections in $XDG_CONFIG_HOME.
            env={"XDG_CONFIG_HOME": os.path.join(tmp, "xdg"), "PATH": os.environ["PATH"]},
        )

    async def login(self, s):
        r = await s.call_tool(
            "connect", {"port": self.link, "preset": "cisco-console", "terminal": "dumb"}
        )
        assert text_of(r).startswith("Connected"), r
        for data, prompt in [("", "SW1>"), ("enable", "Password:"), (ENABLE_PASSWORD, PROMPT)]:
            r = await s.call_tool("query_text", {"data": data, "prompt": prompt})
            assert text_of(r).startswith("Matched"), r

    async def paged(self, s):
        await s.call_tool("send_text", {"data": "show running-config"})
        r = await s.call_tool(
            "read_until_prompt",
            {"prompt": PROMPT, "timeout": 300, "auto_reply": {"--More--": " "}},
        )
        body = text_of(r)
        assert body.startswith("Matched"), body[:200]
        pages = body.count("--More--")
        lines = [l for l in body.replace("\r", "").split("\n") if "--More--" not in l]
        return lines, pages


async def measure(server, binary_of, calls, runs):
    with tempfile.TemporaryDirectory() as tmp:
        link = os.path.join(tmp, "ttyUSB-sw1")
        sim = subprocess.Popen(
            [binary_of["serialgate"], "simulate", "cisco-ios", "--link", link],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        devnull = open(os.devnull, "w")
        try:
            await wait_for(link)
            peer = server(binary_of[server.name], tmp, link)
            async with stdio_client(peer.params, errlog=devnull) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    await s.list_tools()
                    await peer.login(s)
                    figures = {}
                    for _ in range(20):
                        await s.call_tool("list_presets", {})
                    times = []
                    for _ in range(calls):
                        t = time.perf_counter()
                        r = await s.call_tool("list_presets", {})
                        times.append(time.perf_counter() - t)
                        assert not r.is_error, r
                    size = len(json.dumps(r.structured_content)) if r.structured_content else len(text_of(r))
                    figures["list_presets_ms"] = statistics.median(times) * 1e3
                    figures["list_presets_bytes"] = size
                    await peer.paged(s)  # warm-up
                    times = []
                    for _ in range(runs):
                        t = time.perf_counter()
                        lines, pages = await peer.paged(s)
                        times.append(time.perf_counter() - t)
                        ends = [l for l in lines if l.strip() == LAST_LINE]
                        assert ends, f"{server.name}: no '{LAST_LINE}' line in {len(lines)} lines"
                    figures["paged_s"] = statistics.median(times)
                    figures["paged_min_s"] = min(times)
                    figures["paged_pages"] = pages
                    figures["paged_lines"] = len(lines)
                    return figures
        finally:
            devnull.close()
            sim.terminate()
            sim.wait()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--serialgate", default="target/release/serialgate")
    ap.add_argument("--scm", default="bench-out/venv/bin/serial-console-mcp")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--pages", type=int, default=10, help="paged runs per server")
    a = ap.parse_args()
    binary_of = {"serialgate": os.path.abspath(a.serialgate), "serial-console-mcp": os.path.abspath(a.scm)}
    results = {}
    for server in (Serialgate, SerialConsoleMcp):
        results[server.name] = await measure(server, binary_of, a.calls, a.pages)
        print(f"{server.name}: {results[server.name]}", file=sys.stderr)
    sg, scm = results["serialgate"], results["serial-console-mcp"]
    print(f"| through the Python SDK | serialgate | serial-console-mcp | ratio |")
    print(f"|---|---|---|---|")
    print(
        f"| `list_presets` p50 | {sg['list_presets_ms']:.2f} ms ({sg['list_presets_bytes']} B) "
        f"| {scm['list_presets_ms']:.2f} ms ({scm['list_presets_bytes']} B) "
        f"| ×{scm['list_presets_ms'] / sg['list_presets_ms']:.2f} |"
    )
    print(
        f"| paged `show running-config` median ({a.pages} runs; {sg['paged_lines']} lines, "
        f"{sg['paged_pages']} pages) | {sg['paged_s']:.4f} s (min {sg['paged_min_s']:.4f}) "
        f"| {scm['paged_s']:.3f} s (min {scm['paged_min_s']:.3f}) "
        f"| ×{scm['paged_s'] / sg['paged_s']:.0f} |"
    )
    print(json.dumps(results))


asyncio.run(main())
