"""web_fetch: fetch a public URL into a per-run snapshot; search or page snapshots later."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, model_validator

from mermaid_cli.config.sections.web import WebSettings
from mermaid_cli.core.types import ToolResult
from mermaid_cli.integrations.web.netguard import FetchRefused, Resolver
from mermaid_cli.integrations.web.report import untrusted_block, web_details
from mermaid_cli.integrations.web.snapshots import Snapshot, SnapshotStore, page, search
from mermaid_cli.integrations.web.trust import web_settings_of
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext
from mermaid_cli.tools.call_options import uncapped

# Room kept for the header, the untrusted-block wrapper and the continuation note.
UNCAPPED_BYTES = 256 * 1024 * 1024
_OVERHEAD = 1_000


class WebFetchArgs(ToolArgs):
    url: str | None = Field(None, description="http(s) URL to fetch. Give url or snapshot_id.")
    snapshot_id: str | None = Field(
        None, description="Id of an earlier fetch (web-N): search or page it without fetching again."
    )
    pattern: str | None = Field(
        None,
        min_length=1,
        max_length=500,
        description="Show only lines containing this text (case-insensitive), with context.",
    )
    context_lines: int = Field(2, ge=0, le=20, description="Context lines around each pattern match.")
    start_line: int | None = Field(None, ge=1, description="First line to show (1-based), for paging.")
    line_count: int | None = Field(None, ge=1, le=10_000, description="Number of lines to show.")
    raw: bool = Field(
        False, description="Return the page source as served instead of the extracted main text."
    )

    @model_validator(mode="after")
    def _one_source(self) -> WebFetchArgs:
        if (self.url is None) == (self.snapshot_id is None):
            raise ValueError("give exactly one of url or snapshot_id")
        if self.raw and self.snapshot_id is not None:
            raise ValueError("raw applies when fetching; fetch the url again with raw: true")
        return self


class WebFetch(Tool):
    name = "web_fetch"
    description = (
        "Fetch a public web page (HTML reduced to its main text; JSON/XML as data; PDFs and images "
        "summarised). The result has a snapshot id (web-N): call again with snapshot_id plus pattern "
        "to search it, or start_line/line_count to page through it, without fetching again."
    )
    Args = WebFetchArgs
    category = "web"

    def __init__(
        self,
        settings: WebSettings | None = None,
        *,
        resolver: Resolver | None = None,
        ssl_context: Any = None,
        extra_public_addresses: frozenset[str] = frozenset(),
    ) -> None:
        # Injection points for tests: local DNS names, a local CA, a local server standing in
        # for a public host. Production uses the defaults.
        self._settings = settings
        self._resolver = resolver
        self._ssl_context = ssl_context
        self._extra_public = extra_public_addresses

    def _web(self, ctx: ToolContext) -> WebSettings:
        if ctx.settings is not None:
            return web_settings_of(ctx.settings)
        return self._settings or WebSettings()

    async def run(self, args: WebFetchArgs, ctx: ToolContext) -> ToolResult:
        web = self._web(ctx)
        store = ctx.web_snapshots
        if store is None:
            store = ctx.web_snapshots = SnapshotStore()
        if args.snapshot_id is not None:
            snap = store.get(args.snapshot_id)
            if snap is None:
                why = "has expired" if store.is_expired(args.snapshot_id) else "does not exist in this run"
                return ToolResult.error(
                    f"snapshot {args.snapshot_id} {why}; fetch the url again",
                    web=web_details(
                        backend="native", snapshot_id=args.snapshot_id, error_kind="unknown_snapshot"
                    ),
                )
            return _view(snap, args, web, status=None, requested_url=None)
        return await self._fetch(args, ctx, web, store)

    async def _fetch(
        self, args: WebFetchArgs, ctx: ToolContext, web: WebSettings, store: SnapshotStore
    ) -> ToolResult:
        from mermaid_cli.integrations.web.extract import render_in_thread
        from mermaid_cli.integrations.web.fetcher import FetchFailed, FetchOptions, fetch, user_agent

        assert args.url is not None
        options = FetchOptions(
            allow_private_network=web.allow_private_network,
            connect_timeout=web.connect_timeout_secs,
            total_timeout=web.timeout_secs,
            max_response_bytes=web.max_response_bytes,
            max_redirects=web.max_redirects,
            user_agent=user_agent(),
            extra_public_addresses=self._extra_public,
        )
        ctx.progress(f"fetching {args.url}")
        try:
            fetched = await fetch(args.url, options, resolver=self._resolver, ssl_context=self._ssl_context)
        except FetchRefused as exc:
            return ToolResult.error(
                f"web_fetch refused: {exc}",
                web=web_details(backend="native", requested_url=args.url, error_kind="refused"),
            )
        except FetchFailed as exc:
            return ToolResult.error(
                f"web_fetch failed: {exc}",
                web=web_details(backend="native", requested_url=args.url, error_kind=exc.kind),
            )
        rendered = await render_in_thread(
            fetched.body, fetched.content_type, url=fetched.final_url, raw=args.raw
        )
        snap = store.add(
            url=fetched.final_url,
            media_type=rendered.media_type,
            extraction=rendered.extraction,
            source_byte_count=len(fetched.body),
            text=rendered.text,
        )
        return _view(
            snap,
            args,
            web,
            status=fetched.status,
            requested_url=fetched.requested_url,
            charset=rendered.charset,
        )


def _view(
    snap: Snapshot,
    args: WebFetchArgs,
    web: WebSettings,
    *,
    status: int | None,
    requested_url: str | None,
    charset: str | None = None,
) -> ToolResult:
    budget = max(1_000, web.max_output_bytes - _OVERHEAD - 2 * len(snap.url.encode("utf-8")))
    if uncapped():  # the output goes to the scratchpad: the whole page (the download cap still holds)
        budget = UNCAPPED_BYTES
    http_error = status is not None and status >= 400
    head = f"{snap.id}: {snap.url}"
    facts = [f"HTTP {status}"] if status is not None else []
    facts += [snap.media_type or "unknown type", snap.extraction, f"{len(snap.lines)} lines"]
    head += f" ({', '.join(facts)})"
    truncated = False
    match_count: int | None = None
    tail = ""
    if args.pattern is not None:
        found = search(snap.lines, args.pattern, args.context_lines)
        match_count = found.match_count
        body = found.text or "(no matches)"
        blocks = f"{found.block_count} block{'' if found.block_count == 1 else 's'}"
        head += f"\n{found.match_count} matching line{'' if found.match_count == 1 else 's'} in {blocks}."
        if len(body.encode("utf-8")) > budget:
            body = body.encode("utf-8")[:budget].decode("utf-8", "ignore").rsplit("\n", 1)[0]
            tail = "\n[search output cut to fit; use a more specific pattern or page with start_line]"
            truncated = True
        summary = f"Searched {snap.id}: {found.match_count} matching lines"
        line_count_shown = None
    elif args.start_line is not None and args.start_line > len(snap.lines):
        return ToolResult.error(
            f"start_line {args.start_line} is past the end of {snap.id} ({len(snap.lines)} lines)",
            web=web_details(backend="native", snapshot_id=snap.id, error_kind="bad_range"),
        )
    else:
        view = page(snap.lines, args.start_line or 1, args.line_count, budget)
        body = view.text
        requested_last = (
            view.total if args.line_count is None else min(view.total, view.first - 1 + args.line_count)
        )
        truncated = view.last < requested_last
        if not view.complete:
            nxt = json.dumps({"snapshot_id": snap.id, "start_line": view.last + 1})
            tail = f"\n[lines {view.first}-{view.last} of {view.total}; continue with {nxt}, or search with pattern]"
        elif view.first > 1:
            tail = f"\n[lines {view.first}-{view.last} of {view.total}]"
        line_count_shown = max(0, view.last - view.first + 1)
        if status is not None:
            summary = f"Fetched {snap.url} as {snap.id} (HTTP {status}, {view.total} lines)"
        else:
            summary = f"Read {snap.id} lines {view.first}-{view.last} of {view.total}"
    if snap.extraction == "stdlib":
        tail += (
            "\n[note: the readability extractor is unavailable here, so this is the whole page as plain "
            "text, navigation included; `mermaid doctor` says why]"
        )
    content = f"{head}\n{untrusted_block(snap.url, body)}{tail}"
    details = web_details(
        backend="native",
        requested_url=requested_url,
        final_url=snap.url,
        status=status,
        error_kind="http_status" if http_error else None,
        media_type=snap.media_type or None,
        charset=charset,
        extraction=snap.extraction,
        snapshot_id=snap.id,
        source_byte_count=snap.source_byte_count,
        output_byte_count=len(content.encode("utf-8")),
        line_count=line_count_shown,
        context_lines=args.context_lines if args.pattern is not None else None,
        match_count=match_count,
        truncated=truncated,
    )
    return ToolResult(
        content=content,
        is_error=http_error,
        summary=(f"HTTP {status} from {snap.url}" if http_error else summary)[:200],
        metadata={"web": details, "untrusted_content": True},
    )
