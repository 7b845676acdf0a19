"""The `agent` tool's spawner: each child is a run built by `run.assemble` from the parent's
options, narrowed (mode, tools, servers, model), with its own conversation and session file
(under the parent's session), its events forwarded into the parent's stream tagged with
`agent_id`/`parent_call_id`, and its tokens and cost counted against the run's one budget.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mermaid_cli.core import events as ev
from mermaid_cli.core.errors import LimitReached, MermaidError
from mermaid_cli.core.types import ToolResult
from mermaid_cli.run.child import AgentToolSource, ChildOutput
from mermaid_cli.run.lineage import (
    NEVER_INHERITED,
    AgentRecord,
    ChildTerms,
    Lineage,
    agent_types,
    stricter,
)
from mermaid_cli.run.options import ExecOptions, RunIO
from mermaid_cli.run.output import Output
from mermaid_cli.run.parts import close_draft
from mermaid_cli.run.setup import Draft
from mermaid_cli.run.worktree import Worktree, WorktreeError, apply_patch
from mermaid_cli.tools.agent import SpawnRequest
from mermaid_cli.tools.base import ToolRegistry

if TYPE_CHECKING:
    from mermaid_cli.agent.state import RunStats
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.providers.resolve import ResolvedModel


class Subagents:
    """One run's children (the `Spawner` of `tools.agent`)."""

    def __init__(
        self, opts: ExecOptions, io: RunIO, out: Output, draft: Draft, settings: Settings, lineage: Lineage
    ) -> None:
        self.opts, self.io, self.out, self.draft = opts, io, out, draft
        self.settings = settings
        self.lineage = lineage
        self.types = {**lineage.tree.plugin_types, **agent_types(settings)}
        self.children: list[str] = []  # direct children, in spawn order
        #: set by assemble once the run's loop exists; a child's parts see it through its lineage
        self.deadline: float = float("inf")
        #: the run's checkpoint store: a worktree child's patch is checkpointed before it lands
        self.checkpoint: Callable[[list[Path], str], object] | None = None
        #: the run's model, lent to children on the same one
        self.model: ResolvedModel | None = None

    def register(self, registry: ToolRegistry) -> None:
        from mermaid_cli.tools.agent import AgentTool

        registry.add_dynamic(AgentToolSource(AgentTool(self.describe_types(), registry.kept_schema("agent"))))

    def restore(self, saved: object) -> None:
        """The children a resumed session had (their terms as recorded at spawn)."""
        if not isinstance(saved, list):
            return
        from mermaid_cli.run.saved_child import SavedChild

        for item in saved:
            try:
                child = SavedChild.model_validate(item)
            except ValueError:
                continue  # a damaged entry: that child cannot be followed up
            record = AgentRecord(
                child.terms(), self.lineage.agent_id, self._session_dir() / f"{child.agent_id}.jsonl"
            )
            record.num_turns, record.status = child.num_turns, child.status
            self.lineage.tree.records[child.agent_id] = record
            self.children.append(child.agent_id)

    def _save(self) -> None:
        """Record the children in this run's session (for a follow-up after --resume)."""
        if self.out.session is None:
            return
        from mermaid_cli.run.saved_child import SavedChild

        records = self.lineage.tree.records
        saved = [SavedChild.of(records[i]).model_dump(mode="json") for i in self.children]
        self.out.session.append("state", agents=saved)

    def describe_types(self) -> str:
        return "\n".join(
            f"- {t.name}: {t.description} (safety at most {t.ceiling})" for t in self.types.values()
        )

    # -- the Spawner protocol -----------------------------------------------------------------
    async def spawn(self, request: SpawnRequest) -> ToolResult:
        kind = self.types.get(request.agent_type)
        if kind is None:
            return ToolResult.error(
                f"unknown agent type {request.agent_type!r}; types: {', '.join(self.types)}"
            )
        isolation = request.isolation or kind.isolation
        worktree = None
        if isolation == "worktree":
            try:
                worktree = await Worktree.create(self.draft.project_root, self.io.env)
            except WorktreeError as exc:
                return ToolResult.error(str(exc))
        lin = self.lineage
        agent_id = lin.tree.new_id()
        terms = ChildTerms(
            agent_id=agent_id,
            agent_type=kind,
            description=request.description,
            mode=stricter(self.settings.safety.mode, kind.ceiling),  # the parent's live mode
            deny_tools=lin.deny_tools
            | frozenset(request.deny_tools)
            | frozenset(self.settings.agents.deny_tools),
            deny_servers=lin.deny_servers
            | frozenset(request.deny_servers)
            | frozenset(self.settings.agents.deny_servers),
            model=request.model or kind.model,
            isolation=isolation,
        )
        record = AgentRecord(terms, lin.agent_id, self._session_dir() / f"{agent_id}.jsonl")
        lin.tree.records[agent_id] = record
        self.children.append(agent_id)
        return await self._drive(record, request.prompt, request.call_id, follow_up=False, worktree=worktree)

    async def follow_up(self, agent_id: str, prompt: str, call_id: str) -> ToolResult:
        record = self.lineage.tree.records.get(agent_id)
        if record is None or agent_id not in self.children:
            return ToolResult.error(f"{agent_id} is not a subagent of this run (see action=list)")
        if record.busy:
            return ToolResult.error(f"{agent_id} is still working on another request; wait for it")
        return await self._drive(record, prompt, call_id, follow_up=True)

    def list_children(self) -> ToolResult:
        records = self.lineage.tree.records
        lines = [
            f"{i}\t{records[i].terms.agent_type.name}\t{records[i].terms.description}\t"
            f"turns={records[i].num_turns}\t{records[i].status}"
            for i in self.children
        ]
        return ToolResult(content="\n".join(lines) or "no subagents", summary=f"{len(lines)} subagent(s)")

    def delete(self, agent_id: str) -> ToolResult:
        record = self.lineage.tree.records.get(agent_id)
        if record is None or agent_id not in self.children:
            return ToolResult.error(f"{agent_id} is not a subagent of this run (see action=list)")
        if record.busy:
            return ToolResult.error(f"{agent_id} is running; it cannot be deleted now")
        self.children.remove(agent_id)
        self._save()
        record.status = "deleted"
        record.session_path.unlink(missing_ok=True)
        return ToolResult(content=f"deleted {agent_id}", summary=f"deleted {agent_id}")

    # -- one drive of a child -----------------------------------------------------------------
    def _session_dir(self) -> Path:
        if self.lineage.session_path is not None:  # a grandchild lives beside its parent
            return self.lineage.session_path.parent
        root_session = self.out.session
        assert root_session is not None  # the session opens before any tool runs
        return root_session.path.with_suffix(".agents")

    def _child_lineage(self, record: AgentRecord, call_id: str) -> Lineage:
        lin = self.lineage
        return Lineage(
            tree=lin.tree,
            depth=lin.depth + 1,
            terms=record.terms,
            parent_call_id=call_id,
            parent_agent=self.draft.agent,
            session_path=record.session_path,
            deny_tools=record.terms.deny_tools | NEVER_INHERITED,
            deny_servers=record.terms.deny_servers,
            deadline=self.deadline,
            model=self.model,
        )

    def _child_options(self, terms: ChildTerms, prompt: str, root: Path) -> tuple[ExecOptions, RunIO]:
        preamble = terms.agent_type.preamble
        opts = dataclasses.replace(
            self.opts,
            prompt=f"{preamble}\n\n{prompt}" if preamble else prompt,
            output_format="text",
            model=terms.model or self.draft.model_id or self.opts.model,
            safety=terms.mode,
            resume=None,
            continue_=False,
            record=None,
            path=str(root),
            system_prompt=None,
            system_prompt_file=None,
            append_system_prompt=None,
            append_system_prompt_file=None,
            output_last_message=None,
            output_schema=None,
            verify=[],
            diff_out=None,
            mcp_prompt=None,
            quiet=True,
            ephemeral=False,
            no_interactive=True,
        )
        io = dataclasses.replace(
            self.io, stdin=None, stdin_is_tty=False, stderr_is_tty=False, install_signal_handlers=False
        )
        return opts, io

    async def _drive(
        self,
        record: AgentRecord,
        prompt: str,
        call_id: str,
        *,
        follow_up: bool,
        worktree: Worktree | None = None,
    ) -> ToolResult:
        terms = record.terms
        if terms.isolation == "worktree" and worktree is None:  # a follow-up: a fresh checkout
            try:
                worktree = await Worktree.create(self.draft.project_root, self.io.env)
            except WorktreeError as exc:
                return ToolResult.error(str(exc))
        try:
            return await self._drive_in(record, prompt, call_id, follow_up=follow_up, worktree=worktree)
        finally:
            if worktree is not None:
                await asyncio.to_thread(worktree.remove)

    async def _drive_in(
        self, record: AgentRecord, prompt: str, call_id: str, *, follow_up: bool, worktree: Worktree | None
    ) -> ToolResult:
        from mermaid_cli.run.assemble import assemble

        terms = record.terms
        root = worktree.project if worktree is not None else self.draft.project_root
        async with self.lineage.tree.in_flight:
            record.busy, record.status = True, "running"
            started = time.monotonic()
            tags = {"agent_id": terms.agent_id, "parent_call_id": call_id}
            self.out.emit(
                ev.AgentStarted(
                    agent_type=terms.agent_type.name,
                    description=terms.description,
                    follow_up=follow_up,
                    **tags,
                )
            )
            opts, io = self._child_options(terms, prompt, root)
            child_out = ChildOutput(self.out, terms.agent_id, call_id)
            draft = Draft(project_root=root, model_id="", safety_mode=terms.mode, t0=io.monotonic())
            stats: RunStats | None = None
            error: str | None = None
            landed: list[str] | None = None
            stopped: asyncio.CancelledError | None = None
            try:
                parts = await assemble(opts, io, child_out, draft, self._child_lineage(record, call_id))
                budget = min(parts.settings.agents.timeout, self.deadline - io.monotonic())
                stats = await asyncio.wait_for(parts.agent.run(parts.prompt), timeout=max(budget, 0.001))
                status = "blocked" if stats.blocked else "success"
                if worktree is not None and status == "success":
                    landed = await self._land(worktree, record)
            except WorktreeError as exc:
                status, error = "conflict", str(exc)
            except TimeoutError:
                status, error = "timeout", f"the subagent ran out of time ({terms.agent_id})"
            except LimitReached as exc:
                status, error = "limit", exc.message
            except MermaidError as exc:
                status, error = exc.status, exc.message
            except asyncio.CancelledError as exc:  # the run is stopping (a signal, its deadline)
                status, stopped = "cancelled", exc
            finally:
                await close_draft(draft)
                record.busy = False
            if stats is None and draft.agent is not None:
                stats = draft.agent.stats
            self._account(record, stats, status)
            self._save()
            self.out.emit(
                ev.AgentFinished(
                    agent_type=terms.agent_type.name,
                    status=status,
                    usage=ev.UsageInfo(**(stats.usage.model_dump() if stats else {})),
                    cost_usd=stats.cost_usd if stats else None,
                    num_turns=stats.num_turns if stats else 0,
                    duration_ms=int((time.monotonic() - started) * 1000),
                    **tags,
                )
            )
        if stopped is not None:  # reported like every other end (its spend, `agent_finished`)
            raise stopped
        if landed is not None and stats is not None:
            stats.files_changed = landed  # the patch's files, as they now are in the project
        return self._report(record, stats, status, error, call_id)

    async def _land(self, worktree: Worktree, record: AgentRecord) -> list[str]:
        """A worktree child's changes, applied to the project as one checkpointed patch."""
        patch = await worktree.patch()
        if not patch.strip():
            return []
        saved = record.session_path.with_suffix(".patch")
        return await apply_patch(worktree, patch, checkpoint=self.checkpoint, saved=saved)

    def _account(self, record: AgentRecord, stats: RunStats | None, status: str) -> None:
        record.status = status
        if stats is None:
            return
        record.num_turns += stats.num_turns
        record.input_tokens += stats.usage.input_tokens
        record.output_tokens += stats.usage.output_tokens
        if stats.cost_usd is None or record.cost_usd is None:
            record.cost_usd = None
        else:
            record.cost_usd += stats.cost_usd

    def _report(
        self, record: AgentRecord, stats: RunStats | None, status: str, error: str | None, call_id: str
    ) -> ToolResult:
        agent_id = record.terms.agent_id
        trailer = f"\n\n[agent_id: {agent_id}]"
        parent = self.draft.agent
        if stats is not None and stats.blocked and parent is not None:
            # a headless ask inside the child is a block for the whole run (exit 3)
            reasons = "; ".join(str(b.get("reason", "")) for b in stats.blocked)
            parent.stats.blocked.append(
                {
                    "call_id": call_id,
                    "tool": "agent",
                    "agent_id": agent_id,
                    "reason": f"subagent {agent_id}: {reasons}",
                }
            )
        if error is not None:
            return ToolResult.error(f"subagent {agent_id} stopped ({status}): {error}{trailer}")
        report = stats.response if stats is not None else ""
        return ToolResult(
            content=(report or "(the subagent gave no report)") + trailer,
            summary=f"{agent_id} {status}",
            metadata={"files_changed": list(stats.files_changed) if stats is not None else []},
        )
