"""Provider client benchmark against the fake provider server (numbers printed, nothing asserted).

    python bench/bench_providers.py [--runs 5]

For each client (Anthropic Messages, OpenAI Responses, Chat Completions) a three-turn task
(text + `execute_command ls`, text + `write_file`, final answer) is driven directly through the
client with the real tool set (~16 specs) and the real system prompt:

- time to first request: from creating the provider (imports included on the first run) to the
  first request arriving at the server;
- total wall time of the three turns;
- bytes of the first request body (system prompt + tools + prompt);
- share of turns after the first whose request prefix (everything before the newest item of the
  conversation array) starts with the previous turn's prefix, byte for byte (cacheable).

The fake server runs in a separate process so it does not share our GIL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = [
    {
        "type": "turn",
        "content": [
            {"type": "text", "text": "Let me look at the project first."},
            {"type": "tool_call", "id": "call_1", "name": "execute_command", "arguments": {"command": "ls"}},
        ],
    },
    {
        "type": "turn",
        "content": [
            {"type": "text", "text": "Now I write the file."},
            {
                "type": "tool_call",
                "id": "call_2",
                "name": "write_file",
                "arguments": {"path": "hello.txt", "content": "hello\n"},
            },
        ],
    },
    {
        "type": "turn",
        "content": [{"type": "text", "text": "Done: hello.txt now says hello."}],
        "stop_reason": "stop",
    },
]


def tool_specs() -> list[Any]:
    from mermaid_cli.tools.catalog_files import file_tools
    from mermaid_cli.tools.catalog_longrun import longrun_tools
    from mermaid_cli.tools.catalog_shell import shell_tools

    return [
        t.spec() for t in file_tools() + shell_tools() + longrun_tools(interactive=False, memory_enabled=True)
    ]


def system_prompt(names: list[str]) -> str:
    from mermaid_cli.run.prompt import build_system_prompt

    return build_system_prompt(
        tools=names,
        safety_mode="auto",
        project_root="/work/project",
        instructions="",
        memory_index="",
        interactive=False,
        os_name="linux",
    )


def start_server(script_path: Path, log_path: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "fixtures" / "fake_provider.py"),
            str(script_path),
            "--port",
            "0",
            "--log",
            str(log_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, line.split()[-1]


def wait_for_first_request(log_path: Path, since: float) -> float:
    while not log_path.exists() or log_path.stat().st_size == 0:
        time.sleep(0.0005)
    return time.perf_counter() - since


async def run_once(
    api: str, url: str, log_path: Path, specs: list[Any], system: str, native: bool
) -> dict[str, float]:
    from mermaid_cli.core.types import Message, ToolResultBlock, TurnRequest
    from mermaid_cli.providers.base import NullSink

    start = time.perf_counter()
    if api == "anthropic":
        from mermaid_cli.providers.anthropic import AnthropicProvider as cls

        base, key = url, "messages"
    elif api == "responses":
        from mermaid_cli.providers.openai_responses import OpenAIResponsesProvider as cls

        base, key = url + "/v1", "input"
    else:
        from mermaid_cli.providers.openai_chat import OpenAIChatProvider as cls

        base, key = url + "/v1", "messages"
    from mermaid_cli.providers.http import Endpoint, split_last_item

    provider = cls(
        Endpoint(
            provider="bench", model="bench-model", base_url=base, api_key="sk-bench", native_tools=native
        )
    )
    messages = [Message.user_text("Create hello.txt containing hello, then tell me what you did.")]
    first_request = None
    loop = asyncio.get_running_loop()
    watcher = loop.run_in_executor(None, wait_for_first_request, log_path, start)
    for _ in range(3):
        result = await provider.turn(
            TurnRequest(system=system, messages=tuple(messages), tools=tuple(specs)), NullSink()
        )
        if first_request is None:
            first_request = await watcher
        messages.append(result.message)
        if result.message.tool_calls:
            messages.append(
                Message(
                    role="user",
                    content=tuple(
                        ToolResultBlock(call_id=c.id, content="ok") for c in result.message.tool_calls
                    ),
                )
            )
    total = time.perf_counter() - start
    await provider.aclose()
    raws = [
        json.dumps(json.loads(line)["body"], ensure_ascii=False, separators=(",", ":")).encode()
        for line in log_path.read_text().splitlines()
    ]
    prefixes = [split_last_item(raw, key) for raw in raws]
    stable = sum(1 for a, b in zip(prefixes, prefixes[1:], strict=False) if b.startswith(a))
    return {
        "first_request_s": first_request or 0.0,
        "total_s": total,
        "first_bytes": len(raws[0]),
        "stable": stable / max(1, len(raws) - 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    specs = tool_specs()
    system = system_prompt([s.name for s in specs])
    print(f"{len(specs)} tool specs, system prompt {len(system)} chars")
    with tempfile.TemporaryDirectory() as tmp:
        for api in ("anthropic", "responses", "chat"):
            for native in (True, False) if api != "chat" else (False,):
                rows = []
                for n in range(args.runs):
                    script = Path(tmp) / f"{api}-{native}-{n}.jsonl"
                    script.write_text("".join(json.dumps(x) + "\n" for x in SCRIPT))
                    log = Path(tmp) / f"{api}-{native}-{n}.log"
                    proc, url = start_server(script, log)
                    try:
                        rows.append(asyncio.run(run_once(api, url, log, specs, system, native)))
                    finally:
                        proc.terminate()
                        proc.wait()
                first = rows[0]
                warm = sorted(r["total_s"] for r in rows[1:]) or [first["total_s"]]
                warm_first = sorted(r["first_request_s"] for r in rows[1:]) or [first["first_request_s"]]
                label = f"{api}{' +native' if native else ''}"
                print(
                    f"{label:18s} first request {first['first_request_s'] * 1000:6.1f} ms cold / "
                    f"{warm_first[len(warm_first) // 2] * 1000:5.1f} ms warm | 3 turns {first['total_s'] * 1000:6.1f} ms cold / "
                    f"{warm[len(warm) // 2] * 1000:5.1f} ms warm | first body {first['first_bytes'] / 1024:5.1f} KiB | "
                    f"stable prefix {first['stable'] * 100:.0f}%  (targets: first body <= 16 KiB, stable 100%)"
                )


if __name__ == "__main__":
    main()
