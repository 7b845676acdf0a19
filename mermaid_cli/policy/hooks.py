"""`before_tool_use` hooks: operator commands that may deny, ask about or rewrite a tool call.

Each hook is a shell command run with a cleared environment (only `PATH`, `HOME`,
`MERMAID_HOOK_EVENT=before_tool_use` and, for plugin hooks, `MERMAID_PLUGIN_NAME`), the call as
JSON on stdin. It answers in Claude Code's shape on stdout:

    {"hookSpecificOutput": {"hookEventName": "PreToolUse",
       "permissionDecision": "allow" | "deny" | "ask", "permissionDecisionReason": "…",
       "updatedInput": {…}}, "additionalContext": "…"}

or the legacy `{"decision": "block" | "approve", "reason": "…"}`, or exits 2 to deny with stderr
as the reason. Hooks run concurrently; in list order, the first deny wins, an ask beats an allow,
the last `updatedInput` wins (the caller re-runs the gate on it) and `additionalContext` strings
concatenate. Failures are asymmetric by design: a hook that crashes, times out (its whole process
group is killed) or prints junk is reported in `warnings` and has no opinion, so a broken hook
cannot lock every tool call out, while an explicit deny always denies.

The observe-only lifecycle events (`session_start`, `after_tool_use`, `turn_done`,
`approval_requested`, `checkpoint`, `session_end`) run the same way through `run_observers`, with
`MERMAID_HOOK_EVENT` naming the event: whatever they print is ignored, and a failure is a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from dataclasses import dataclass, field
from typing import Any, Literal

from mermaid_cli.config.sections.hooks import HookSpec
from mermaid_cli.core.gather import gather_all

OUTPUT_CAP = 64 * 1024
REASON_CAP = 1_000
#: seconds an observer (and a plugin hook) may run before its process group is killed
OBSERVER_TIMEOUT = 30.0

HookDecision = Literal["allow", "deny", "ask"]


@dataclass
class HookOutcome:
    """The combined opinion of all hooks. `decision` None = no opinion."""

    decision: HookDecision | None = None
    reason: str | None = None
    updated_input: dict[str, Any] | None = None
    additional_context: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: label of the hook whose deny won
    denied_by: str | None = None
    system_messages: list[str] = field(default_factory=list)


@dataclass
class _Single:
    """What one hook answered."""

    decision: HookDecision | None = None
    reason: str | None = None
    updated_input: dict[str, Any] | None = None
    context: str | None = None
    system_message: str | None = None
    warning: str | None = None


async def run_before_tool_use(
    hooks: list[HookSpec],
    call: dict[str, Any],
    *,
    timeout: float = 10.0,
    plugin_env: bool = True,
) -> HookOutcome:
    """Run every hook on `call` (e.g. `{"call_id", "tool", "arguments", "turn_id"}`) and combine."""
    if not hooks:
        return HookOutcome()
    payload = json.dumps(call, ensure_ascii=False, default=str).encode("utf-8")
    results = await gather_all(*(_run_one(h, payload, h.timeout or timeout, plugin_env) for h in hooks))
    out = HookOutcome()
    contexts: list[str] = []
    updaters: list[str] = []
    for hook, r in zip(hooks, results, strict=True):
        if r.warning:
            out.warnings.append(f"hook {hook.label}: {r.warning}")
        if r.system_message:
            out.system_messages.append(r.system_message)
        if r.context:
            contexts.append(r.context)
        if r.updated_input is not None:
            out.updated_input = r.updated_input
            updaters.append(hook.label)
        if r.decision == "deny" and out.decision != "deny":
            out.decision, out.reason, out.denied_by = (
                "deny",
                r.reason or f"denied by hook {hook.label}",
                hook.label,
            )
        elif r.decision == "ask" and out.decision in (None, "allow"):
            out.decision, out.reason = "ask", r.reason
        elif r.decision == "allow" and out.decision is None:
            out.decision, out.reason = "allow", r.reason
    if len(updaters) > 1:
        out.warnings.append(f"several hooks rewrote the input ({', '.join(updaters)}); the last one wins")
    if contexts:
        out.additional_context = "\n".join(contexts)
    return out


async def run_observers(
    hooks: list[HookSpec], event: str, payload: dict[str, Any], *, timeout: float = OBSERVER_TIMEOUT
) -> list[str]:
    """Run every observer of `event` on `payload` concurrently; the warnings of those that failed
    (exit status not 0, a timeout, a start error). Their output is ignored: observers decide nothing."""
    if not hooks:
        return []
    data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    results = await gather_all(*(_run_one(h, data, h.timeout or timeout, True, event) for h in hooks))
    warnings = []
    for hook, r in zip(hooks, results, strict=True):
        if r.warning:  # "no opinion" is the decision protocol's word; observers have none
            warnings.append(f"{event} hook {hook.label}: {r.warning.removesuffix('; no opinion')}")
        elif r.decision == "deny":  # exit 2 means nothing here: report it as the failure it is
            warnings.append(f"{event} hook {hook.label}: exited with status 2 (observers cannot deny)")
    return warnings


def _hook_env(hook: HookSpec, plugin_env: bool, event: str = "before_tool_use") -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "MERMAID_HOOK_EVENT": event,
    }
    if plugin_env and hook.name:
        env["MERMAID_PLUGIN_NAME"] = hook.name
    return env


async def _run_one(
    hook: HookSpec, payload: bytes, timeout: float, plugin_env: bool, event: str = "before_tool_use"
) -> _Single:
    try:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            hook.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_hook_env(hook, plugin_env, event),
            cwd=str(hook.cwd) if hook.cwd else None,
            start_new_session=True,  # its own process group, so a timeout kills grandchildren too
        )
    except OSError as exc:
        return _Single(warning=f"could not start: {exc}")

    async def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(payload)
            await proc.stdin.drain()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.close()

    assert proc.stdout is not None and proc.stderr is not None
    out_buf, err_buf = bytearray(), bytearray()
    readers = [
        asyncio.ensure_future(feed()),
        asyncio.ensure_future(_drain(proc.stdout, out_buf)),
        asyncio.ensure_future(_drain(proc.stderr, err_buf)),
    ]
    try:
        try:
            code = await asyncio.wait_for(_exited(proc), timeout)
        except TimeoutError:
            _kill_group(proc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_exited(proc), 2.0)
            return _Single(warning=f"timed out after {timeout:g}s (killed); no opinion")
        # The hook exited; a background child it left behind may still hold the pipes. Give the
        # readers a moment, then kill the group and keep what was printed.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*readers[1:]), 1.0)
    finally:
        _kill_group(proc)
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        # Close the transport now, inside the loop: left to the garbage collector it may be torn
        # down after the loop is gone. (`Process` has no public close; the transport is public API.)
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
    stdout, stderr = bytes(out_buf), bytes(err_buf)
    err_text = stderr.decode("utf-8", "replace").strip()
    if code == 2:
        return _Single(decision="deny", reason=(err_text or "hook exited with status 2")[:REASON_CAP])
    if code != 0:
        detail = f": {err_text[:200]}" if err_text else ""
        return _Single(warning=f"exited with status {code}{detail}; no opinion")
    if event != "before_tool_use":
        return _Single()  # an observer's output means nothing
    return _parse(stdout.decode("utf-8", "replace"))


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """The exit status as soon as the process exits. (`Process.wait()` on 3.11 also waits for
    the pipes to close, which a background grandchild can hold open for ever.)"""
    while proc.returncode is None:
        await asyncio.sleep(0.02)
    return proc.returncode


async def _drain(stream: asyncio.StreamReader, kept: bytearray) -> None:
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return
        if len(kept) < OUTPUT_CAP:
            kept.extend(chunk[: OUTPUT_CAP - len(kept)])


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)


def _parse(text: str) -> _Single:
    text = text.strip()
    if not text:
        return _Single()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return _Single(warning=f"printed something that is not JSON ({text[:80]!r}); no opinion")
    if not isinstance(data, dict):
        return _Single(warning="printed JSON that is not an object; no opinion")
    out = _Single()
    specific = data.get("hookSpecificOutput")
    if isinstance(specific, dict):
        decision = specific.get("permissionDecision")
        if decision in ("allow", "deny", "ask"):
            out.decision = decision
        elif decision is not None:
            out.warning = f"unknown permissionDecision {decision!r} ignored"
        reason = specific.get("permissionDecisionReason")
        out.reason = str(reason)[:REASON_CAP] if reason else None
        updated = specific.get("updatedInput")
        if isinstance(updated, dict):
            out.updated_input = updated
        elif updated is not None:
            out.warning = "updatedInput is not an object; ignored"
        context = specific.get("additionalContext")
        if isinstance(context, str) and context:
            out.context = context
    legacy = data.get("decision")
    if out.decision is None and isinstance(legacy, str):
        mapped = {"block": "deny", "deny": "deny", "approve": "allow", "allow": "allow", "ask": "ask"}.get(
            legacy.lower()
        )
        if mapped:
            out.decision = mapped  # type: ignore[assignment]
            reason = data.get("reason")
            out.reason = str(reason)[:REASON_CAP] if reason else out.reason
    context = data.get("additionalContext")
    if isinstance(context, str) and context:
        out.context = f"{out.context}\n{context}" if out.context else context
    message = data.get("systemMessage")
    if isinstance(message, str) and message:
        out.system_message = message
    return out
