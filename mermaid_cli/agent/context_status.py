"""The figures `context_check` reports, measured from a running agent."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from mermaid_cli.tools.context_check import ContextStatus

if TYPE_CHECKING:
    from mermaid_cli.agent.loop import Agent


def measure(agent: Agent) -> ContextStatus:
    specs = agent.registry.specs()
    fixed_chars = len(agent.system_prompt) + sum(
        len(s.name) + len(s.description) + len(json.dumps(s.input_schema)) for s in specs
    )
    fixed = fixed_chars // 4  # the usual 4 characters a token; an estimate, and said to be one
    used = agent.context_tokens or agent._estimate_tokens() + fixed
    policy = agent.compaction
    return ContextStatus(
        used_tokens=used,
        window=policy.window,
        threshold_percent=policy.threshold_percent,
        auto_compaction=policy.auto_enabled,
        tail_turns=policy.tail_turns,
        fixed_tokens=fixed,
        compactions=agent.compactions,
        server_compaction=policy.provider_native,
        server_compactions=agent.server_compactions,
    )
