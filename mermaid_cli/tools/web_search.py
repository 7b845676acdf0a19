"""web_search: one or several queries against the configured search backend."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field, model_validator

from mermaid_cli.config.sections.web import WebSettings
from mermaid_cli.core.gather import gather_all
from mermaid_cli.core.types import ToolResult
from mermaid_cli.integrations.web.report import untrusted_block, web_details
from mermaid_cli.integrations.web.search_backends import SearchBackend, SearchFailed, SearchHit
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext
from mermaid_cli.tools.web_fetch import web_settings_of

CONCURRENCY = 4
MAX_OUTPUT_BYTES = 30_000


class WebSearchArgs(ToolArgs):
    query: str | None = Field(
        None, min_length=1, max_length=2048, description="Search query. Give query or queries."
    )
    queries: list[str] | None = Field(
        None, min_length=1, max_length=32, description="Several queries, run concurrently; results in order."
    )
    max_results: int = Field(5, ge=1, le=10, description="Results per query.")

    @model_validator(mode="after")
    def _one_form(self) -> WebSearchArgs:
        if (self.query is None) == (self.queries is None):
            raise ValueError("give exactly one of query or queries")
        for q in self.queries or []:
            if not q.strip() or len(q) > 2048:
                raise ValueError("each query must be 1-2048 characters")
        return self

    def all_queries(self) -> list[str]:
        return [self.query] if self.query is not None else list(self.queries or [])


class WebSearch(Tool):
    name = "web_search"
    description = (
        "Search the web. Returns title, URL and snippet per result; fetch a result with web_fetch to read it."
    )
    Args = WebSearchArgs
    category = "web"

    def __init__(self, backend: SearchBackend) -> None:
        self.backend = backend

    async def run(self, args: WebSearchArgs, ctx: ToolContext) -> ToolResult:
        web = web_settings_of(ctx.settings)
        queries = args.all_queries()
        ctx.progress(
            f"searching ({len(queries)} quer{'y' if len(queries) == 1 else 'ies'}, {self.backend.name})"
        )
        outcomes = await run_queries(self.backend, queries, args.max_results, web)
        return format_results(
            self.backend.name, queries, outcomes, max_bytes=min(MAX_OUTPUT_BYTES, web.max_output_bytes)
        )


async def run_queries(
    backend: SearchBackend, queries: list[str], max_results: int, web: WebSettings
) -> list[list[SearchHit] | SearchFailed]:
    """Each query's hits or its failure, in the order of `queries`; at most 4 at a time."""
    import httpx

    from mermaid_cli.integrations.web.fetcher import user_agent

    gate = asyncio.Semaphore(CONCURRENCY)
    timeout = httpx.Timeout(web.timeout_secs, connect=web.connect_timeout_secs)

    async with httpx.AsyncClient(
        timeout=timeout, headers={"User-Agent": user_agent()}, trust_env=False
    ) as client:

        async def one(query: str) -> list[SearchHit] | SearchFailed:
            async with gate:
                try:
                    async with asyncio.timeout(web.timeout_secs):
                        return await backend.search(client, query, max_results)
                except SearchFailed as exc:
                    return exc
                except (TimeoutError, httpx.TimeoutException):
                    return SearchFailed(f"{backend.name} timed out")
                except httpx.HTTPError as exc:
                    # httpx messages can contain the request URL, hence the query: not used.
                    return SearchFailed(f"{backend.name} request failed ({type(exc).__name__})")

        return await gather_all(*(one(q) for q in queries))


def format_results(
    backend: str, queries: list[str], outcomes: list[list[SearchHit] | SearchFailed], *, max_bytes: int
) -> ToolResult:
    sections: list[str] = []
    failures: list[dict[str, Any]] = []
    result_count = 0
    truncated = False
    budget = max_bytes - 600  # header, wrapper and note
    used = 0
    for index, (query, outcome) in enumerate(zip(queries, outcomes, strict=True)):
        shown_query = query if len(query) <= 200 else query[:199] + "…"
        label = f"## Query {index + 1}: {shown_query}" if len(queries) > 1 else f"## {shown_query}"
        # Each query gets a fair share of what is left, so one verbose query cannot starve the rest.
        share = (budget - used) // (len(queries) - index)
        section_used = len(label.encode("utf-8")) + 1
        if isinstance(outcome, SearchFailed):
            failures.append({"query_index": index, "error": str(outcome)})
            block = f"{label}\nFAILED: {outcome}"
        elif not outcome:
            block = f"{label}\n(no results)"
        else:
            lines = [label]
            shown = 0
            for n, hit in enumerate(outcome, 1):
                entry = f"{n}. {hit.title}\n   {hit.url}" + (f"\n   {hit.snippet}" if hit.snippet else "")
                size = len(entry.encode("utf-8")) + 1
                if section_used + size > share:
                    truncated = True
                    break
                lines.append(entry)
                section_used += size
                shown += 1
            result_count += shown
            if shown < len(outcome):
                lines.append(f"({len(outcome) - shown} more results cut to fit the output limit)")
            block = "\n".join(lines)
        used += len(block.encode("utf-8")) + 1
        sections.append(block)
    succeeded = len(queries) - len(failures)
    all_failed = succeeded == 0
    head = f"web_search via {backend}: {result_count} results for {len(queries)} quer{'y' if len(queries) == 1 else 'ies'}"
    if failures:
        head += f", {len(failures)} failed"
    content = f"{head}\n{untrusted_block('web_search', chr(10).join(sections))}"
    details = web_details(
        backend=backend,
        query_count=len(queries),
        requested_count=len(queries),
        succeeded_count=succeeded,
        result_count=result_count,
        failed_count=len(failures),
        failures=failures,
        partial=bool(failures) and not all_failed,
        truncated=truncated,
        output_byte_count=len(content.encode("utf-8")),
    )
    summary = (
        f"{result_count} results for {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} ({backend})"
    )
    if failures:
        summary += f", {len(failures)} failed"
    return ToolResult(
        content=content,
        is_error=all_failed,
        summary=summary,
        metadata={"web": details, "untrusted_content": True},
    )
