"""`mermaid doctor`: would a run work here, and with what? Reports sources of keys, never values."""

from __future__ import annotations

import os
import platform
import shutil
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mermaid_cli import __version__

if TYPE_CHECKING:
    from mermaid_cli.config.loader import Settings


Status = Literal["ok", "warn", "fail"]


@dataclass
class Check:
    """One line of `mermaid doctor`."""

    name: str
    status: Status
    detail: str


def run_checks(
    project_root: Path,
    env: Mapping[str, str],
    *,
    profile: str | None = None,
    overrides: list[str] | None = None,
    model: str | None = None,
    start_mcp: bool = False,
) -> list[Check]:
    from mermaid_cli.config.dirs import data_dir, user_config_dir
    from mermaid_cli.config.loader import load_settings
    from mermaid_cli.core.errors import MermaidError

    checks = [Check("mermaid", "ok", f"{__version__} on Python {platform.python_version()} ({sys.platform})")]
    try:
        loaded = load_settings(
            project_root=project_root,
            env=env,
            profile=profile,
            overrides=list(overrides or ()),
            flags={"model": model},
        )
    except MermaidError as exc:
        checks.append(Check("config", "fail", exc.message))
        return checks
    settings = loaded.settings
    files = ", ".join(loaded.files) or f"none (user config would be {user_config_dir(env) / 'config.toml'})"
    checks.append(Check("config", "ok", f"files: {files}"))
    for warning in loaded.warnings:
        checks.append(Check("config", "warn", warning))
    checks.append(_model_check(settings, env))
    from mermaid_cli.config.sections.safety import policy_digest

    safety = settings.safety
    checks.append(
        Check(
            "safety",
            "ok",
            f"mode {safety.mode}, {len(safety.overrides)} override rule(s), "
            f"network {safety.network}, policy digest {policy_digest(safety)[:12]}",
        )
    )
    checks.append(_sandbox_check(settings, env))
    from mermaid_cli.run.assemble import build_registry

    registry = build_registry(settings, env, interactive=False)
    checks.append(Check("tools", "ok", ", ".join(registry.names())))
    from mermaid_cli.tools.catalog_web import web_search_status

    status = web_search_status(settings, env, network_allowed=safety.network != "deny")
    checks.append(Check("web_search", "ok" if "not available" not in status else "warn", status))
    from mermaid_cli.tools.catalog_computer import computer_status

    usable, line = computer_status(settings, env)
    checks.append(Check("computer", "ok" if usable else "warn", line))
    if safety.network != "deny":
        from mermaid_cli.integrations.web.extract import readability_status

        problem = readability_status()
        checks.append(
            Check(
                "web_fetch",
                "warn" if problem else "ok",
                problem or "HTML pages: main-content extraction (trafilatura)",
            )
        )
    rg = shutil.which("rg")
    checks.append(
        Check("ripgrep", "ok" if rg else "warn", rg or "rg not on PATH: grep uses the slower Python walker")
    )
    git = shutil.which("git")
    checks.append(
        Check("git", "ok" if git else "warn", git or "git not on PATH: --diff-out compares file copies")
    )
    checks.extend(_mcp_checks(settings, start_mcp))
    from mermaid_cli.extensions.session import doctor_report

    checks.extend(Check(name, status, detail) for name, status, detail in doctor_report(settings, project_root, env))
    data = data_dir(env)
    checks.append(
        Check(
            "data dir",
            "ok",
            f"{data} (checkpoints); sessions in {project_root / '.mermaid' / 'conversations'}",
        )
    )
    return checks


def _model_check(settings: Settings, env: Mapping[str, str]) -> Check:
    from mermaid_cli.core.errors import MermaidError

    model = settings.model
    if model and model.startswith("replay/"):
        path = Path(model[len("replay/") :])
        return Check(
            "model",
            "ok" if path.exists() else "fail",
            f"{model} ({'found' if path.exists() else 'file missing'})",
        )
    from mermaid_cli.providers.resolve import (
        PRESETS,
        _user_section,
        canonical,
        create_provider,
        default_model,
        split_model_id,
    )

    try:
        model = default_model(settings, env)
        provider = create_provider(model, settings, env)
    except MermaidError as exc:
        return Check("model", "fail", exc.message)
    name = canonical(split_model_id(model)[0])
    user = _user_section(settings, name)
    env_vars = (
        (user.api_key_env,)
        if user is not None and user.api_key_env
        else (PRESETS[name].key_env if name in PRESETS else ())
    )
    source = next((f"env {v}" for v in env_vars if env.get(v, "").strip()), None)
    describe = getattr(provider, "credential_source", None)  # a cloud provider's own chain (Bedrock)
    if source is None and callable(describe):
        try:
            source = str(describe())
        except MermaidError as exc:
            return Check("model", "fail", exc.message)
    if source is None:
        source = (
            "OS keyring" if getattr(getattr(provider, "endpoint", None), "api_key", None) else "no key needed"
        )
    base = getattr(getattr(provider, "endpoint", None), "base_url", "")
    return Check("model", "ok", f"{model} via {base} (key from {source})")


def _mcp_checks(settings: Settings, start: bool) -> list[Check]:
    servers = settings.mcp_servers
    if not servers:
        return [Check("mcp", "ok", "no MCP servers configured")]
    if not start:
        names = ", ".join(
            f"{n} ({'stdio' if s.command else 'http'}{'' if s.enabled else ', disabled'})"
            for n, s in servers.items()
        )
        return [Check("mcp", "ok", f"configured: {names} (use --mcp to start them)")]
    import asyncio

    from mermaid_cli.integrations.mcp.manager import McpManager

    async def probe() -> list[Any]:
        manager = McpManager(servers, defer_tools=settings.mcp_defer_tools, client_version=__version__)
        try:
            return await manager.start()
        finally:
            await manager.aclose()

    out = []
    for st in asyncio.run(probe()):
        if st.state == "ready":
            out.append(
                Check(
                    f"mcp {st.name}",
                    "ok",
                    f"ready ({st.protocol_version}), {st.tools} tools, {st.prompts} prompts",
                )
            )
        elif st.state == "disabled":
            out.append(Check(f"mcp {st.name}", "ok", "disabled"))
        else:
            out.append(Check(f"mcp {st.name}", "warn", st.error or st.state))
    return out


def as_json(checks: list[Check]) -> dict[str, Any]:
    return {"ok": all(c.status != "fail" for c in checks), "checks": [asdict(c) for c in checks]}


def render(checks: list[Check]) -> str:
    marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
    return "\n".join(f"{marks[c.status]}  {c.name:<12} {c.detail}" for c in checks)


def environ() -> Mapping[str, str]:
    return os.environ


def _sandbox_check(settings: Settings, env: Mapping[str, str]) -> Check:
    """What the kernel supports (DESIGN §4.1) and what each safety mode would get from it."""
    from mermaid_cli.security.sandbox import probe
    from mermaid_cli.security.sandbox.linux import MIN_LANDLOCK_ABI

    s = probe(env)
    enforce = settings.sandbox.mode
    parts = [
        f"[sandbox] mode {enforce}",
        f"Landlock ABI {s.landlock_abi or 'none'}"
        + (" (+net rules)" if s.landlock_net else "")
        + (" (+signal scope)" if s.landlock_scope else ""),
        f"seccomp {'yes' if s.seccomp_filter else 'no'}",
        f"no_new_privs {'yes' if s.no_new_privs else 'no'}",
        f"user namespaces {'yes' if s.user_namespaces else 'no'}",
        f"mount namespace {'yes' if s.mount_namespace else 'no'}",
        f"cgroup {'v2 ' + s.cgroup if s.cgroup else 'none (orphan guard: session fallback)'}",
    ]
    if s.forced_unavailable:
        parts.append("forced unavailable: " + ",".join(s.forced_unavailable))
    able = (
        s.platform.startswith("linux")
        and s.landlock_abi >= MIN_LANDLOCK_ABI
        and s.seccomp_filter
        and s.no_new_privs
    )
    if enforce == "off":
        parts.append("modes: no sandbox (off), only the policy gate decides")
        return Check("sandbox", "warn", "; ".join(parts))
    if able:
        ro = "read_only: read project+system, write private temp dir, no network"
        aa = "ask/auto: + write project and writable_roots, .git/.mermaid read-only"
        fa = "full_access: " + ("auto policy (sandbox = on)" if enforce == "on" else "hardening only")
        parts.append("modes: " + "; ".join((ro, aa, fa)))
        return Check("sandbox", "ok", "; ".join(parts))
    verdict = (
        "runs unconfined with a warning"
        if enforce == "best-effort"
        else "exits 2 before the first model call"
    )
    parts.append(f"modes: this kernel cannot sandbox; every mode but full_access {verdict}")
    return Check("sandbox", "warn" if enforce == "best-effort" else "fail", "; ".join(parts))
