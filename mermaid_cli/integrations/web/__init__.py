"""Web access for the `web_fetch` and `web_search` tools.

netguard: where a fetch may connect (URL rules, address classes, DNS pinning, redirect rules);
fetcher: one guarded GET; extract: body → readable text; snapshots: per-run page store;
search_backends: SearXNG, Brave, Tavily; report: the untrusted-content block and metadata.
Nothing here imports httpx or trafilatura at module level (startup speed).
"""
