"""The tool-spec entries the package ships (`tools/tool_specs.json`, see `tools/spec_cache.py`):
the default tool sets, built the normal way, keyed by their sources' content. The first run after
an install takes its entry from there instead of importing every tool to build its schema.

`python -m mermaid_cli.cli.shipped` rewrites it (with the other things the package ships);
`tests/test_spec_cache.py` fails until the file matches the sources: run that after changing a
tool, its schema or its settings.
"""

from __future__ import annotations

import json

from pydantic.version import VERSION as PYDANTIC_VERSION

from mermaid_cli.config.loader import Settings
from mermaid_cli.run.assemble import tool_groups
from mermaid_cli.tools import spec_cache
from mermaid_cli.tools.filters import ToolFilter

#: (interactive, vision) of the tool sets shipped: default settings, no search keys in the
#: environment; a run under other settings builds its own entry on its first run
VARIANTS = ((False, False), (False, True), (True, False), (True, True))
#: the file's one entry that is not a tool set: what built them
BUILT_WITH = "_built_with"


def render() -> bytes:
    """The file's bytes: one entry a line, in key order."""
    settings, env = Settings(), dict[str, str]()
    lines = []
    for interactive, vision in VARIANTS:
        key = spec_cache.cache_key(settings, env, interactive=interactive, vision=vision, by_content=True)
        groups = tool_groups(settings, env, interactive=interactive, vision=vision)
        registry, group_of = spec_cache.build(groups, ToolFilter(settings.tools))
        # the entry's own key order, as `spec_cache.save` writes it: the schemas go into the
        # request body in this order, and a warm run's body must be byte for byte a cold one's
        lines.append(f"{json.dumps(key)}: {json.dumps(spec_cache.entry_data(registry, group_of))}")
    # (the pydantic version is in every key; it is written out for the test's skip message)
    built_with = f"{json.dumps(BUILT_WITH)}: {json.dumps({'pydantic': PYDANTIC_VERSION})}"
    return ("{\n" + ",\n".join([built_with, *sorted(lines)]) + "\n}\n").encode("utf-8")

