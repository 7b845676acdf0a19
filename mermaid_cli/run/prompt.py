"""The default system prompt.

It is paid on every request and must stay byte-identical across the turns of a run so providers
can cache it: no clock, no counters, nothing that changes between calls; the same inputs always
give the same bytes. It states facts (what the agent is, where it works, what the safety mode
gates, who can answer) and a few working rules; the tool schemas say the rest.
"""

from __future__ import annotations

from pathlib import Path

_SAFETY_FACTS = {
    "read_only": (
        "Safety mode read_only: you may read and search. File changes, state-changing commands, "
        "background processes and memory writes are refused."
    ),
    "ask": (
        "Safety mode ask: reads run; every file change, state-changing command, network access and "
        "background process needs approval."
    ),
    "auto": (
        "Safety mode auto: reads and file edits inside the project run; state-changing commands, "
        "network access, background processes and paths outside the project are checked by a reviewer "
        "and may be refused."
    ),
    "full_access": (
        "Safety mode full_access: actions run without approval, but destructive commands "
        "(rm -rf /, git reset --hard, writes to system paths...) are always refused."
    ),
}

_ASK_HEADLESS = "Nobody can approve here, so actions that need approval are blocked; prefer reads and say what you would do."


def safety_facts(safety_mode: str, *, interactive: bool) -> list[str]:
    fact = _SAFETY_FACTS.get(safety_mode, f"Safety mode {safety_mode}: some actions may be refused.")
    lines = [fact]
    if safety_mode == "ask" and not interactive:
        lines.append(_ASK_HEADLESS)
    lines.append(
        "A refused or blocked action is the operator's decision: do not work around it; carry on "
        "without it or explain what is missing."
    )
    return lines


def build_system_prompt(
    *,
    tools: list[str],
    safety_mode: str,
    project_root: Path | str,
    instructions: str,
    memory_index: str,
    interactive: bool,
    os_name: str,
) -> str:
    """The system prompt for a run. Pure: the same arguments always give the same bytes."""
    offered = set(tools)
    lines = [
        "You are Mermaid, a headless coding agent. You work on the project at "
        f"{project_root} ({os_name}) through your tools: read and change files, run commands, check "
        "your work.",
        "Paths are relative to the project root. Read before you edit, keep changes small and to the "
        "point, and verify them (tests, build, linters) when you can.",
        *safety_facts(safety_mode, interactive=interactive),
    ]
    if interactive:
        if "ask_user_question" in offered:
            lines.append(
                "A person is at the terminal. Ask with ask_user_question only when a choice really "
                "needs them; otherwise decide."
            )
    else:
        lines.append(
            "Nobody is watching this run and nobody can answer questions. When something is unclear, "
            "decide, state your assumption in your final answer, and go on."
        )
    if "task_create" in offered:
        lines.append(
            "For work with several steps keep a checklist with task_create and task_update; one task in "
            "progress at a time."
        )
    if "context_archive" in offered:
        lines.append(
            "Older messages may be replaced by a checkpoint summary; context_archive searches and reads "
            "them back word for word."
        )
    if "memory" in offered:
        lines.append(
            "The memory tool keeps facts for later runs (project scope is committed with the code); "
            "save only what a future run needs, never secrets."
        )
    lines.append(
        "Your last message is the run's result: say briefly what you did, how you verified it, and "
        "anything left open."
    )
    if tools:
        lines.append(f"Tools: {', '.join(tools)}.")
        if "scratchpad_read" in offered:
            from mermaid_cli.tools.call_options import PROMPT_LINE

            lines.append(PROMPT_LINE)
    parts = ["\n".join(lines)]
    if instructions.strip():
        parts.append(
            "# Project instructions\n\nFrom the files below; a later file wins over an earlier one.\n\n"
            + instructions.strip()
        )
    if memory_index.strip():
        parts.append("# Memory\n\n" + memory_index.strip())
    return "\n\n".join(parts) + "\n"
