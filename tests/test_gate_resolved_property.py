"""Property (issue 15): for every file tool and every mode, the gate's verdict on a call equals its
verdict on the same call with the path written in resolved form. Trees are real files in a tmp
dir with in-project symlinks (to the project, outside it, to ~/.ssh, to /etc and to a nested
repository's `.git`), and the spellings mix `..`, `~`, `.`, absolute and relative forms."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mermaid_cli.config.loader import Settings
from mermaid_cli.core.types import ToolCallBlock
from mermaid_cli.policy.gate import PolicyGate
from mermaid_cli.tools.apply_patch import ApplyPatch
from mermaid_cli.tools.base import Tool
from mermaid_cli.tools.edit import EditFile
from mermaid_cli.tools.files import CreateDirectory, DeleteFile, ReadFile, WriteFile

TOOLS: list[Tool] = [ReadFile(), WriteFile(), EditFile(), DeleteFile(), CreateDirectory(), ApplyPatch()]
MODES: list[dict[str, Any]] = [
    {"mode": "read_only"},
    {"mode": "ask"},
    {"mode": "auto"},
    {"mode": "full_access"},
    {"mode": "auto", "filesystem": "project"},
    {"mode": "full_access", "filesystem": "project"},
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("tree")
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("k\n")
    root = home / "project"  # under $HOME, so `~/project/...` is an in-project spelling
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x\n")
    (root / "src" / "pkg" / "b.py").write_text("x\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "o.txt").write_text("x\n")
    (root / "inlink").symlink_to(root / "src")
    (root / "outlink").symlink_to(outside)
    (root / "sshlink").symlink_to(home / ".ssh")
    (root / "etclink").symlink_to("/etc")
    (root / "filelink").symlink_to(outside / "o.txt")
    (root / "src" / "uplink").symlink_to("..")
    (root / "vendor" / ".git").mkdir(parents=True)  # a nested repository's git directory
    (root / "vendor" / ".git" / "x").write_text("x\n")
    (root / "vgit").symlink_to("vendor/.git")
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        yield root
    finally:
        if old is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = old


BASES = [
    ".",
    "src",
    "src/pkg",
    "inlink",
    "outlink",
    "sshlink",
    "etclink",
    "etclink/cron.d",
    "src/uplink",
    "src/uplink/outlink",
    "..",
    "../..",
    "~",
    "~/.ssh",
    "~/project/src",
    "/etc",
    "/tmp",
    "vendor",
    "vendor/.git",
    "vgit",
]
NAMES = ["a.py", "b.py", "o.txt", "new.txt", "authorized_keys", "x", "filelink", "sshlink", "inlink"]


@st.composite
def spelling(draw: st.DrawFn, root: Path) -> str:
    base = draw(st.sampled_from(BASES))
    noise = draw(st.sampled_from(["", "./", "src/../", "nope/../", "src/pkg/../../"]))
    name = draw(st.sampled_from(NAMES))
    path = f"{base}/{noise}{name}"
    form = draw(st.sampled_from(["as-is", "absolute", "dot"]))
    if form == "absolute" and not path.startswith(("/", "~")):
        path = f"{root}/{path}"
    elif form == "dot" and not path.startswith(("/", "~")):
        path = f"./{path}"
    return path


def resolved_form(root: Path, path: str, delete: bool) -> str:
    joined = os.path.join(os.path.realpath(root), os.path.expanduser(path))
    if delete:
        parent, name = os.path.split(joined)
        return os.path.join(os.path.realpath(parent), name)
    return os.path.realpath(joined)


def call_for(tool: Tool, path: str, kind: str) -> dict[str, Any]:
    if tool.name == "read_file" or tool.name == "delete_file" or tool.name == "create_directory":
        return {"path": path}
    if tool.name == "write_file":
        return {"path": path, "content": "c"}
    if tool.name == "edit_file":
        return {"path": path, "target_content": "x", "replacement_content": "y"}
    header = {"add": "Add File", "update": "Update File", "delete": "Delete File"}[kind]
    body = "+x\n" if kind == "add" else ("@@\n-x\n+y\n" if kind == "update" else "")
    return {"patch": f"*** Begin Patch\n*** {header}: {path}\n{body}*** End Patch\n"}


def verdict(root: Path, safety: dict[str, Any], tool: Tool, arguments: dict[str, Any]) -> tuple[Any, ...]:
    gate = PolicyGate(
        settings=Settings.model_validate({"safety": safety}), project_root=root, emit=lambda _e: None
    )
    result = asyncio.run(
        gate.check("tool#1", tool, tool.Args.model_validate(arguments), ToolCallBlock(id="c", name=tool.name))
    )
    d = result.decision
    return (d.verdict, d.by, d.risk, d.reason, result.blocked)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_verdict_on_a_spelling_equals_verdict_on_the_resolved_path(tree: Path, data: st.DataObject) -> None:
    tool = data.draw(st.sampled_from(TOOLS))
    kind = data.draw(st.sampled_from(["add", "update", "delete"])) if tool.name == "apply_patch" else ""
    safety = data.draw(st.sampled_from(MODES))
    path = data.draw(spelling(tree))
    delete = tool.name == "delete_file" or kind == "delete"
    resolved = resolved_form(tree, path, delete)
    spelled = verdict(tree, safety, tool, call_for(tool, path, kind))
    canonical = verdict(tree, safety, tool, call_for(tool, resolved, kind))
    assert spelled == canonical, (tool.name, kind, safety, path, resolved)
    inside_git = ".git" in Path(os.path.relpath(resolved, os.path.realpath(tree))).parts
    if inside_git and tool.name != "read_file" and safety["mode"] != "full_access":
        assert spelled[0] == "deny", (tool.name, kind, safety, path, resolved)  # any repository's .git


def test_the_known_bypasses_are_hard_denied(tree: Path) -> None:
    """Anchors for the property: both spellings are denied, not merely equal."""
    write = TOOLS[1]
    for path in ("etclink/cron.d/x", "sshlink/authorized_keys", "src/uplink/sshlink/k"):
        assert verdict(tree, {"mode": "full_access"}, write, {"path": path, "content": "c"})[:2] == (
            "deny",
            "hard_deny",
        )
