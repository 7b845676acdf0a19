"""Claude on Amazon Bedrock against a local stand-in (tests/bedrock_standin.py) that checks the
SigV4 signature with botocore, speaks binary event-stream frames and relays the conversation to
the fake provider: `mermaid exec` end to end (tool call, usage, cost, secrets), OIDC web identity
through a local STS, a Bedrock API key without botocore, stream exceptions, a corrupt frame, HTTP
errors, missing credentials and botocore, and the append-only request log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from bedrock_standin import AwsKeys, BedrockStandIn, chunk_frame, encode_frame, exception_frame, sts_standin
from conftest import RunOutput, run_inprocess, run_mermaid
from provider_fixtures import FakeProviderServer, validate_anthropic_request

from mermaid_cli.config.sections.providers import ProviderToolsSettings
from mermaid_cli.core.errors import ProviderError
from mermaid_cli.providers import bedrock
from mermaid_cli.providers.eventstream import CorruptFrame, EventStreamDecoder
from mermaid_cli.providers.resolve import create_provider, model_facts
from mermaid_cli.security.childenv import scrubbed_env

pytest.importorskip("botocore")

REGION = "eu-west-3"
MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
MODEL = f"bedrock/{MODEL_ID}"
KEYS = AwsKeys(
    "AKIAABCDEFGHIJKLMNOP", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYsecretkey1", "IQoJb3JpZ2luX2Vj-session-tok"
)
BEARER = "ABSKQmVkcm9ja0FQSUtleS1fake-bedrock-api-key-0123456789"
SETTINGS = types.SimpleNamespace(
    providers={}, pricing={}, models={}, tools=ProviderToolsSettings(), model=None
)
# every variable botocore's chain reads, so the developer's own AWS setup never leaks in
AWS_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_SESSION_NAME",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_STS",
    "AWS_DEFAULT_REGION",
)
WRITE_THEN_ANSWER = [
    {
        "type": "turn",
        "content": [
            {"type": "text", "text": "Writing it."},
            {
                "type": "tool_call",
                "id": "toolu_1",
                "name": "write_file",
                "arguments": {"path": "hello.txt", "content": "hi\n"},
            },
        ],
        "usage": {"input_tokens": 900, "output_tokens": 40},
    },
    {
        "type": "turn",
        "content": [{"type": "text", "text": "Done: hello.txt says hi."}],
        "usage": {"input_tokens": 1000, "output_tokens": 12, "cache_read_input_tokens": 800},
    },
]


@pytest.fixture(autouse=True)
def no_aws(monkeypatch, tmp_path_factory):
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path_factory.mktemp("aws")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no 169.254.169.254 probe when none
    monkeypatch.setenv("AWS_REGION", REGION)


def _keys_env(standin: BedrockStandIn) -> dict[str, str]:
    return {
        "ANTHROPIC_BEDROCK_BASE_URL": standin.url,
        "AWS_ACCESS_KEY_ID": KEYS.access_key,
        "AWS_SECRET_ACCESS_KEY": KEYS.secret_key,
        "AWS_SESSION_TOKEN": KEYS.token or "",
    }


def _exec(project: Path, env: dict[str, str], *args: str, prelude: str = "") -> RunOutput:
    """The real CLI in a subprocess (botocore reads the process environment); `prelude` runs first."""
    argv = ["exec", "--json", "--model", MODEL, *args]
    if not prelude:
        return run_mermaid(argv, project, env=env)
    code = f"import sys\n{prelude}\nfrom mermaid_cli.cli.main import main\nsys.argv = ['mermaid', *{argv!r}]\nmain()\n"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    return RunOutput(done.returncode, done.stdout, done.stderr)


def _leaks(out: RunOutput, project: Path, *secrets: str) -> list[str]:
    sessions = "".join(p.read_text() for p in (project / ".mermaid").rglob("*.jsonl"))
    return [s for s in secrets if s in out.stdout or s in out.stderr or s in sessions]


# --- the frames ---------------------------------------------------------------------------------


def test_event_stream_frames_decode_like_botocore_and_in_any_pieces() -> None:
    from botocore.eventstream import EventStreamBuffer

    frames = [chunk_frame({"type": "ping"}), exception_frame("throttlingException", "slow down")]
    raw = b"".join(frames)
    reference = EventStreamBuffer()
    reference.add_data(raw)
    theirs = [(dict(m.headers), m.payload) for m in reference]
    decoder = EventStreamDecoder()
    ours = [(f.headers, f.payload) for i in range(len(raw)) for f in decoder.feed(raw[i : i + 1])]
    assert ours == theirs and len(ours) == 2 and decoder.pending == 0
    assert ours[1][0][":exception-type"] == "throttlingException"


@pytest.mark.parametrize(
    ("damage", "says"),
    [(8, "prelude CRC"), (-1, "message CRC"), (20, "message CRC")],
)
def test_a_damaged_frame_is_a_clear_provider_error(damage: int, says: str) -> None:
    frame = bytearray(encode_frame({":message-type": "event", ":event-type": "chunk"}, b'{"bytes": ""}'))
    frame[damage] ^= 0x40
    with pytest.raises(CorruptFrame) as caught:
        list(EventStreamDecoder().feed(bytes(frame)))
    assert says in caught.value.message and caught.value.retryable


def test_an_impossible_length_is_refused_before_it_is_buffered() -> None:
    import struct
    import zlib

    prelude = struct.pack(">II", 8, 0)  # shorter than its own prelude
    with pytest.raises(CorruptFrame, match="a frame of 8 bytes"):
        list(EventStreamDecoder().feed(prelude + struct.pack(">I", zlib.crc32(prelude))))


# --- model ids and facts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "Claude Sonnet 4.5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "Claude Sonnet 4.5"),
        ("global.anthropic.claude-haiku-4-5-20251001-v1:0", "Claude Haiku 4.5"),
        ("eu.anthropic.claude-opus-4-5-20251101-v1:0", "Claude Opus 4.5"),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/apac.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "Claude Sonnet 4.5",
        ),
    ],
)
def test_bedrock_ids_plan_with_the_anthropic_row(model: str, family: str) -> None:
    facts = model_facts(f"bedrock/{model}", SETTINGS)  # type: ignore[arg-type]
    first_party = model_facts(f"anthropic/{bedrock.table_model(model)}", SETTINGS)  # type: ignore[arg-type]
    assert facts.known and facts.family == family and facts == first_party


# --- end to end ---------------------------------------------------------------------------------


def test_exec_signs_with_sigv4_and_runs_a_tool_call(project) -> None:
    with (
        FakeProviderServer(WRITE_THEN_ANSWER) as fake,
        BedrockStandIn(fake.url, region=REGION, keys=KEYS) as aws,
    ):
        out = _exec(project, _keys_env(aws), "create hello.txt")
        requests = list(aws.requests)
    assert out.code == 0, out.stderr + out.stdout
    assert (project / "hello.txt").read_text() == "hi\n"
    result = out.events[-1]
    assert result["response"] == "Done: hello.txt says hi."
    assert (
        "".join(e["delta"] for e in out.events if e["type"] == "text")
        == "Writing it.Done: hello.txt says hi."
    )
    assert result["usage"]["input_tokens"] == 1900 and result["usage"]["output_tokens"] == 52
    assert result["cost_usd"] is not None and result["cost_usd"] > 0
    assert len(requests) == 2 and [r["auth_error"] for r in requests] == [None, None]
    for request in requests:
        assert request["path"] == f"/model/{MODEL_ID}/invoke-with-response-stream"
        assert request["headers"]["x-amz-security-token"] == KEYS.token
        assert "x-api-key" not in request["headers"] and "anthropic-version" not in request["headers"]
        body = request["body"]
        assert list(body)[0] == "anthropic_version" and list(body)[-1] == "messages"
        assert body["anthropic_version"] == "bedrock-2023-05-31"
        validate_anthropic_request(
            {"model": MODEL_ID, "stream": True, **{k: v for k, v in body.items() if k != "anthropic_version"}}
        )
    assert "Wrote hello.txt" in json.dumps(requests[1]["body"]["messages"])
    assert requests[1]["body"]["messages"][:2] != [] and _strip(requests[1]["body"]["messages"])[
        :1
    ] == _strip(requests[0]["body"]["messages"])
    assert _leaks(out, project, KEYS.secret_key, KEYS.token or "") == []


def test_oidc_web_identity_credentials_come_from_sts(project, tmp_path) -> None:
    role, oidc = "arn:aws:iam::123456789012:role/ci-bedrock", "eyJhbGciOiJSUzI1NiJ9.github-oidc.sig"
    (tmp_path / "token").write_text(oidc)
    issued = AwsKeys("ASIAQWERTYUIOPASDFGH", "issued-secret-from-sts-0123456789", "issued-session-token-abc")
    with (
        sts_standin(issued, role, oidc) as (sts_url, calls),
        FakeProviderServer(WRITE_THEN_ANSWER) as fake,
        BedrockStandIn(fake.url, region=REGION, keys=issued) as aws,
    ):
        env = {
            "ANTHROPIC_BEDROCK_BASE_URL": aws.url,
            "AWS_ROLE_ARN": role,
            "AWS_WEB_IDENTITY_TOKEN_FILE": str(tmp_path / "token"),
            "AWS_ENDPOINT_URL_STS": sts_url,
        }
        out = _exec(project, env, "create hello.txt")
        requests = list(aws.requests)
    assert out.code == 0, out.stderr + out.stdout
    # one AssumeRoleWithWebIdentity for the run; both requests signed with what it issued
    assert [c["Action"] for c in calls] == ["AssumeRoleWithWebIdentity"]
    assert [r["auth_error"] for r in requests] == [None, None]
    assert _leaks(out, project, issued.secret_key, issued.token or "", oidc) == []


def test_a_bedrock_api_key_needs_no_botocore(project) -> None:
    with (
        FakeProviderServer(WRITE_THEN_ANSWER) as fake,
        BedrockStandIn(fake.url, region=REGION, bearer=BEARER) as aws,
    ):
        env = {"ANTHROPIC_BEDROCK_BASE_URL": aws.url, "AWS_BEARER_TOKEN_BEDROCK": BEARER}
        out = _exec(project, env, "create hello.txt", prelude="sys.modules['botocore'] = None")
        requests = list(aws.requests)
    assert out.code == 0, out.stderr + out.stdout
    assert [r["auth_error"] for r in requests] == [None, None]
    assert all("x-amz-date" not in r["headers"] for r in requests)
    assert _leaks(out, project, BEARER) == []


def test_without_botocore_sigv4_is_a_usage_error_naming_the_extra(project) -> None:
    env = {"AWS_ACCESS_KEY_ID": KEYS.access_key, "AWS_SECRET_ACCESS_KEY": KEYS.secret_key}
    out = _exec(project, env, "go", prelude="sys.modules['botocore'] = None")
    assert out.code == 2, out.stderr
    assert "mermaid-agent[bedrock]" in out.events[-1]["errors"][-1]
    assert "Traceback" not in out.stderr


def test_missing_credentials_is_a_clear_auth_error(project) -> None:
    out = _exec(project, {"ANTHROPIC_BEDROCK_BASE_URL": "http://127.0.0.1:9"}, "go")
    assert out.code == 5, out.stderr
    assert out.events[-1]["status"] == "provider_error"
    assert "no AWS credentials" in out.events[-1]["errors"][-1]
    assert "Traceback" not in out.stderr


def test_a_throttling_exception_frame_is_retried(project) -> None:
    with (
        FakeProviderServer(WRITE_THEN_ANSWER) as fake,
        BedrockStandIn(fake.url, region=REGION, keys=KEYS) as aws,
    ):
        aws.add_fault("exception", name="throttlingException", message="Too many tokens, please wait.")
        aws.add_fault("corrupt")
        out = _exec(project, _keys_env(aws), "create hello.txt")
    assert out.code == 0, out.stderr + out.stdout
    retries = [e for e in out.events if e["type"] == "error"]
    assert [e["retryable"] for e in retries] == [True, True]
    assert "throttlingException" in retries[0]["message"] and "CRC" in retries[1]["message"]


def test_a_validation_exception_frame_is_final(project) -> None:
    with (
        FakeProviderServer(WRITE_THEN_ANSWER) as fake,
        BedrockStandIn(fake.url, region=REGION, keys=KEYS) as aws,
    ):
        aws.add_fault("exception", name="validationException", message="messages.0: bad block")
        out = _exec(project, _keys_env(aws), "go")
        asked = len(aws.requests)
    assert out.code == 5 and asked == 1
    assert "validationException: messages.0: bad block" in out.events[-1]["errors"][-1]


@pytest.mark.parametrize(
    ("status", "name", "message", "kind"),
    [
        # too long: read as the context error (the loop compacts; a first turn has nothing to drop)
        (400, "ValidationException", "Input is too long for requested model.", "context_length"),
        (
            403,
            "AccessDeniedException",
            "You don't have access to the model with the specified model ID.",
            "auth",
        ),
        (400, "ValidationException", "max_tokens: 64001 > 64000", "ValidationException"),
    ],
)
def test_http_errors_read_the_bedrock_error_type(project, status, name, message, kind) -> None:
    with (
        FakeProviderServer(WRITE_THEN_ANSWER) as fake,
        BedrockStandIn(fake.url, region=REGION, keys=KEYS) as aws,
    ):
        aws.add_fault("http", status=status, name=name, message=message)
        out = _exec(project, _keys_env(aws), "go")
    assert out.code == 5, out.stderr
    assert f"{name}: {message}" in out.events[-1]["errors"][-1]
    errors = [e for e in out.events if e["type"] == "error"]
    assert [(e["code"], e["retryable"]) for e in errors] == [(kind, False)]


def test_a_throttled_http_reply_is_retried(project) -> None:
    with (
        FakeProviderServer(WRITE_THEN_ANSWER) as fake,
        BedrockStandIn(fake.url, region=REGION, keys=KEYS) as aws,
    ):
        aws.add_fault("http", status=429, name="ThrottlingException", message="Too many requests")
        out = _exec(project, _keys_env(aws), "create hello.txt")
    assert out.code == 0, out.stderr
    (retry,) = [e for e in out.events if e["type"] == "error"]
    assert retry["retryable"] and "ThrottlingException" in retry["message"]


# --- the request the SDK would send -------------------------------------------------------------


async def test_the_request_matches_the_anthropic_sdk(monkeypatch) -> None:
    sdk = pytest.importorskip("anthropic")
    from provider_fixtures import RecordingSink

    from mermaid_cli.core.types import Message, TurnRequest

    arn = "arn:aws:bedrock:eu-west-3:123456789012:application-inference-profile/abc123"
    with (
        FakeProviderServer([*WRITE_THEN_ANSWER] * 2) as fake,
        BedrockStandIn(fake.url, region=REGION, bearer=BEARER) as aws,
    ):
        env = {"ANTHROPIC_BEDROCK_BASE_URL": aws.url, "AWS_BEARER_TOKEN_BEDROCK": BEARER}
        provider = create_provider(f"bedrock/{arn}", SETTINGS, env)  # type: ignore[arg-type]
        await provider.turn(TurnRequest(system="s", messages=(Message.user_text("hi"),)), RecordingSink())
        await provider.aclose()
        client = sdk.AnthropicBedrock(api_key=BEARER, base_url=aws.url, aws_region=REGION)
        with client.messages.stream(
            model=arn, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as s:
            s.get_final_message()
        ours, theirs = aws.requests
    assert ours["path"] == theirs["path"] and "%2F" in ours["path"]
    assert ours["headers"]["authorization"] == theirs["headers"]["authorization"]
    assert "model" not in theirs["body"] and "stream" not in theirs["body"]
    # the SDK may send a newer `anthropic_version`; the documented value is ours
    assert ours["body"]["anthropic_version"] == "bedrock-2023-05-31"


# --- secrets ------------------------------------------------------------------------------------


def test_aws_credentials_never_reach_a_child_process() -> None:
    env = {
        "AWS_ACCESS_KEY_ID": "a",
        "AWS_SECRET_ACCESS_KEY": "b",
        "AWS_SESSION_TOKEN": "c",
        "AWS_BEARER_TOKEN_BEDROCK": "d",
        "AWS_WEB_IDENTITY_TOKEN_FILE": "/run/token",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://169.254.170.23/v1/credentials",
        "AWS_REGION": "us-east-1",
    }
    assert scrubbed_env(env).keys() & env.keys() == {"AWS_REGION"}


def test_the_provider_carries_the_aws_secrets_for_the_redactor() -> None:
    env = {"AWS_SECRET_ACCESS_KEY": KEYS.secret_key, "AWS_SESSION_TOKEN": KEYS.token or ""}
    provider = create_provider(MODEL, SETTINGS, env)  # type: ignore[arg-type]
    assert {KEYS.secret_key, KEYS.token} <= set(provider.endpoint.secrets)  # type: ignore[attr-defined]


def test_botocore_is_imported_only_to_sign_a_request() -> None:
    code = (
        "import sys, types\n"
        "from mermaid_cli.providers.resolve import create_provider\n"
        "from mermaid_cli.config.sections.providers import ProviderToolsSettings\n"
        "s = types.SimpleNamespace(providers={}, pricing={}, models={}, tools=ProviderToolsSettings(), model=None)\n"
        f"create_provider({MODEL!r}, s, {{}})\n"
        "assert 'botocore' not in sys.modules, 'imported before a request'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


async def test_an_unsigned_request_never_leaves(monkeypatch) -> None:
    from provider_fixtures import RecordingSink

    from mermaid_cli.core.types import Message, TurnRequest

    provider = create_provider(MODEL, SETTINGS, {"ANTHROPIC_BEDROCK_BASE_URL": "http://127.0.0.1:9"})  # type: ignore[arg-type]
    with pytest.raises(ProviderError) as caught:
        await provider.turn(TurnRequest(system="s", messages=(Message.user_text("hi"),)), RecordingSink())
    await provider.aclose()
    assert caught.value.code == "auth" and "AWS_WEB_IDENTITY_TOKEN_FILE" in caught.value.message


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def test_a_wrong_secret_key_is_refused_by_the_signature_check(project) -> None:
    with (
        FakeProviderServer(WRITE_THEN_ANSWER) as fake,
        BedrockStandIn(fake.url, region=REGION, keys=KEYS) as aws,
    ):
        env = {**_keys_env(aws), "AWS_SECRET_ACCESS_KEY": "not-the-secret-key-0123456789"}
        out = _exec(project, env, "go")
        (request,) = aws.requests
    assert request["auth_error"] == "the signature does not match"
    assert out.code == 5 and "InvalidSignatureException" in out.events[-1]["errors"][-1]


def test_every_request_extends_the_previous_one_on_bedrock(project, monkeypatch) -> None:
    """The Anthropic append-only run (images, refused native tools, a 500, a cut stream, a reply
    cut by the output limit, a --verify round, the --output-schema turn) through Bedrock."""
    from test_provider_append_only import IMAGES, PNG, _breakpoints, _script

    for name in IMAGES:
        (project / name).write_bytes(PNG)
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]}
    (project / "schema.json").write_text(json.dumps(schema))
    with (
        FakeProviderServer(_script("anthropic")) as fake,
        BedrockStandIn(fake.url, region=REGION, keys=KEYS) as aws,
    ):
        for name, value in _keys_env(aws).items():
            monkeypatch.setenv(name, value)  # botocore reads the process environment
        args = ["--json", "--model", MODEL, "--verify", "test -f ok.txt", "--output-schema", "schema.json"]
        out = run_inprocess([*args, "describe the five images"], project)
        requests = [r["body"] for r in aws.requests]
        upstream = [r["body"] for r in fake.requests]
    assert out.code == 0, out.stderr + out.stdout
    assert out.events[-1]["structured_output"] == {"verdict": "ok"}
    assert fake.remaining == 0 and all(r["auth_error"] is None for r in aws.requests)
    conversations = [_strip(body["messages"]) for body in requests]
    for n, (before, after) in enumerate(zip(conversations, conversations[1:], strict=False)):
        assert after[: len(before)] == before, f"request {n + 2} rewrote what request {n + 1} sent"
    assert all(body["system"] == requests[0]["system"] for body in requests)
    assert len({json.dumps(_strip(body.get("tools")), sort_keys=True) for body in requests[1:]}) == 1
    for body in upstream:  # what Bedrock hands the model is a valid Messages request
        validate_anthropic_request(body)
    for before, after in zip(requests, requests[1:], strict=False):
        i, j = _breakpoints(before["messages"])[0]
        assert _strip(after["messages"][i]["content"][j]) == _strip(before["messages"][i]["content"][j])
    assert requests[-1]["output_config"]["format"]["type"] == "json_schema"
    # the refused native tools (a Bedrock ValidationException) were left out from then on
    assert any("type" in t for t in requests[0]["tools"]) and not any(
        "type" in t for t in requests[1]["tools"]
    )


@pytest.mark.parametrize(
    ("env", "status", "says"),
    [
        (
            {"AWS_ACCESS_KEY_ID": KEYS.access_key, "AWS_SECRET_ACCESS_KEY": KEYS.secret_key},
            "ok",
            "AWS credentials: env",
        ),
        (
            {"AWS_ROLE_ARN": "arn:aws:iam::1:role/r", "AWS_WEB_IDENTITY_TOKEN_FILE": "/run/t"},
            "ok",
            "assume-role-with-web-identity",
        ),
        ({"AWS_BEARER_TOKEN_BEDROCK": BEARER}, "ok", "env AWS_BEARER_TOKEN_BEDROCK"),
        ({}, "fail", "no AWS credentials"),
        ({"AWS_PROFILE": "no-such-profile"}, "fail", "no-such-profile"),
    ],
)
def test_doctor_names_the_credential_source_never_a_value(project, env, status, says) -> None:
    out = run_mermaid(["doctor", "--json", "--model", MODEL], project, env=env)
    model = next(c for c in json.loads(out.stdout)["checks"] if c["name"] == "model")
    assert model["status"] == status and says in model["detail"], model
    assert KEYS.secret_key not in out.stdout + out.stderr and BEARER not in out.stdout + out.stderr


def test_betas_go_in_the_body_not_a_header() -> None:
    from mermaid_cli.config.sections.providers import ProviderSettings
    from mermaid_cli.core.types import Message, TurnRequest

    section = ProviderSettings(extra_headers={"anthropic-beta": "context-1m-2025-08-07"})
    settings = types.SimpleNamespace(**{**vars(SETTINGS), "providers": {"bedrock": section}})
    provider = create_provider(MODEL, settings, {"AWS_BEARER_TOKEN_BEDROCK": BEARER})  # type: ignore[arg-type]
    body = provider.build_body(TurnRequest(system="s", messages=(Message.user_text("hi"),)))  # type: ignore[attr-defined]
    assert body["anthropic_beta"] == ["context-1m-2025-08-07"] and list(body)[:2] == [
        "anthropic_version",
        "anthropic_beta",
    ]
    headers = provider.headers()  # type: ignore[attr-defined]
    assert "anthropic-beta" not in headers and headers["authorization"] == f"Bearer {BEARER}"
    assert headers["accept"] == "application/vnd.amazon.eventstream" and "x-api-key" not in headers


def test_a_pricing_row_for_the_bedrock_id_keeps_the_model_facts() -> None:
    from mermaid_cli.config.sections.providers import PriceSettings

    pricing = {MODEL: PriceSettings(input=3.3, output=16.5, cache_read=0.33, cache_write=4.125)}
    settings = types.SimpleNamespace(**{**vars(SETTINGS), "pricing": pricing})
    facts = model_facts(MODEL, settings)  # type: ignore[arg-type]
    row = model_facts(MODEL, SETTINGS)  # type: ignore[arg-type]
    assert (
        facts.family == "Claude Sonnet 4.5"
        and facts.thinking == row.thinking
        and facts.max_output == row.max_output
    )
    assert facts.price is not None and facts.price.input == 3.3 and facts.price.output == 16.5
