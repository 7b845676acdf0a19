"""Native tool calls rewritten onto our tools, then run by the real tools on real files."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from mermaid_cli.core.types import ToolCallBlock, ToolSpec
from mermaid_cli.providers import native_tools as nt
from mermaid_cli.tools.base import ToolContext


def _tool(module: str, cls: str):
    try:
        return getattr(importlib.import_module(module), cls)()
    except (ImportError, AttributeError):  # pragma: no cover - until the file tools land
        pytest.skip(f"{module}.{cls} does not exist yet")


def editor(**args) -> ToolCallBlock:
    return nt.rewrite_anthropic(ToolCallBlock(id="t", name=nt.TEXT_EDITOR_NAME, arguments=args))


async def run(call: ToolCallBlock, root: Path):
    tools = {
        "read_file": ("mermaid_cli.tools.files", "ReadFile"),
        "write_file": ("mermaid_cli.tools.files", "WriteFile"),
        "edit_file": ("mermaid_cli.tools.edit", "EditFile"),
        "apply_patch": ("mermaid_cli.tools.apply_patch", "ApplyPatch"),
        "execute_command": ("mermaid_cli.tools.shell", "ExecuteCommand"),
    }
    tool = _tool(*tools[call.name])
    return await tool.run(tool.Args.model_validate(call.arguments), ToolContext(project_root=root))


async def test_text_editor_commands_run_on_our_tools(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\nfour\n")
    view = editor(command="view", path="a.txt", view_range=[2, 3])
    assert view.name == "read_file" and view.native["input"]["command"] == "view"
    result = await run(view, tmp_path)
    assert (
        not result.is_error
        and "two" in result.content
        and "three" in result.content
        and "four" not in result.content
    )

    result = await run(editor(command="str_replace", path="a.txt", old_str="two", new_str="TWO"), tmp_path)
    assert not result.is_error and (tmp_path / "a.txt").read_text() == "one\nTWO\nthree\nfour\n"

    ins = editor(command="insert", path="a.txt", insert_line=1, insert_text="one and a half\n")
    assert ins.name == "apply_patch"
    result = await run(ins, tmp_path)
    assert not result.is_error, result.content
    assert (tmp_path / "a.txt").read_text() == "one\none and a half\nTWO\nthree\nfour\n"

    result = await run(editor(command="insert", path="a.txt", insert_line=0, insert_text="zero"), tmp_path)
    assert not result.is_error, result.content
    assert (tmp_path / "a.txt").read_text().startswith("zero\none\n")

    result = await run(editor(command="create", path="new/b.txt", file_text="hello\n"), tmp_path)
    assert not result.is_error and (tmp_path / "new" / "b.txt").read_text() == "hello\n"


async def test_bash_maps_onto_execute_command(tmp_path: Path) -> None:
    call = nt.rewrite_anthropic(ToolCallBlock(id="b", name="bash", arguments={"command": "echo hi"}))
    assert call.arguments == {"command": "echo hi", "timeout": 600} and call.native["name"] == "bash"
    tool = _tool("mermaid_cli.tools.shell", "ExecuteCommand")
    tool.Args.model_validate(call.arguments)  # 600 is within the tool's limit
    restart = nt.rewrite_anthropic(ToolCallBlock(id="b", name="bash", arguments={"restart": True}))
    assert restart.name == "execute_command"


async def test_openai_apply_patch_operations_run_on_our_apply_patch(tmp_path: Path) -> None:
    def item(op: dict) -> dict:
        return {"type": "apply_patch_call", "call_id": "p", "status": "completed", "operation": op}

    create = nt.rewrite_openai_apply_patch(
        item({"type": "create_file", "path": "c.txt", "diff": "+alpha\n+beta\n"})
    )
    assert not (await run(create, tmp_path)).is_error
    assert (tmp_path / "c.txt").read_text() == "alpha\nbeta\n"
    update = nt.rewrite_openai_apply_patch(
        item({"type": "update_file", "path": "c.txt", "diff": "@@\n alpha\n-beta\n+gamma\n"})
    )
    result = await run(update, tmp_path)
    assert not result.is_error, result.content
    assert (tmp_path / "c.txt").read_text() == "alpha\ngamma\n"
    delete = nt.rewrite_openai_apply_patch(item({"type": "delete_file", "path": "c.txt"}))
    assert not (await run(delete, tmp_path)).is_error and not (tmp_path / "c.txt").exists()


def test_unmappable_calls_keep_their_native_name() -> None:
    bad = editor(command="undo_edit", path="a.txt")
    assert bad.name == nt.TEXT_EDITOR_NAME and bad.native is not None
    no_path = editor(command="view")
    assert no_path.name == nt.TEXT_EDITOR_NAME
    broken = nt.rewrite_openai_apply_patch(
        {"type": "apply_patch_call", "call_id": "p", "operation": {"type": "rename"}}
    )
    assert broken.arguments is None and broken.name == "apply_patch"
    untouched = ToolCallBlock(id="x", name="read_file", arguments={"path": "a"})
    assert nt.rewrite_anthropic(untouched) is untouched


def test_tools_offered_only_when_ours_are_present() -> None:
    def specs(*names: str) -> tuple[ToolSpec, ...]:
        return tuple(ToolSpec(name=n, description="", input_schema={}) for n in names)

    kept, natives = nt.anthropic_tools(specs("read_file", "execute_command"), True)
    assert [t.name for t in kept] == ["read_file", "execute_command"] and [n["name"] for n in natives] == [
        "bash"
    ]
    kept, natives = nt.anthropic_tools(specs("read_file"), True)
    assert natives == []
    kept, natives = nt.openai_tools(specs("read_file", "apply_patch"), True)
    assert [t.name for t in kept] == ["read_file"] and natives == [{"type": "apply_patch"}]
    assert nt.openai_tools(specs("apply_patch"), False)[1] == []
