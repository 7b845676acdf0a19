"""Chat streams as some compatible servers send them, served by a real local HTTP server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from provider_fixtures import RecordingSink

from mermaid_cli.core.types import Message, ToolCallBlock, TurnRequest
from mermaid_cli.providers.http import Endpoint
from mermaid_cli.providers.openai_chat import OpenAIChatProvider

# The whole tool name in every chunk (seen from several OpenAI-compatible servers).
CHUNKS = [
    {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read_file"}}]}}]},
    {
        "choices": [
            {"delta": {"tool_calls": [{"index": 0, "function": {"name": "read_file", "arguments": '{"pa'}}]}}
        ]
    },
    {
        "choices": [
            {
                "delta": {
                    "tool_calls": [{"index": 0, "function": {"name": "read_file", "arguments": 'th":"a"}'}}]
                }
            }
        ]
    },
    {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
]


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for chunk in CHUNKS:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        pass


async def test_a_tool_name_repeated_in_every_chunk_is_not_doubled() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        provider = OpenAIChatProvider(Endpoint(provider="groq", model="m", base_url=base, api_key="k"))
        turn = await provider.turn(
            TurnRequest(system="s", messages=(Message.user_text("hi"),)), RecordingSink()
        )
        await provider.aclose()
    finally:
        server.shutdown()
        server.server_close()
    assert turn.content == (ToolCallBlock(id="c1", name="read_file", arguments={"path": "a"}),)
    assert turn.stop_reason == "tool_use"
