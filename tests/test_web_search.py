"""web_search against local fake SearXNG, Brave and Tavily endpoints speaking their real formats."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError
from web_servers import BRAVE_KEY, TAVILY_KEY, LocalServer, search_routes

from mermaid_cli.config.sections.web import WebSettings
from mermaid_cli.core.types import ToolResult
from mermaid_cli.integrations.web.search_backends import select_backend
from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.catalog_web import omitted_web_tools, web_search_status, web_tools
from mermaid_cli.tools.web_search import WebSearch


@pytest.fixture
def state() -> dict[str, Any]:
    return {}


@pytest.fixture
def server(state: dict[str, Any]):
    with LocalServer(search_routes(state)) as srv:
        yield srv


def settings_for(server: LocalServer, **web: Any) -> SimpleNamespace:
    web.setdefault("brave_base_url", server.url("/brave/res/v1/web/search"))
    web.setdefault("tavily_base_url", server.url("/tavily/search"))
    return SimpleNamespace(web=WebSettings(**web))


def search_tool(settings: SimpleNamespace, env: dict[str, str]) -> WebSearch:
    tools = {t.name: t for t in web_tools(settings, env)}
    assert "web_search" in tools, omitted_web_tools(settings, env)
    tool = tools["web_search"]
    assert isinstance(tool, WebSearch)
    return tool


async def run(tool: WebSearch, settings: SimpleNamespace, tmp_path: Path, **args: Any) -> ToolResult:
    ctx = ToolContext(project_root=tmp_path, settings=settings)
    return await tool.run(tool.Args.model_validate(args), ctx)


async def test_searxng_backend(server: LocalServer, tmp_path: Path) -> None:
    settings = settings_for(server, search_backend="searxng", searxng_url=server.url("/searxng"))
    tool = search_tool(settings, {})
    result = await run(tool, settings, tmp_path, query="kelp forests", max_results=3)
    assert not result.is_error, result.content
    assert (
        "1. Result 1 for kelp forests\n   https://example.org/kelp-forests/1\n   About kelp forests & item 1"
        in result.content
    )
    assert "Result 4 for" not in result.content
    assert result.content.count("<untrusted-web-content") == 1
    web = result.metadata["web"]
    assert web == {
        "backend": "searxng",
        "query_count": 1,
        "requested_count": 1,
        "succeeded_count": 1,
        "result_count": 3,
        "failed_count": 0,
        "partial": False,
        "truncated": False,
        "output_byte_count": len(result.content.encode()),
    }
    assert result.metadata["untrusted_content"] is True
    assert "kelp" not in json.dumps(result.metadata)
    request = server.requests[-1]
    assert request["path"].startswith("/searxng/search?") and "format=json" in request["path"]
    assert request["headers"]["User-Agent"].startswith("Mermaid/")


async def test_brave_backend_sends_the_subscription_token(server: LocalServer, tmp_path: Path) -> None:
    settings = settings_for(server)
    tool = search_tool(settings, {"BRAVE_API_KEY": BRAVE_KEY})
    assert tool.backend.name == "brave"
    result = await run(tool, settings, tmp_path, query="sea otters", max_results=2)
    assert not result.is_error, result.content
    assert "Result 2 for sea otters" in result.content and "Result 3" not in result.content
    assert result.metadata["web"]["result_count"] == 2
    request = server.requests[-1]
    assert request["headers"]["X-Subscription-Token"] == BRAVE_KEY
    assert "count=2" in request["path"]
    assert BRAVE_KEY not in result.content and BRAVE_KEY not in repr(tool.backend)


async def test_tavily_backend_posts_with_bearer_key(server: LocalServer, tmp_path: Path) -> None:
    settings = settings_for(server, search_backend="tavily")
    tool = search_tool(settings, {"TAVILY_API_KEY": TAVILY_KEY, "BRAVE_API_KEY": BRAVE_KEY})
    assert tool.backend.name == "tavily"
    result = await run(tool, settings, tmp_path, query="urchins", max_results=4)
    assert not result.is_error, result.content
    assert result.metadata["web"]["result_count"] == 4
    request = server.requests[-1]
    assert request["method"] == "POST"
    assert request["headers"]["Authorization"] == f"Bearer {TAVILY_KEY}"


async def test_wrong_key_is_a_reported_failure_without_secrets(server: LocalServer, tmp_path: Path) -> None:
    settings = settings_for(server, search_backend="brave")
    tool = search_tool(settings, {"BRAVE_API_KEY": "wrong-key-xyz"})
    result = await run(tool, settings, tmp_path, query="q")
    assert result.is_error
    assert "brave answered HTTP 401" in result.content
    assert "wrong-key-xyz" not in result.content
    assert result.metadata["web"]["failures"] == [{"query_index": 0, "error": "brave answered HTTP 401"}]
    assert result.metadata["web"]["partial"] is False


async def test_several_queries_run_concurrently_in_order_with_failures_reported(
    server: LocalServer, state: dict[str, Any], tmp_path: Path
) -> None:
    settings = settings_for(server, searxng_url=server.url("/searxng"))
    tool = search_tool(settings, {})
    queries = [f"slowish topic {n}" for n in range(8)]
    queries[2] = "slowish fail here"
    result = await run(tool, settings, tmp_path, queries=queries, max_results=1)
    assert result.is_error is False
    positions = [result.content.index(f"## Query {n + 1}: {q}") for n, q in enumerate(queries)]
    assert positions == sorted(positions)
    assert "## Query 3: slowish fail here\nFAILED: searxng answered HTTP 500" in result.content
    web = result.metadata["web"]
    assert (web["query_count"], web["succeeded_count"], web["result_count"]) == (8, 7, 7)
    assert (web["failed_count"], web["partial"]) == (1, True)
    assert web["failures"] == [{"query_index": 2, "error": "searxng answered HTTP 500"}]
    assert sorted(state["queries"]) == sorted(queries)
    assert 1 <= state["max_in_flight"] <= 4
    assert "slowish" not in json.dumps(result.metadata)


async def test_output_is_capped_at_30000_bytes(server: LocalServer, tmp_path: Path) -> None:
    settings = settings_for(server, searxng_url=server.url("/long"))
    tool = search_tool(settings, {})
    result = await run(tool, settings, tmp_path, queries=["a", "b", "c"], max_results=10)
    assert len(result.content.encode()) <= 30_000
    assert result.metadata["web"]["truncated"] is True
    assert result.metadata["web"]["result_count"] >= 3  # every query got a share
    assert "more results cut to fit" in result.content
    assert result.content.rstrip().endswith("</untrusted-web-content>")


async def test_unreachable_backend_fails_per_query(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = SimpleNamespace(web=WebSettings(searxng_url=f"http://127.0.0.1:{port}"))
    tool = search_tool(settings, {})
    result = await run(tool, settings, tmp_path, query="secret query words")
    assert result.is_error
    assert "searxng request failed (ConnectError)" in result.content
    assert "secret query words" not in json.dumps(result.metadata)


def test_auto_picks_the_first_configured_backend() -> None:
    both = {"BRAVE_API_KEY": "b", "TAVILY_API_KEY": "t"}
    assert select_backend(WebSettings(searxng_url="http://s:8888"), both).backend.name == "searxng"
    assert select_backend(WebSettings(), both).backend.name == "brave"
    assert select_backend(WebSettings(), {"TAVILY_API_KEY": "t"}).backend.name == "tavily"
    assert select_backend(WebSettings(), {"BRAVE_API_KEY": "  "}).backend is None
    explicit = select_backend(
        WebSettings(search_backend="brave", searxng_url="http://s"), {"TAVILY_API_KEY": "t"}
    )
    assert explicit.backend is None and "BRAVE_API_KEY is not set" in explicit.reason


def test_no_viable_backend_means_no_tool_and_an_explanation() -> None:
    settings = SimpleNamespace(web=WebSettings())
    assert [t.name for t in web_tools(settings, {})] == ["web_fetch"]
    reason = omitted_web_tools(settings, {})["web_search"]
    assert "not available" in reason and "searxng_url" in reason and "BRAVE_API_KEY" in reason
    status = web_search_status(settings, {})
    assert "TAVILY_API_KEY" in status
    assert web_search_status(settings, {"TAVILY_API_KEY": "t"}).startswith("web_search: tavily")
    off = omitted_web_tools(settings, {"TAVILY_API_KEY": "t"}, network_allowed=False)
    assert set(off) == {"web_fetch", "web_search"}
    assert "disabled" in web_search_status(settings, {"TAVILY_API_KEY": "t"}, network_allowed=False)
    assert web_tools(settings, {"TAVILY_API_KEY": "t"}, network_allowed=False) == []


def test_arguments_are_validated() -> None:
    for bad in (
        {},
        {"query": "a", "queries": ["b"]},
        {"query": ""},
        {"queries": []},
        {"query": "a", "max_results": 11},
    ):
        with pytest.raises(ValidationError):
            WebSearch.Args.model_validate(bad)
    with pytest.raises(ValidationError):
        WebSearch.Args.model_validate({"queries": [" "]})
    assert WebSearch.Args.model_validate({"queries": ["a", "b"]}).all_queries() == ["a", "b"]


def test_settings_reject_non_http_urls() -> None:
    with pytest.raises(ValidationError):
        WebSettings(searxng_url="ftp://x")
    with pytest.raises(ValidationError):
        WebSettings(search_backend="google")
