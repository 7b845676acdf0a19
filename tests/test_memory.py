"""The memory tool, its store on disk and the index for the system prompt."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mermaid_cli.core.types import ToolCallBlock, ToolResult
from mermaid_cli.tools.base import ToolContext, ToolRegistry
from mermaid_cli.tools.memory import (
    INDEX_TRUNCATED,
    Memory,
    MemoryStore,
    find_secret,
    memory_index,
    parse_fact,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    return tmp_path / "userconf"


@pytest.fixture
def ctx(project: Path, user_dir: Path) -> ToolContext:
    return ToolContext(project_root=project, user_config_dir=user_dir, safety_mode="auto")


async def call(ctx: ToolContext, env: dict[str, str] | None = None, **arguments: Any) -> ToolResult:
    registry = ToolRegistry([Memory(env=env if env is not None else {})])
    bound = registry.bind(ToolCallBlock(id="m1", name="memory", arguments=arguments))
    if isinstance(bound, ToolResult):
        return bound
    tool, args = bound
    return await tool.run(args, ctx)


async def test_remember_writes_one_markdown_file_with_frontmatter(ctx, project):
    result = await call(
        ctx,
        action="remember",
        name="test-command",
        description="How to run the tests",
        content="Run `uv run pytest -q`.\nNeeds Python 3.11.",
    )
    assert not result.is_error, result.content
    path = project / ".mermaid" / "memory" / "test-command.md"
    assert path.read_text() == (
        "---\nname: test-command\ndescription: How to run the tests\n---\n\n"
        "Run `uv run pytest -q`.\nNeeds Python 3.11.\n"
    )
    again = await call(ctx, action="remember", name="test-command", description="d", content="c")
    assert again.is_error and "already exists" in again.content


async def test_user_scope_lives_in_user_config_dir(ctx, user_dir, project):
    result = await call(
        ctx, action="remember", name="style", description="Prefers tabs", content="Tabs.", scope="user"
    )
    assert not result.is_error
    assert (user_dir / "memory" / "style.md").is_file()
    assert not (project / ".mermaid" / "memory" / "style.md").exists()


async def test_user_scope_unavailable_without_user_dir(project):
    ctx = ToolContext(project_root=project)
    result = await call(ctx, action="remember", name="x", description="d", content="c", scope="user")
    assert result.is_error and "user scope" in result.content


async def test_update_forget_search(ctx, project):
    await call(
        ctx, action="remember", name="db", description="Database setup", content="Postgres 16 on port 5433."
    )
    await call(
        ctx, action="remember", name="ci", description="CI notes", content="GitHub Actions, matrix of 3."
    )
    found = await call(ctx, action="search", query="POSTGRES port")
    assert "## db [project]" in found.content and "5433" in found.content and "## ci" not in found.content

    updated = await call(ctx, action="update", name="db", content="Postgres 17 on port 5433.")
    assert not updated.is_error
    text = (project / ".mermaid" / "memory" / "db.md").read_text()
    assert "Postgres 17" in text and "description: Database setup" in text

    listed = await call(ctx, action="search")
    assert "## ci" in listed.content and "## db" in listed.content

    gone = await call(ctx, action="forget", name="db")
    assert not gone.is_error
    assert not (project / ".mermaid" / "memory" / "db.md").exists()
    assert (await call(ctx, action="forget", name="db")).is_error
    assert (await call(ctx, action="update", name="db", content="x")).is_error
    assert "No facts matching" in (await call(ctx, action="search", query="postgres")).content


async def test_bad_names_and_missing_fields(ctx, project):
    for name in ["../escape", "Has Space", "a/b", ""]:
        result = await call(ctx, action="remember", name=name, description="d", content="c")
        assert result.is_error
    assert not (project.parent / "escape.md").exists()
    assert (await call(ctx, action="remember", name="x", content="c")).is_error
    assert (await call(ctx, action="update", name="x")).is_error


async def test_writes_refused_in_read_only(ctx, project):
    await call(ctx, action="remember", name="keep", description="d", content="c")
    ctx.safety_mode = "read_only"
    for arguments in [
        {"action": "remember", "name": "new", "description": "d", "content": "c"},
        {"action": "update", "name": "keep", "content": "changed"},
        {"action": "forget", "name": "keep"},
    ]:
        result = await call(ctx, **arguments)
        assert result.is_error and "read_only" in result.content
    assert "changed" not in (project / ".mermaid" / "memory" / "keep.md").read_text()
    assert not (project / ".mermaid" / "memory" / "new.md").exists()
    assert not (await call(ctx, action="search", query="")).is_error


@pytest.mark.parametrize(
    "secret",
    [
        "sk-ant-api03-" + "a" * 40,
        "sk-proj-" + "Ab1" * 10,
        "ghp_" + "A1b2" * 9,
        "github_pat_11ABCDEFG0" + "x" * 40,
        "AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----",
    ],
)
async def test_secrets_are_refused(ctx, project, secret):
    result = await call(
        ctx, action="remember", name="creds", description="deploy", content=f"Use {secret} to deploy"
    )
    assert result.is_error and "refused" in result.content
    assert secret not in result.content
    assert not (project / ".mermaid" / "memory" / "creds.md").exists()


async def test_env_secret_values_are_refused(ctx, project):
    env = {
        "DEPLOY_TOKEN": "s3cr3t-v4lue-123",
        "MY_PASSWORD": "hunter2hunter2",
        "HOME": "/home/someone",
        "API_KEY": "1",
    }
    bad = await call(
        ctx, env, action="remember", name="deploy", description="d", content="token is s3cr3t-v4lue-123"
    )
    assert bad.is_error and "$DEPLOY_TOKEN" in bad.content and "s3cr3t" not in bad.content
    bad = await call(ctx, env, action="update", name="deploy", description="pw hunter2hunter2")
    assert bad.is_error
    # values of other variables, and very short values, are ordinary text
    ok = await call(
        ctx, env, action="remember", name="home", description="d", content="home is /home/someone, 1 key"
    )
    assert not ok.is_error


def test_find_secret_reads_process_env(monkeypatch):
    monkeypatch.setenv("SOME_SERVICE_SECRET", "zzz-very-secret-zzz")
    assert find_secret("x zzz-very-secret-zzz y") == "the value of $SOME_SERVICE_SECRET"
    assert find_secret("nothing here", env={}) is None


def test_parse_fact_without_frontmatter():
    assert parse_fact("just text\n", fallback_name="plain") == ("plain", "", "just text")
    assert parse_fact('---\nname: "n"\ndescription: d: with colon\n---\nbody', fallback_name="f") == (
        "n",
        "d: with colon",
        "body",
    )


def test_index_lists_both_scopes_in_stable_order(project, user_dir):
    store = MemoryStore(project, user_dir)
    store.write("user", "zeta", "User fact", "z")
    store.write("project", "beta", "Second\nline joined", "b")
    store.write("project", "alpha", "First", "a")
    (project / ".mermaid" / "memory" / "notes.txt").write_text("ignored")
    index = memory_index(project, user_dir)
    assert index.splitlines()[1:] == [
        "- [project] alpha: First",
        "- [project] beta: Second line joined",
        "- [user] zeta: User fact",
    ]
    assert memory_index(project, user_dir) == index
    assert memory_index(project / "nowhere", None) == ""


def test_index_is_capped_with_marker(project):
    store = MemoryStore(project, None)
    for i in range(300):
        store.write("project", f"fact-{i:03d}", "a description that takes some room " * 2, "c")
    index = memory_index(project, None, cap=8000)
    assert len(index.encode()) <= 8000
    assert index.endswith(INDEX_TRUNCATED)
    assert "- [project] fact-000:" in index


@settings(max_examples=30, deadline=None)
@given(
    descriptions=st.lists(st.text(min_size=0, max_size=60), min_size=1, max_size=12),
    cap=st.integers(min_value=0, max_value=900),
)
def test_index_never_exceeds_cap(tmp_path_factory, descriptions, cap):
    root = tmp_path_factory.mktemp("p")
    store = MemoryStore(root, None)
    for i, description in enumerate(descriptions):
        store.write("project", f"f{i}", description, "c")
    index = memory_index(root, None, cap=cap)
    assert len(index.encode()) <= cap


async def test_project_memory_symlinked_outside_is_ignored(ctx, project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.md").write_text("---\nname: leak\ndescription: outside\n---\nsecret stuff")
    (project / ".mermaid").mkdir()
    os.symlink(outside, project / ".mermaid" / "memory")
    assert memory_index(project, None) == ""
    assert "No facts" in (await call(ctx, action="search", query="secret")).content
    result = await call(ctx, action="remember", name="new", description="d", content="c")
    assert result.is_error and "outside" in result.content
    assert not (outside / "new.md").exists()


async def test_project_memory_symlinked_into_git_is_refused(ctx, project):
    """`.mermaid/memory -> ../.git/hooks` stayed inside the project, so `remember` wrote into
    `.git/` (read-only in ask/auto for every other tool)."""
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".mermaid").mkdir()
    os.symlink("../.git/hooks", project / ".mermaid" / "memory")
    result = await call(ctx, action="remember", name="pre-commit", description="d", content="#!/bin/sh\n")
    assert result.is_error
    assert list((project / ".git" / "hooks").iterdir()) == []
