"""web_search backends: SearXNG (your instance), Brave Search API, Tavily; `auto` picks the first
configured one. Backends are operator-configured endpoints, so they are not subject to the
public-address rule of web_fetch (a SearXNG on localhost is the common case)."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mermaid_cli.config.sections.web import WebSettings

MAX_SNIPPET_CHARS = 5_000
_TAGS = re.compile(r"<[^>]{0,200}>")


@dataclass(frozen=True)
class SearchHit:
    """One web search result."""

    title: str
    url: str
    snippet: str


class SearchFailed(Exception):
    """A query failed. The message never contains the query text or the request URL."""


class SearchBackend(Protocol):
    @property
    def name(self) -> str: ...

    async def search(self, client: Any, query: str, max_results: int) -> list[SearchHit]: ...


def clean(text: Any, limit: int = MAX_SNIPPET_CHARS) -> str:
    """Plain text from a backend string field: tags stripped, entities decoded, spaces collapsed."""
    if not isinstance(text, str):
        return ""
    out = " ".join(html.unescape(_TAGS.sub("", text)).split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


def _hits(items: Any, title_key: str, url_key: str, snippet_key: str, max_results: int) -> list[SearchHit]:
    if not isinstance(items, list):
        raise SearchFailed("unexpected response format")
    hits = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get(url_key), str):
            continue
        hits.append(
            SearchHit(
                title=clean(item.get(title_key), 300) or item[url_key],
                url=item[url_key],
                snippet=clean(item.get(snippet_key)),
            )
        )
        if len(hits) >= max_results:
            break
    return hits


async def _json(response: Any, backend: str) -> Any:
    if response.status_code != 200:
        raise SearchFailed(f"{backend} answered HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise SearchFailed(f"{backend} did not answer JSON") from None


@dataclass(frozen=True)
class SearxngBackend:
    """Web search through a SearXNG instance."""

    base_url: str
    name: str = "searxng"

    async def search(self, client: Any, query: str, max_results: int) -> list[SearchHit]:
        url = self.base_url.rstrip("/") + "/search"
        response = await client.get(url, params={"q": query, "format": "json"})
        if response.status_code == 403:
            raise SearchFailed("searxng answered HTTP 403 (is json enabled in search.formats?)")
        data = await _json(response, self.name)
        return _hits(
            data.get("results") if isinstance(data, dict) else None, "title", "url", "content", max_results
        )


@dataclass(frozen=True)
class BraveBackend:
    """Web search through the Brave Search API."""

    api_key: str
    base_url: str
    name: str = "brave"

    def __repr__(self) -> str:  # never show the key
        return f"BraveBackend(base_url={self.base_url!r})"

    async def search(self, client: Any, query: str, max_results: int) -> list[SearchHit]:
        response = await client.get(
            self.base_url,
            params={"q": query, "count": min(max_results, 20)},
            headers={"Accept": "application/json", "X-Subscription-Token": self.api_key},
        )
        data = await _json(response, self.name)
        web = data.get("web") if isinstance(data, dict) else None
        if web is None and isinstance(data, dict) and "type" in data:
            return []  # a valid answer without web results
        return _hits(
            web.get("results") if isinstance(web, dict) else None, "title", "url", "description", max_results
        )


@dataclass(frozen=True)
class TavilyBackend:
    """Web search through the Tavily API."""

    api_key: str
    base_url: str
    name: str = "tavily"

    def __repr__(self) -> str:  # never show the key
        return f"TavilyBackend(base_url={self.base_url!r})"

    async def search(self, client: Any, query: str, max_results: int) -> list[SearchHit]:
        response = await client.post(
            self.base_url,
            json={"query": query, "max_results": max_results, "search_depth": "basic"},
            headers={"Authorization": f"Bearer {self.api_key}"},
        )
        data = await _json(response, self.name)
        return _hits(
            data.get("results") if isinstance(data, dict) else None, "title", "url", "content", max_results
        )


@dataclass(frozen=True)
class BackendChoice:
    """The search backend a run uses, or why it has none."""

    backend: SearchBackend | None
    reason: str  # why this backend, or why none is viable (with the remedy)

    @property
    def viable(self) -> bool:
        return self.backend is not None


HOW_TO_ENABLE = (
    "To enable web_search, configure one backend in the user config (or with -c): "
    '[web] searxng_url = "http://host:port" (a SearXNG instance with json in search.formats), '
    "or set BRAVE_API_KEY (Brave Search API) or TAVILY_API_KEY (Tavily) in the environment; "
    '[web] search_backend = "auto" (default) picks the first configured of searxng, brave, tavily.'
)


def _searxng(web: WebSettings, env: Mapping[str, str]) -> BackendChoice:
    if web.searxng_url:
        return BackendChoice(SearxngBackend(web.searxng_url), f"searxng at {web.searxng_url}")
    return BackendChoice(None, "search_backend is searxng but [web] searxng_url is not set")


def _brave(web: WebSettings, env: Mapping[str, str]) -> BackendChoice:
    key = env.get("BRAVE_API_KEY", "").strip()
    if key:
        return BackendChoice(BraveBackend(key, web.brave_base_url), "brave (BRAVE_API_KEY is set)")
    return BackendChoice(None, "search_backend is brave but BRAVE_API_KEY is not set")


def _tavily(web: WebSettings, env: Mapping[str, str]) -> BackendChoice:
    key = env.get("TAVILY_API_KEY", "").strip()
    if key:
        return BackendChoice(TavilyBackend(key, web.tavily_base_url), "tavily (TAVILY_API_KEY is set)")
    return BackendChoice(None, "search_backend is tavily but TAVILY_API_KEY is not set")


_BY_NAME = {"searxng": _searxng, "brave": _brave, "tavily": _tavily}


def select_backend(web: WebSettings, env: Mapping[str, str]) -> BackendChoice:
    """The configured backend, or None with the reason and how to enable one."""
    if web.search_backend != "auto":
        choice = _BY_NAME[web.search_backend](web, env)
        return choice if choice.viable else BackendChoice(None, f"{choice.reason}. {HOW_TO_ENABLE}")
    for pick in _BY_NAME.values():
        choice = pick(web, env)
        if choice.viable:
            return BackendChoice(choice.backend, f"{choice.reason}, chosen by search_backend = auto")
    return BackendChoice(None, f"no web search backend is configured. {HOW_TO_ENABLE}")
