"""Flags users bring from peer CLIs (`codex exec`, `claude -p`, `gemini -p`) on `mermaid exec`.

Spellings that mean the same thing here are plain aliases on the options in `main` (`-o`,
`--output-format`). This module owns the rest: the command class that turns a peer flag Mermaid
does not have into a clear usage error (exit 2) instead of a guess, and keeps click's "did you
mean" list free of flags that loosen safety, so a typo never leads anyone to `--allow-untrusted-tools`.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from mermaid_cli.cli.lazy import LazyGroup

# Flags a suggestion must never name: each one lets more through the policy gate.
SAFETY_LOOSENING = frozenset({"--allow-untrusted-tools", "--allowed-tools", "--allowedTools"})

GROUP_P_HINT = 'is not a Mermaid flag: run one task with `mermaid exec "TASK"`'
P_HINT = "-p is not a prompt flag here: pass the prompt as an argument; --path is spelled --path"

_LOOSEN = "is not a Mermaid flag; choose how much runs unasked with --safety (see `mermaid exec --help`)"

PEER_FLAGS: dict[str, str] = {
    "--dangerously-skip-permissions": _LOOSEN,
    "--dangerously-bypass-approvals-and-sandbox": _LOOSEN,
    "--yolo": _LOOSEN,
    "--full-auto": _LOOSEN,
    "--print": "is not needed: `mermaid exec` is always headless; pass the prompt as an argument",
}


def reject_p(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """Callback of the hidden `-p` option: `-p "task"` must not quietly become a project path."""
    if value is not None:
        raise click.UsageError(P_HINT, ctx=ctx)


class MermaidGroup(LazyGroup):
    """The `mermaid` group: `mermaid -p "task"` (a peer's one-shot spelling) gets the way to say it here."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            if exc.option_name in ("-p", "--print", "--prompt"):
                raise click.UsageError(f"{exc.option_name} {GROUP_P_HINT}", ctx=ctx) from None
            raise


class ExecCommand(click.Command):
    """`exec`/`run`: a click command whose unknown-option errors know the peer CLIs' flags."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            raise self._unknown_option(ctx, exc) from None
        except click.BadOptionUsage as exc:
            if exc.option_name == "-p":  # a bare trailing `-p`: the same hint, not "requires an argument"
                raise click.UsageError(P_HINT, ctx=ctx) from None
            raise

    def _unknown_option(self, ctx: click.Context, exc: click.NoSuchOption) -> click.UsageError:
        name = exc.option_name
        if name in PEER_FLAGS:
            return click.UsageError(f"{name} {PEER_FLAGS[name]}", ctx=ctx)
        safe = _safe_suggestions(exc.possibilities or ())
        return click.NoSuchOption(name, possibilities=safe, ctx=ctx)


def _safe_suggestions(possibilities: Sequence[str]) -> list[str]:
    return [p for p in possibilities if p not in SAFETY_LOOSENING]
