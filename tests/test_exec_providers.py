"""`mermaid exec` end to end against the fake provider server over the real wire protocols."""

from __future__ import annotations

import json

import pytest
from conftest import run_inprocess, run_mermaid
from provider_fixtures import FAKE_KEY, FakeProviderServer, fake_env

WRITE_THEN_ANSWER = [
    {"type": "turn", "content": [
        {"type": "text", "text": "Writing it."},
        {"type": "tool_call", "id": "call_1", "name": "write_file", "arguments": {"path": "hello.txt", "content": "hi\n"}},
    ], "stop_reason": "tool_use", "usage": {"input_tokens": 900, "output_tokens": 40}},
    {"type": "turn", "content": [{"type": "text", "text": "Done: hello.txt says hi."}], "stop_reason": "stop",
     "usage": {"input_tokens": 1000, "output_tokens": 12}},
]

MODELS = ["anthropic/claude-sonnet-4-5", "openai/gpt-5", "groq/llama-3.3-70b"]


def _env(server, model):
    env = fake_env(server)
    if model.startswith("groq/"):
        env["GROQ_API_KEY"] = FAKE_KEY
    return env


@pytest.mark.parametrize("model", MODELS)
def test_exec_against_each_protocol(project, model, isolated_env):
    if model.startswith("groq/"):  # an OpenAI-compatible server declared in config
        cfg = isolated_env / "config" / "config.toml"
        cfg.parent.mkdir(parents=True, exist_ok=True)
    with FakeProviderServer(WRITE_THEN_ANSWER) as server:
        env = _env(server, model)
        if model.startswith("groq/"):
            cfg.write_text(f'[providers.groq]\nbase_url = "{server.url}/v1"\napi = "chat"\n')
        out = run_inprocess(["--json", "--model", model, "create hello.txt"], project, env=env)
        assert out.code == 0, out.stderr
        assert (project / "hello.txt").read_text() == "hi\n"
        assert out.events[-1]["response"] == "Done: hello.txt says hi."
        assert out.events[0]["model"] == model
        texts = "".join(e["delta"] for e in out.events if e["type"] == "text")
        assert texts == "Writing it.Done: hello.txt says hi."
        assert FAKE_KEY not in out.stdout and FAKE_KEY not in out.stderr
        sessions = "".join(p.read_text() for p in (project / ".mermaid/conversations").glob("*.jsonl"))
        assert FAKE_KEY not in sessions
        # the tool result went back to the model on the second request
        assert FAKE_KEY not in json.dumps(server.requests[1]["body"])
        assert "Wrote hello.txt" in json.dumps(server.requests[1]["body"])


def test_priced_model_reports_cost(project):
    with FakeProviderServer(WRITE_THEN_ANSWER) as server:
        out = run_inprocess(["--json", "--model", "anthropic/claude-sonnet-4-5", "go"], project, env=fake_env(server))
    assert out.events[-1]["cost_usd"] is not None and out.events[-1]["cost_usd"] > 0
    assert all(e["cost_usd"] is not None for e in out.events if e["type"] == "turn_done")


def test_retry_after_429_is_an_error_event_and_succeeds(project):
    script = [{"type": "fault", "kind": "http_429", "retry_after": 0.05}, *WRITE_THEN_ANSWER]
    with FakeProviderServer(script) as server:
        out = run_inprocess(["--json", "--model", "anthropic/claude-sonnet-4-5", "go"], project, env=fake_env(server))
    assert out.code == 0
    retries = [e for e in out.events if e["type"] == "error"]
    assert retries and retries[0]["retryable"] is True


def test_auth_failure_is_exit_5_subprocess(project):
    script = [{"type": "fault", "kind": "auth_401"}, *WRITE_THEN_ANSWER]
    with FakeProviderServer(script) as server:
        out = run_mermaid(["exec", "--json", "--model", "anthropic/claude-sonnet-4-5", "go"], project, env=fake_env(server))
    assert out.code == 5 and out.events[-1]["status"] == "provider_error"
    assert FAKE_KEY not in out.stdout + out.stderr


def test_missing_key_is_exit_5_naming_the_variable(project):
    out = run_mermaid(["exec", "--json", "--model", "anthropic/claude-sonnet-4-5", "go"], project)
    assert out.code == 5 and "ANTHROPIC_API_KEY" in out.events[-1]["errors"][-1]


def test_connection_refused_is_exit_5_with_the_url(project):
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": FAKE_KEY}
    out = run_mermaid(["exec", "--json", "--model", "anthropic/claude-sonnet-4-5", "go"], project, env=env)
    assert out.code == 5 and "127.0.0.1:9" in out.events[-1]["errors"][-1]


def test_default_model_comes_from_the_key_present(project):
    with FakeProviderServer(WRITE_THEN_ANSWER) as server:
        env = {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": FAKE_KEY}
        out = run_inprocess(["--json", "go"], project, env=env)
    assert out.code == 0 and out.events[0]["model"].startswith("openai/")


def test_a_slow_model_call_gets_a_heartbeat_on_stderr_and_q_silences_progress(project):
    script = [{"type": "fault", "kind": "slow_first_byte", "delay": 2.5}, *WRITE_THEN_ANSWER]
    env_hb = {"MERMAID_HEARTBEAT_SECS": "1"}
    with FakeProviderServer(script) as server:
        out = run_mermaid(
            ["exec", "--model", "anthropic/claude-sonnet-4-5", "go"], project, env={**fake_env(server), **env_hb}
        )
    assert out.code == 0, out.stderr
    beats = [line for line in out.stderr.splitlines() if "waiting for anthropic/claude-sonnet-4-5" in line]
    assert 1 <= len(beats) <= 3, out.stderr
    assert "session: " in out.stderr
    with FakeProviderServer(script) as server:
        quiet = run_mermaid(
            ["exec", "-q", "--model", "anthropic/claude-sonnet-4-5", "go"], project, env={**fake_env(server), **env_hb}
        )
    assert quiet.code == 0, quiet.stderr
    assert quiet.stderr == "", quiet.stderr  # -q: nothing but warnings and errors
    assert quiet.stdout == "Done: hello.txt says hi.\n"
