"""Everything about a model id: presets, `[providers.NAME]`, keys, the model's facts, `replay/FILE`.

`resolve_model` turns the configured id (or the default one) into a `ResolvedModel`: the ready
Provider plus what the run needs to know about the model (price, context window, output limit,
vision, the secrets to redact, the recorded model of a replay). `create_provider` does no I/O
beyond reading keys (environment, then the OS keyring); the HTTP client is created on the first
request. The model part is passed to the vendor verbatim
(`openrouter/anthropic/claude-sonnet-4.5` → model `anthropic/claude-sonnet-4.5`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mermaid_cli.core.errors import ConfigError, ProviderError, UsageError
from mermaid_cli.core.types import Usage
from mermaid_cli.providers import early
from mermaid_cli.providers.base import Provider
from mermaid_cli.providers.http1 import base_url_problem
from mermaid_cli.providers.models import UNKNOWN_MAX_OUTPUT, ModelFacts, Price, facts_for
from mermaid_cli.security.keys import env_key_name, lookup_key

if TYPE_CHECKING:
    from mermaid_cli.config.loader import Settings

REPLAY_PREFIX = "replay/"


@dataclass(frozen=True)
class Preset:
    """A known provider: its API, endpoint and where its key comes from."""

    api: str  # anthropic | responses | chat
    base_url: str
    key_env: tuple[str, ...]
    base_url_env: str | None = None
    default_model: str | None = None
    key_required: bool = True


PRESETS: dict[str, Preset] = {
    "anthropic": Preset(
        "anthropic",
        "https://api.anthropic.com",
        ("ANTHROPIC_API_KEY",),
        "ANTHROPIC_BASE_URL",
        "claude-sonnet-4-6",
    ),
    "openai": Preset(
        "responses", "https://api.openai.com/v1", ("OPENAI_API_KEY",), "OPENAI_BASE_URL", "gpt-5"
    ),
    "gemini": Preset(
        "chat",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        None,
        "gemini-2.5-pro",
    ),
    "groq": Preset("chat", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",), None, "openai/gpt-oss-120b"),
    "xai": Preset("chat", "https://api.x.ai/v1", ("XAI_API_KEY",), None, "grok-4"),
    "openrouter": Preset(
        "chat", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",), None, "anthropic/claude-sonnet-4.5"
    ),
    "nvidia": Preset("chat", "https://integrate.api.nvidia.com/v1", ("NVIDIA_API_KEY",)),
    "ollama": Preset("chat", "http://localhost:11434/v1", ("OLLAMA_API_KEY",), key_required=False),
    # Claude on Google Vertex AI: an OAuth token from google-auth, no key (providers/vertex.py)
    "vertex": Preset("vertex", "", (), "ANTHROPIC_VERTEX_BASE_URL", "claude-sonnet-4-5@20250929", False),
    # Claude on Amazon Bedrock: SigV4 from botocore's credential chain, or a Bedrock API key
    # (AWS_BEARER_TOKEN_BEDROCK) as a bearer token (providers/bedrock.py)
    "bedrock": Preset(
        "bedrock",
        "",
        ("AWS_BEARER_TOKEN_BEDROCK",),
        "ANTHROPIC_BEDROCK_BASE_URL",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        False,
    ),
}
ALIASES = {"grok": "xai"}
#: the order in which a default model is looked for
DEFAULT_ORDER = ("anthropic", "openai", "gemini", "groq", "xai", "openrouter", "nvidia")


def canonical(provider: str) -> str:
    return ALIASES.get(provider, provider)


def split_model_id(model_id: str) -> tuple[str, str]:
    provider, sep, model = model_id.partition("/")
    if not sep or not provider or not model:
        raise UsageError(
            f"model id {model_id!r} is not provider/model (e.g. anthropic/claude-sonnet-4-6, openai/gpt-5)"
        )
    return provider, model


def check_base_url(url: str, where: str) -> str:
    """`url` without a trailing slash; ConfigError when it may not be a base URL (`base_url_problem`)."""
    problem = base_url_problem(url)
    if problem is not None:
        raise ConfigError(problem, source=where)
    return url.rstrip("/")


def _providers(settings: Settings) -> Mapping[str, Any]:
    return getattr(settings, "providers", None) or {}


def _user_section(settings: Settings, provider: str) -> Any:
    providers = _providers(settings)
    return providers.get(provider) or providers.get(canonical(provider))


def _native(settings: Settings) -> bool:
    tools = getattr(settings, "tools", None)
    value = getattr(tools, "provider_native", True)
    return bool(value) if value is not None else True


def missing_key_message(provider: str, env_vars: tuple[str, ...], authoritative: bool) -> str:
    names = " or ".join(env_vars)
    if authoritative:
        return f"no API key for {provider}: set {names} ([providers.{provider}] api_key_env)"
    return f"no API key for {provider}: set {names}, or run `mermaid login {canonical(provider)}`"


def create_provider(
    model_id: str, settings: Settings, env: Mapping[str, str], *, deadline: float | None = None
) -> Provider:
    """A Provider for `model_id`. UsageError/ConfigError (exit 2) for a bad id or base URL,
    ProviderError (exit 5) when the key is missing. `deadline` is a time.monotonic() value."""
    from mermaid_cli.providers.http import Endpoint

    provider, model = split_model_id(model_id)
    name = canonical(provider)
    user = _user_section(settings, provider)
    preset = PRESETS.get(name)
    if user is None and preset is None:
        known = ", ".join(sorted([*PRESETS, *ALIASES]))
        raise UsageError(
            f"unknown provider {provider!r} in model id {model_id!r}: use one of {known}, "
            f"or declare [providers.{provider}] with base_url"
        )
    api = (user.api if user is not None else None) or (preset.api if preset else "chat")
    base_url = user.base_url if user is not None else None
    where = f"[providers.{provider}] base_url"
    if api == "vertex" and base_url is None:
        from mermaid_cli.providers.vertex import vertex_base_url, vertex_location

        project, region = vertex_location(env)
        base_url, where = vertex_base_url(env, region), "ANTHROPIC_VERTEX_BASE_URL"
    if api == "bedrock" and base_url is None:
        from mermaid_cli.providers.bedrock import bedrock_base_url, bedrock_region

        base_url, where = bedrock_base_url(env, bedrock_region(env)), "ANTHROPIC_BEDROCK_BASE_URL"
    base_url_var = None
    if base_url is None and preset is not None:
        if preset.base_url_env and env.get(preset.base_url_env, "").strip():
            base_url, where = env[preset.base_url_env].strip(), preset.base_url_env
            base_url_var = preset.base_url_env
        else:
            base_url = preset.base_url
    if not base_url:
        raise ConfigError(f"[providers.{provider}] needs base_url", source="config")
    base_url = check_base_url(base_url, where)

    key: str | None = None
    key_vars: tuple[str, ...] = ()
    if user is not None and user.api_key_env:
        key_vars = (user.api_key_env,)
        key, _ = lookup_key(name, key_vars, env, authoritative=True)
        if key is None:
            raise ProviderError(missing_key_message(provider, (user.api_key_env,), True), code="auth")
    elif preset is not None:
        key_vars = preset.key_env
        key, _ = lookup_key(name, key_vars, env, authoritative=not preset.key_required)
        if key is None and preset.key_required:
            raise ProviderError(missing_key_message(provider, preset.key_env, False), code="auth")
    # where this endpoint's base URL and key came from: all the early first request may fill in
    early.note_endpoint(base_url, base_url_var, env_key_name(key_vars, env) if key else None, key)

    headers = tuple(sorted((user.extra_headers or {}).items())) if user is not None else ()
    other_secrets: tuple[str, ...] = ()
    if api == "bedrock":
        from mermaid_cli.providers import bedrock

        if key is None and not bedrock.botocore_installed():
            raise ConfigError(
                f"bedrock needs botocore to sign requests: {bedrock.INSTALL_HINT} "
                f"(or set {bedrock.BEARER_ENV} to a Bedrock API key)"
            )
        other_secrets = bedrock.bedrock_secrets(env)
    endpoint = Endpoint(
        facts=model_facts(model_id, settings),
        provider=provider,
        model=model,
        base_url=base_url,
        api_key=key,
        extra_headers=headers,
        native_tools=_native(settings),
        deadline=deadline,
        other_secrets=other_secrets,
    )
    if api == "bedrock":
        from mermaid_cli.providers.bedrock import BedrockAnthropicProvider, bedrock_region

        return BedrockAnthropicProvider(endpoint, region=bedrock_region(env), profile=env.get("AWS_PROFILE"))
    if api == "vertex":
        from mermaid_cli.providers.vertex import VertexAnthropicProvider, vertex_location

        project, region = vertex_location(env)
        return VertexAnthropicProvider(endpoint, project=project, region=region)
    if api == "anthropic":
        from mermaid_cli.providers.anthropic import AnthropicProvider

        return AnthropicProvider(endpoint)
    if api == "responses":
        from mermaid_cli.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(endpoint)
    from mermaid_cli.providers.openai_chat import OpenAIChatProvider

    return OpenAIChatProvider(endpoint)


def model_facts(model_id: str, settings: Settings) -> ModelFacts:
    """The table's row for `model_id` with the config's `[models]` and `[pricing]` applied."""
    provider, _, model = model_id.partition("/")
    if canonical(provider) == "vertex" and not _in_config(settings, model_id):
        # Vertex names Claude models `claude-sonnet-4-5@20250929`: the Anthropic row's facts
        model_id = f"anthropic/{model.split('@', 1)[0]}"
    models, pricing = getattr(settings, "models", None) or {}, getattr(settings, "pricing", None) or {}
    if canonical(provider) == "bedrock" and model_id not in models:
        # `us.anthropic.claude-sonnet-4-5-20250929-v1:0`: the Anthropic row of the same model; a
        # `[pricing]` row for the Bedrock id (a regional endpoint's price) replaces only its price
        from mermaid_cli.providers.bedrock import table_model

        first = f"anthropic/{table_model(model)}"
        if model_id in pricing:
            pricing = {**pricing, first: pricing[model_id]}
        return facts_for(first, models, pricing)
    return facts_for(model_id, models, pricing)


def _in_config(settings: Settings, model_id: str) -> bool:
    tables = (getattr(settings, "models", None) or {}, getattr(settings, "pricing", None) or {})
    return any(model_id in t for t in tables)


@dataclass(frozen=True)
class ResolvedModel:
    """A model ready for a run: its client and the facts the run plans with."""

    provider: Provider
    #: the id the run reports (`provider/model`, or `replay/FILE`)
    model_id: str
    facts: ModelFacts
    #: values the run must redact from every output (the API key)
    secrets: tuple[str, ...] = ()
    #: the model a replay's recording was made with (its facts and price are that model's)
    recorded_model: str | None = None
    #: things the user should know (an unknown model gets safe defaults, not guesses)
    warnings: tuple[str, ...] = ()

    @property
    def price(self) -> Price | None:
        return self.facts.price

    @property
    def context_window(self) -> int:
        return self.facts.context_window

    @property
    def max_output(self) -> int:
        return self.facts.max_output

    @property
    def vision(self) -> bool:
        return self.facts.vision

    def cost(self, usage: Usage) -> float | None:
        from mermaid_cli.providers.pricing import turn_cost

        return turn_cost(self.facts, usage)


def unknown_model_warning(model_id: str) -> str:
    return (
        f"model {model_id} is not in Mermaid's model table: no reasoning parameters are sent, output is "
        f"capped at {UNKNOWN_MAX_OUTPUT} tokens where the API needs a cap, and the context window is taken "
        f'as 128000; describe it in [models."{model_id}"] (and [pricing."{model_id}"])'
    )


def resolve_model(
    model_id: str | None,
    settings: Settings,
    env: Mapping[str, str],
    *,
    cwd: Path,
    deadline: Callable[[], float] | None = None,
) -> ResolvedModel:
    """The model for a run: `model_id`, else the config's, else the first provider with a key.

    `replay/FILE` (relative to `cwd`) serves a recording; it plans with the recorded model's facts.
    `deadline` gives the run's time.monotonic() deadline; it is asked only when a real provider
    is built (a replay has no network to retry). Errors as `create_provider`."""
    chosen = model_id or default_model(settings, env)
    if chosen.startswith(REPLAY_PREFIX):
        from mermaid_cli.providers.replay import ReplayProvider

        path = Path(chosen[len(REPLAY_PREFIX) :])
        replay = ReplayProvider(path if path.is_absolute() else cwd / path, chosen)
        recorded = replay.recorded_model
        facts = model_facts(recorded, settings) if recorded else facts_for(chosen)
        return ResolvedModel(replay, chosen, facts, recorded_model=recorded)
    provider = create_provider(chosen, settings, env, deadline=deadline() if deadline else None)
    endpoint = getattr(provider, "endpoint", None)
    facts = endpoint.model_facts if endpoint is not None else model_facts(chosen, settings)
    secrets = tuple(endpoint.secrets) if endpoint is not None else ()
    warnings = () if facts.known else (unknown_model_warning(chosen),)
    return ResolvedModel(provider, chosen, facts, secrets=secrets, warnings=warnings)


def default_model(settings: Settings, env: Mapping[str, str]) -> str:
    """The config's `model`, else the first provider with a key (environment before keyring)."""
    configured = getattr(settings, "model", None)
    if configured:
        return str(configured)
    candidates: list[tuple[str, tuple[str, ...], bool, str | None]] = []
    for name in DEFAULT_ORDER:
        user = _user_section(settings, name)
        preset = PRESETS[name]
        if user is not None and user.api_key_env:
            candidates.append((name, (user.api_key_env,), True, user.default_model or preset.default_model))
        else:
            candidates.append(
                (name, preset.key_env, False, (user.default_model if user else None) or preset.default_model)
            )
    for name, section in _providers(settings).items():
        if canonical(name) not in PRESETS and section.api_key_env and section.default_model:
            candidates.append((name, (section.api_key_env,), True, section.default_model))
    # Environment first for every provider, so a keyring never overrides an explicit variable.
    for use_keyring in (False, True):
        for name, env_vars, authoritative, model in candidates:
            if model is None or (use_keyring and authoritative):
                continue
            if use_keyring:
                key, _ = lookup_key(name, (), env)
            else:
                key = next((env[v] for v in env_vars if env.get(v, "").strip()), None)
            if key:
                return f"{name}/{model}"
    raise ProviderError(
        "no model given and no provider key found: set ANTHROPIC_API_KEY or OPENAI_API_KEY "
        "(or GOOGLE_API_KEY, GROQ_API_KEY, XAI_API_KEY, OPENROUTER_API_KEY), run `mermaid login anthropic`, "
        "or pass --model provider/model",
        code="auth",
    )
