"""The agent loop: provider turn -> gate -> tools -> results -> next turn, until the model stops or
a limit hits. Emits protocol events through `emit`; never prints, never imports click or an SDK.
Tool failures are data; only run-level failures (provider, limit, cancellation) raise.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mermaid_cli.agent import compaction as cmp
from mermaid_cli.agent.state import AllowAllGate, CompactionPolicy, Gate, Limits, RunStats, repair_history
from mermaid_cli.agent.tool_calls import ToolCalls
from mermaid_cli.core import events as ev
from mermaid_cli.core.errors import LimitReached, ProviderError
from mermaid_cli.core.gather import gather_all
from mermaid_cli.core.types import (
    CONTEXT_FULL,
    CompactionBlock,
    Message,
    ModelTurn,
    ReasoningBlock,
    ToolCallBlock,
    ToolResultBlock,
    TurnRequest,
    Usage,
)
from mermaid_cli.providers.base import NullSink, Provider
from mermaid_cli.tools.base import ToolContext, ToolRegistry

if TYPE_CHECKING:
    from mermaid_cli.tools.context_check import ContextStatus

# A reply that hit the per-response output cap is continued, up to this many times.
MAX_CONTINUATIONS = 4
LENGTH_STOPS = ("length", "max_tokens", "max_output_tokens")
CONTINUE_PROMPT = (
    "Your reply was cut off by the output limit. Continue exactly where it stopped, without repeating."
)


class Agent:
    def __init__(
        self,
        *,
        provider: Provider,
        registry: ToolRegistry,
        ctx: ToolContext,
        emit: Callable[[ev._Event], None],
        system_prompt: str,
        history: list[Message] | None = None,
        gate: Gate | None = None,
        limits: Limits | None = None,
        price: Callable[[Usage], float | None] | None = None,
        on_turn: Callable[[ModelTurn], None] | None = None,
        on_message: Callable[[Message], int | None] | None = None,
        on_compaction: Callable[[list[int], list[int | None]], None] | None = None,
        history_ids: list[int] | None = None,
        compaction: CompactionPolicy | None = None,
        note: Callable[[str], None] = lambda _line: None,
        redact: Callable[[str], str] = lambda s: s,
        reasoning: str | None = None,
        max_output_tokens: int | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        parent: Agent | None = None,
    ) -> None:
        self.provider = provider
        self.registry = registry
        self.ctx = ctx
        self.emit = emit
        self.system_prompt = system_prompt
        history = list(history or [])
        ids = list(history_ids) if history_ids else [None] * len(history)
        by_identity = {id(m): i for i, m in zip(ids, history, strict=False)}
        self.messages: list[Message] = repair_history(list(history))
        # Session-log number of each message of the working context (None: not in the log).
        self.log_ids: list[int | None] = [by_identity.get(id(m)) for m in self.messages]
        self.gate = gate or AllowAllGate()
        self.limits = limits or Limits()
        self.price = price
        self.on_turn = on_turn
        self.on_message = on_message
        self.on_compaction = on_compaction
        self.compaction = compaction or CompactionPolicy()
        self.note = note
        self.context_tokens = 0
        self.redact = redact
        self.reasoning = reasoning
        self.max_output_tokens = max_output_tokens
        self.monotonic = monotonic
        #: a subagent's parent loop: what this one spends is spent by the parent too (and so up to
        #: the root, whose --max-tokens/--max-cost bound the whole tree)
        self.parent = parent
        self.stats = RunStats()
        self.calls = ToolCalls(
            registry=registry,
            ctx=ctx,
            gate=self.gate,
            stats=self.stats,
            emit=emit,
            redact=redact,
            monotonic=monotonic,
        )
        self._message_seq = 0
        self.compactions = 0  # this run's, for context_check
        self.server_compactions = 0  # of them, done by the provider server-side
        ctx.context_status = self._context_status

    # -- conversation -------------------------------------------------------------------------
    def _commit(self, message: Message) -> None:
        self.messages.append(message)
        self.log_ids.append(self.on_message(message) if self.on_message is not None else None)

    def _request_messages(self) -> tuple[Message, ...]:
        """The conversation as sent: append-only (image limits apply when a result is added)."""
        return tuple(self.messages)

    # -- the loop -----------------------------------------------------------------------------
    def _context_status(self) -> ContextStatus:
        """What `context_check` reports (imported here: only that tool asks)."""
        from mermaid_cli.agent.context_status import measure

        return measure(self)

    async def run(self, prompt: str | None) -> RunStats:
        if prompt is not None:
            self._commit(Message.user_text(prompt))
        continued: list[ModelTurn] = []  # replies cut by the output cap, joined into one answer
        while True:
            self._check_limits()
            await self._maybe_compact()
            turn = await self._model_turn()
            calls = turn.message.tool_calls
            if (
                not calls
                and turn.stop_reason in (*LENGTH_STOPS, CONTEXT_FULL)
                and len(continued) < MAX_CONTINUATIONS
            ):
                continued.append(turn)
                if turn.stop_reason == CONTEXT_FULL:  # the window is full: compact, then continue
                    await self._compact(None)
                self._commit(Message.user_text(CONTINUE_PROMPT))
                continue
            if not calls and self.calls.background.pending():  # the run waits for background calls
                await self.calls.background.wait_any()
                self._commit(Message(role="user", content=tuple(self.calls.background.take_finished())))
                continue
            if not calls:
                chain = [*continued, turn]
                self.stats.finished = True
                self.stats.response = "".join(t.message.text for t in chain)
                thoughts = [
                    b.text for t in chain for b in t.content if isinstance(b, ReasoningBlock) and b.text
                ]
                self.stats.reasoning = "\n\n".join(thoughts) if thoughts else None
                return self.stats
            continued = []
            results = await self._run_calls(calls)
            arrived = self.calls.background.take_finished()  # background results that came meanwhile
            self._commit(cmp.admit_images(Message(role="user", content=(*results, *arrived)), self.messages))

    async def _run_calls(self, calls: list[ToolCallBlock]) -> list[ToolResultBlock]:
        """The calls of one model message, concurrently, except that the calls of a `sequential`
        tool (the computer) run one after another in the order the model wrote them. The gate and
        the tools learn where a message starts (`begin_message`, `ctx.message_seq`)."""
        self._message_seq += 1
        self.ctx.message_seq = self._message_seq
        begin = getattr(self.gate, "begin_message", None)  # the policy gate batches decisions
        if begin is not None:
            begin(calls)
        ordered = [i for i, c in enumerate(calls) if getattr(self.registry.get(c.name), "sequential", False)]
        if len(ordered) < 2:
            return await gather_all(*(self.calls.run(call) for call in calls))
        results: list[ToolResultBlock | None] = [None] * len(calls)

        async def one(i: int) -> None:
            results[i] = await self.calls.run(calls[i])

        async def in_order() -> None:
            for i in ordered:
                await one(i)

        await gather_all(in_order(), *(one(i) for i in range(len(calls)) if i not in ordered))
        return [r for r in results if r is not None]

    async def extra_turn(self, prompt: str, *, response_schema: dict[str, Any] | None = None) -> ModelTurn:
        """One more model call (the --output-schema formatting turn), with the same tools (the
        provider forbids calling them) so the request extends the previous one."""
        self._commit(Message.user_text(prompt))
        request = TurnRequest(
            system=self.system_prompt,
            messages=self._request_messages(),
            tools=tuple(self.registry.specs()),
            reasoning=self.reasoning,
            max_output_tokens=self.max_output_tokens,
            response_schema=response_schema,
            compact_at=self._compact_at(),
        )
        turn = await self.provider.turn(request, _EmitSink(self))
        self.stats.num_turns += 1
        self._after_call(turn, turn.stop_reason)
        self._commit(turn.message)
        return turn

    def _check_limits(self) -> None:
        s, lim = self.stats, self.limits
        if lim.max_turns is not None and s.num_turns >= lim.max_turns:
            raise LimitReached(f"max turns reached ({lim.max_turns}) before the model finished")
        self._check_budget()

    def _check_budget(self) -> None:
        """Tokens and cost, here and in every loop above (the budget is the whole run's)."""
        if self.parent is not None:
            self.parent._check_budget()
        s, lim = self.stats, self.limits
        if lim.max_tokens is not None and s.usage.total_tokens >= lim.max_tokens:
            raise LimitReached(
                f"max tokens reached ({s.usage.total_tokens} used, limit {lim.max_tokens}) before the model finished"
            )
        if lim.max_cost is not None and s.cost_usd is not None and s.cost_usd >= lim.max_cost:
            raise LimitReached(
                f"max cost reached (${s.cost_usd:.4f} spent, limit ${lim.max_cost:.4f}) before the model finished"
            )

    async def _model_turn(self) -> ModelTurn:
        recoveries = 0
        while True:
            request = TurnRequest(
                system=self.system_prompt,
                messages=self._request_messages(),
                tools=tuple(self.registry.specs()),
                max_output_tokens=self.max_output_tokens,
                reasoning=self.reasoning,
                compact_at=self._compact_at(),
            )
            try:
                turn = await self.provider.turn(request, _EmitSink(self))
                break
            except ProviderError as exc:
                # A prompt that no longer fits: compact and try again, a bounded number of times.
                if not cmp.is_context_too_long_error(exc) or recoveries >= self.compaction.max_recoveries:
                    raise
                recoveries += 1
                self.note(f"the context is too long for the model; compacting (attempt {recoveries})")
                if not await self._compact(None, max_chars=self.compaction.window * 2):
                    raise
        self.stats.num_turns += 1
        usage = self._after_call(turn, turn.stop_reason)
        self.context_tokens = usage.total_tokens if turn.usage is not None else self._estimate_tokens() + 100
        self.ctx.tokens_total = self.stats.usage.total_tokens
        if any(isinstance(b, CompactionBlock) for b in turn.content):
            self.compactions += 1
            self.server_compactions += 1
            self.note("the provider compacted the context server-side")
        self._commit(turn.message)
        return turn

    def _after_call(self, turn: ModelTurn, stop_reason: str | None) -> Usage:
        """Record a model call: --record, usage and cost, and its `turn_done` event."""
        if self.on_turn is not None:
            self.on_turn(turn)
        usage = turn.usage or Usage()
        self.account(usage)
        self.emit(
            ev.TurnDone(
                total_tokens=usage.total_tokens if turn.usage is not None else None,
                stop_reason=stop_reason,
                usage=ev.UsageInfo(**usage.model_dump()),
                cost_usd=self.price(usage) if self.price is not None else None,
            )
        )
        return usage

    def account(self, usage: Usage) -> None:
        self._add(usage, self.price(usage) if self.price is not None else None)

    def _add(self, usage: Usage, cost: float | None) -> None:
        """Spend `usage` (priced by the loop that made the call) here and in every loop above."""
        if self.parent is not None:
            self.parent._add(usage, cost)
        self.stats.usage = self.stats.usage + usage
        if cost is None:
            self.stats.cost_usd = None
        elif self.stats.cost_usd is not None:
            self.stats.cost_usd += cost

    def _estimate_tokens(self) -> int:
        chars = len(self.system_prompt) + sum(len(m.model_dump_json()) for m in self.messages)
        return chars // 4

    @property
    def tools_ready(self) -> Any:
        return self.calls.tools_ready

    @tools_ready.setter
    def tools_ready(self, value: Any) -> None:
        self.calls.tools_ready = value

    # -- compaction ---------------------------------------------------------------------------
    async def _maybe_compact(self) -> None:
        focus, self.calls.compaction_focus = self.calls.compaction_focus, None
        policy = self.compaction
        due = policy.auto_enabled and (
            # with provider-native compaction the server acts on the token threshold, not we
            (
                not policy.provider_native
                and cmp.should_compact(self.context_tokens, policy.window, policy.threshold_percent)
            )
            or cmp.images_due(self.messages)
        )
        if focus is not None or due:
            await self._compact(focus)

    def _compact_at(self) -> int | None:
        """The input size at which the provider is asked to compact server-side, if it is."""
        policy = self.compaction
        return policy.threshold_tokens if policy.provider_native and policy.auto_enabled else None

    async def _compact(self, focus: str | None, *, max_chars: int | None = None) -> bool:
        """Summarise older history into a checkpoint; the session log keeps every message."""
        request = cmp.build_summary_request(self.messages, focus, max_chars=max_chars)
        try:
            turn = await self.provider.turn(request, NullSink())
        except ProviderError as exc:
            self.note(f"compaction failed: {exc.message}")
            return False
        self._after_call(turn, "compaction")
        summary = turn.message.text
        try:
            new_messages, removed = cmp.apply_compaction(self.messages, summary, self.compaction.tail_turns)
        except ValueError:
            self.note("compaction failed: the summary was empty")
            return False
        if not removed:
            return False
        kept_ids = [self.log_ids[i] for i in range(len(self.messages)) if i not in set(removed)]
        removed_ids = [self.log_ids[i] for i in removed if self.log_ids[i] is not None]
        checkpoint = new_messages[0]
        checkpoint_id = self.on_message(checkpoint) if self.on_message is not None else None
        self.messages = new_messages
        self.log_ids = [checkpoint_id, *kept_ids]
        if self.on_compaction is not None:
            self.on_compaction(removed_ids, self.log_ids)  # type: ignore[arg-type]
        self.context_tokens = self._estimate_tokens()
        self.compactions += 1
        self.note(f"compacted {len(removed)} messages into a checkpoint summary")
        return True

    async def aclose(self) -> None:
        """Run every cleanup tools registered (background processes, servers), however the run ended."""
        cleanups, self.ctx.cleanups = self.ctx.cleanups, []
        for cleanup in reversed(cleanups):
            try:
                outcome = cleanup()
                if asyncio.iscoroutine(outcome):
                    await asyncio.wait_for(outcome, timeout=10)
            except Exception:  # noqa: BLE001 - cleanup must not mask the run's outcome
                pass


class _EmitSink:
    """Streams provider deltas into protocol events."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    def text(self, delta: str) -> None:
        if delta:
            self._agent.emit(ev.Text(delta=self._agent.redact(delta)))

    def reasoning(self, delta: str) -> None:
        if delta:
            self._agent.emit(ev.Reasoning(delta=self._agent.redact(delta)))

    def retry(self, message: str, code: str | None = None) -> None:
        self._agent.emit(ev.Error(message=self._agent.redact(message), code=code, retryable=True))
