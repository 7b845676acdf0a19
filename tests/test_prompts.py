"""The default system prompt: short, exact and byte-stable."""

from __future__ import annotations

from pathlib import Path

from mermaid_cli.run.prompt import build_system_prompt

TOOLS = [
    "read_file",
    "write_file",
    "execute_command",
    "task_create",
    "task_update",
    "context_archive",
    "memory",
]


def prompt(**overrides) -> str:
    kwargs = dict(
        tools=TOOLS,
        safety_mode="auto",
        project_root=Path("/work/project"),
        instructions="",
        memory_index="",
        interactive=False,
        os_name="Linux",
    )
    kwargs.update(overrides)
    return build_system_prompt(**kwargs)


def test_byte_identical_for_same_inputs():
    a = prompt(instructions="## AGENTS.md\n\nUse uv.", memory_index="- [project] a: b")
    b = prompt(instructions="## AGENTS.md\n\nUse uv.", memory_index="- [project] a: b")
    assert a.encode() == b.encode()


def test_headless_core_facts():
    text = prompt()
    assert text.startswith("You are Mermaid, a headless coding agent.")
    assert "/work/project" in text and "Linux" in text
    assert "nobody can answer questions" in text
    assert "decide, state your assumption" in text
    assert "ask_user_question" not in text
    assert (
        "Tools: read_file, write_file, execute_command, task_create, task_update, context_archive, memory."
        in text
    )
    core = text.split("\n\n# ")[0]
    assert len([line for line in core.splitlines() if line.strip()]) <= 40


def test_interactive_mentions_the_person_only_with_the_tool():
    text = prompt(interactive=True, tools=[*TOOLS, "ask_user_question"])
    assert "nobody can answer" not in text
    assert "ask_user_question" in text
    assert "ask_user_question only when" not in prompt(interactive=True)


def test_safety_modes_are_stated():
    assert "Safety mode read_only" in prompt(safety_mode="read_only")
    assert "memory writes are refused" in prompt(safety_mode="read_only")
    assert "Safety mode full_access" in prompt(safety_mode="full_access")
    headless_ask = prompt(safety_mode="ask")
    assert "needs approval" in headless_ask and "Nobody can approve here" in headless_ask
    assert "Nobody can approve here" not in prompt(safety_mode="ask", interactive=True)
    assert "Safety mode custom" in prompt(safety_mode="custom")
    modes = {m: prompt(safety_mode=m) for m in ["read_only", "ask", "auto", "full_access"]}
    assert len(set(modes.values())) == 4


def test_tool_lines_follow_the_tools_offered():
    bare = prompt(tools=["read_file"])
    assert "task_create" not in bare and "context_archive" not in bare and "memory tool" not in bare
    full = prompt()
    assert "task_create" in full and "context_archive searches" in full and "memory tool" in full


def test_instructions_and_memory_sections():
    text = prompt(
        instructions="## AGENTS.md\n\nAlways run make lint.", memory_index="Saved facts:\n- [project] db: x"
    )
    assert "# Project instructions\n\n" in text and text.index("Always run make lint.") > text.index(
        "# Project"
    )
    assert "# Memory\n\nSaved facts:\n- [project] db: x\n" in text
    assert "# Project instructions" not in prompt()
    assert "# Memory" not in prompt(memory_index="  ")


# The whole default prompt, pinned: a change here is a change of what every request pays for.
EXPECTED_DEFAULT = """\
You are Mermaid, a headless coding agent. You work on the project at /work/project (Linux) through your tools: read and change files, run commands, check your work.
Paths are relative to the project root. Read before you edit, keep changes small and to the point, and verify them (tests, build, linters) when you can.
Safety mode auto: reads and file edits inside the project run; state-changing commands, network access, background processes and paths outside the project are checked by a reviewer and may be refused.
A refused or blocked action is the operator's decision: do not work around it; carry on without it or explain what is missing.
Nobody is watching this run and nobody can answer questions. When something is unclear, decide, state your assumption in your final answer, and go on.
For work with several steps keep a checklist with task_create and task_update; one task in progress at a time.
Older messages may be replaced by a checkpoint summary; context_archive searches and reads them back word for word.
The memory tool keeps facts for later runs (project scope is committed with the code); save only what a future run needs, never secrets.
Your last message is the run's result: say briefly what you did, how you verified it, and anything left open.
Tools: read_file, write_file, execute_command, task_create, task_update, context_archive, memory.
"""


def test_default_prompt_text():
    assert prompt() == EXPECTED_DEFAULT
