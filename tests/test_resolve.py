"""Model ids → providers: presets, [providers.NAME], base URLs, keys (env and keyring), defaults."""

from __future__ import annotations

import types

import keyring
import pytest
from click.testing import CliRunner
from keyring.backend import KeyringBackend
from provider_fixtures import FAKE_KEY, FakeProviderServer, RecordingSink, text, turn

from mermaid_cli.cli.providers import login_command, logout_command
from mermaid_cli.config.sections.providers import PriceSettings, ProviderSettings, ProviderToolsSettings
from mermaid_cli.core.errors import ConfigError, ProviderError, UsageError
from mermaid_cli.core.types import Message, TurnRequest
from mermaid_cli.providers.anthropic import AnthropicProvider
from mermaid_cli.providers.openai_chat import OpenAIChatProvider
from mermaid_cli.providers.openai_responses import OpenAIResponsesProvider
from mermaid_cli.providers.resolve import create_provider, default_model
from mermaid_cli.security import keys

NO_KR = {"MERMAID_NO_KEYRING": "1"}


def settings(
    providers: dict | None = None, model: str | None = None, native: bool = True
) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        providers={k: ProviderSettings(**v) for k, v in (providers or {}).items()},
        pricing={},
        tools=ProviderToolsSettings(provider_native=native),
        model=model,
    )


class MemoryKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        del self.store[(service, username)]


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


def test_builtin_providers_resolve_to_their_protocol_and_endpoint() -> None:
    env = {
        **NO_KR,
        "ANTHROPIC_API_KEY": "a-key",
        "OPENAI_API_KEY": "o-key",
        "GROQ_API_KEY": "g",
        "XAI_API_KEY": "x",
        "GEMINI_API_KEY": "gm",
    }
    p = create_provider("anthropic/claude-sonnet-4-6", settings(), env)
    assert isinstance(p, AnthropicProvider) and p.url == "https://api.anthropic.com/v1/messages"
    assert p.model_id == "anthropic/claude-sonnet-4-6" and p.endpoint.api_key == "a-key"
    p = create_provider("openai/gpt-5", settings(), env)
    assert isinstance(p, OpenAIResponsesProvider) and p.url == "https://api.openai.com/v1/responses"
    p = create_provider("grok/grok-4", settings(), env)
    assert (
        isinstance(p, OpenAIChatProvider)
        and p.url == "https://api.x.ai/v1/chat/completions"
        and p.endpoint.api_key == "x"
    )
    p = create_provider("gemini/gemini-2.5-pro", settings(), env)
    assert (
        p.url == "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"
        and p.endpoint.api_key == "gm"
    )
    p = create_provider(
        "openrouter/anthropic/claude-sonnet-4.5", settings(), {**env, "OPENROUTER_API_KEY": "r"}
    )
    assert p.endpoint.model == "anthropic/claude-sonnet-4.5" and p.url.startswith(
        "https://openrouter.ai/api/v1"
    )
    p = create_provider("ollama/qwen3:8b", settings(), NO_KR)
    assert p.url == "http://localhost:11434/v1/chat/completions" and p.endpoint.api_key is None


def test_base_url_env_and_custom_providers() -> None:
    env = {
        **NO_KR,
        "ANTHROPIC_API_KEY": "k",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9999/",
        "OPENAI_API_KEY": "k",
        "OPENAI_BASE_URL": "https://proxy.example/v1",
    }
    assert create_provider("anthropic/m", settings(), env).url == "http://127.0.0.1:9999/v1/messages"
    assert create_provider("openai/m", settings(), env).url == "https://proxy.example/v1/responses"
    cfg = settings(
        {
            "vllm": {"base_url": "http://localhost:8000/v1"},
            "corp": {
                "base_url": "https://llm.corp.example/v1",
                "api_key_env": "CORP_KEY",
                "api": "responses",
                "extra_headers": {"X-Team": "ci"},
            },
        },
        native=False,
    )
    p = create_provider("vllm/Qwen/Qwen3-32B", cfg, NO_KR)
    assert (
        isinstance(p, OpenAIChatProvider)
        and p.endpoint.model == "Qwen/Qwen3-32B"
        and p.endpoint.api_key is None
    )
    p = create_provider("corp/big", cfg, {**NO_KR, "CORP_KEY": "ck"})
    assert (
        isinstance(p, OpenAIResponsesProvider)
        and p.headers()["X-Team"] == "ci"
        and p.endpoint.native_tools is False
    )


@pytest.mark.parametrize("url", ["http://api.example.com/v1", "http://192.168.1.5:8000/v1", "ftp://x/v1"])
def test_non_loopback_base_url_must_be_https(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        create_provider("corp/m", _with_url(url), NO_KR)
    assert info.value.exit_code == 2 and url in info.value.message


def _with_url(url: str) -> types.SimpleNamespace:
    cfg = settings()
    cfg.providers = {
        "corp": ProviderSettings.model_construct(
            base_url=url, api_key_env=None, api=None, extra_headers={}, default_model=None
        )
    }
    return cfg


def test_http_base_url_from_env_is_refused_too() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_BASE_URL"):
        create_provider(
            "anthropic/m",
            settings(),
            {**NO_KR, "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://evil.example"},
        )


def test_missing_key_names_the_variable_and_login() -> None:
    with pytest.raises(ProviderError) as info:
        create_provider("anthropic/claude-sonnet-4-6", settings(), NO_KR)
    assert info.value.exit_code == 5
    assert "ANTHROPIC_API_KEY" in info.value.message and "mermaid login anthropic" in info.value.message
    with pytest.raises(ProviderError, match="GOOGLE_API_KEY or GEMINI_API_KEY"):
        create_provider("gemini/x", settings(), NO_KR)
    with pytest.raises(ProviderError, match="mermaid login xai"):
        create_provider("grok/x", settings(), NO_KR)


def test_api_key_env_is_authoritative(memory_keyring) -> None:
    memory_keyring.set_password("mermaid", "corp", "from-keyring")
    cfg = settings({"corp": {"base_url": "https://llm.example/v1", "api_key_env": "CORP_KEY"}})
    with pytest.raises(ProviderError) as info:
        create_provider("corp/m", cfg, {})
    assert "CORP_KEY" in info.value.message and "login" not in info.value.message


@pytest.mark.parametrize("bad", ["claude-sonnet", "/m", "anthropic/", "nosuch/model"])
def test_bad_model_ids_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError) as info:
        create_provider(bad, settings(), NO_KR)
    assert info.value.exit_code == 2 and bad in info.value.message


def test_keyring_fills_gaps_but_env_wins(memory_keyring) -> None:
    memory_keyring.set_password("mermaid", "anthropic", "kr-key")
    assert create_provider("anthropic/m", settings(), {}).endpoint.api_key == "kr-key"
    assert (
        create_provider("anthropic/m", settings(), {"ANTHROPIC_API_KEY": "env-key"}).endpoint.api_key
        == "env-key"
    )
    with pytest.raises(ProviderError):
        create_provider("anthropic/m", settings(), NO_KR)
    assert keys.lookup_key("anthropic", ("ANTHROPIC_API_KEY",), {}) == ("kr-key", "keyring")


def test_default_model_order() -> None:
    assert default_model(settings(model="openai/gpt-4.1"), {}) == "openai/gpt-4.1"
    assert default_model(settings(), {**NO_KR, "OPENAI_API_KEY": "k", "GROQ_API_KEY": "g"}) == "openai/gpt-5"
    assert (
        default_model(settings(), {**NO_KR, "OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "a"})
        == "anthropic/claude-sonnet-4-6"
    )
    cfg = settings({"groq": {"default_model": "llama-3.3-70b-versatile"}})
    assert default_model(cfg, {**NO_KR, "GROQ_API_KEY": "g"}) == "groq/llama-3.3-70b-versatile"
    custom = settings(
        {"corp": {"base_url": "https://x.example/v1", "api_key_env": "CORP_KEY", "default_model": "big"}}
    )
    assert default_model(custom, {**NO_KR, "CORP_KEY": "c"}) == "corp/big"
    with pytest.raises(ProviderError) as info:
        default_model(settings(), NO_KR)
    assert (
        info.value.exit_code == 5
        and "ANTHROPIC_API_KEY" in info.value.message
        and "mermaid login" in info.value.message
    )


def test_default_model_from_keyring(memory_keyring) -> None:
    memory_keyring.set_password("mermaid", "openai", "k")
    assert default_model(settings(), {}) == "openai/gpt-5"


def test_login_and_logout_commands(memory_keyring) -> None:
    runner = CliRunner(env={"MERMAID_NO_KEYRING": ""})
    result = runner.invoke(login_command, ["anthropic"], input="sk-test-123\n")
    assert result.exit_code == 0, result.output
    assert memory_keyring.get_password("mermaid", "anthropic") == "sk-test-123"
    assert "sk-test-123" not in result.output
    result = runner.invoke(login_command, ["grok"], input="xk\n")
    assert memory_keyring.get_password("mermaid", "xai") == "xk"
    result = runner.invoke(logout_command, ["anthropic"])
    assert result.exit_code == 0 and memory_keyring.get_password("mermaid", "anthropic") is None
    result = runner.invoke(logout_command, ["anthropic"])
    assert "no stored key" in result.output


def test_login_with_keyring_disabled_is_a_clear_error() -> None:
    result = CliRunner().invoke(login_command, ["anthropic"], input="k\n", env={"MERMAID_NO_KEYRING": "1"})
    assert result.exit_code == 2 and "MERMAID_NO_KEYRING" in result.output


async def test_created_provider_talks_to_the_fake_server_and_typo_url_fails_clearly() -> None:
    with FakeProviderServer([turn(text("hello"))]) as server:
        env = {**NO_KR, "ANTHROPIC_API_KEY": FAKE_KEY, "ANTHROPIC_BASE_URL": server.url}
        provider = create_provider("anthropic/claude-haiku-4-5", settings(), env, deadline=None)
        result = await provider.turn(
            TurnRequest(system="s", messages=(Message.user_text("hi"),)), RecordingSink()
        )
        await provider.aclose()
        assert server.requests[0]["headers"]["x-api-key"] == FAKE_KEY
        typo = server.url.rsplit(":", 1)[0] + ":1"  # a port nothing listens on
    assert result.message.text == "hello"
    provider = create_provider("anthropic/m", settings(), {**env, "ANTHROPIC_BASE_URL": typo})
    with pytest.raises(ProviderError) as info:
        await provider.turn(TurnRequest(system="s", messages=(Message.user_text("hi"),)), RecordingSink())
    assert typo in info.value.message and info.value.exit_code == 5 and FAKE_KEY not in info.value.message


def test_settings_sections_validate() -> None:
    with pytest.raises(ValueError):
        ProviderSettings(base_url="localhost:8000")
    with pytest.raises(ValueError):
        ProviderSettings(api="grpc")
    with pytest.raises(ValueError):
        ProviderSettings(bogus=1)
    assert PriceSettings(input=1, output=2).cache_read is None
    assert ProviderToolsSettings().provider_native is True


def test_provider_modules_import_no_heavy_packages() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import mermaid_cli.providers.resolve, mermaid_cli.providers.pricing, mermaid_cli.security.keys, mermaid_cli.cli.providers\n"
        "import mermaid_cli.providers.anthropic, mermaid_cli.providers.openai_responses, mermaid_cli.providers.openai_chat\n"
        "print(sorted(m for m in ('httpx', 'keyring', 'anthropic', 'openai', 'rich') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:8080/v1",
        "http://127.0.0.2:1/v1",
        "http://[::1]:8000/v1",
        "https://api.example.com/v1",
    ],
)
def test_loopback_http_and_any_https_are_accepted(url: str) -> None:
    assert create_provider("corp/m", _with_url(url), NO_KR).endpoint.base_url == url.rstrip("/")


def test_recordings_keep_reasoning_items_and_native_calls(tmp_path) -> None:
    from mermaid_cli.core.types import ModelTurn, ReasoningBlock, ToolCallBlock, Usage
    from mermaid_cli.store.recordings import Recorder, load_turns

    turn_ = ModelTurn(
        content=(
            ReasoningBlock(
                text="sum",
                provider="openai",
                item={"type": "reasoning", "id": "rs_1", "encrypted_content": "enc", "summary": []},
            ),
            ReasoningBlock(redacted="opaque", provider="anthropic"),
            ToolCallBlock(
                id="p",
                name="apply_patch",
                arguments={"patch": "*** Begin Patch\n*** End Patch\n"},
                native={
                    "provider": "openai",
                    "item": {
                        "type": "apply_patch_call",
                        "call_id": "p",
                        "operation": {"type": "delete_file", "path": "x"},
                    },
                },
            ),
        ),
        stop_reason="tool_use",
        usage=Usage(input_tokens=1, cache_read_input_tokens=2),
    )
    path = tmp_path / "rec.jsonl"
    recorder = Recorder(path, "openai/gpt-5", "2026-01-01T00:00:00Z")
    recorder.record(turn_)
    recorder.close()
    assert load_turns(path)[1] == [turn_]
