"""Compaction, the pure parts: when to compact, the summariser request, and how the history is cut.

The loop (`loop`) decides when to call these and keeps the session log whole: every message
removed here stays in the archive, marked with the compaction that removed it, and
`context_archive` reads it back. Nothing in this module does I/O.

The history is cut at an assistant-message boundary: an assistant message and the tool results that
answer it travel together, so the kept tail never holds a tool result whose call was summarised
away (providers reject that), and a headless run with a single prompt can still be compacted
("turns" here are model rounds, not user prompts).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from mermaid_cli.core.errors import ContextTooLong, ProviderError
from mermaid_cli.core.types import (
    Block,
    CompactionBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    TurnRequest,
)

SUMMARY_SYSTEM = (
    "You write checkpoint summaries of a coding agent's work so that it can continue from the summary "
    "alone. Be exact and complete about facts; drop chatter."
)

SUMMARY_PROMPT = """\
The conversation above is being replaced by your summary; the agent continues from it cold.
Write the handoff you would want if you were resuming this work yourself, with exactly these
four sections:

## Goal
The task as the user gave it, with every requirement and constraint (quote short requests verbatim).

## Decisions
What was decided and why, what was tried and failed, facts learned about the code and the
environment (commands that work, versions, errors and their causes).

## Files touched
Each file created, changed or deleted, one line each: path - what changed. Write "none" if none.

## Open items
What is left to do, in order, and anything unverified. Write "none" if the task is done.

Be specific: names, paths, commands, numbers. Do not invent anything. Reply with the summary only."""

CHECKPOINT_HEADER = (
    "[Checkpoint: the earlier part of this conversation was summarised below. It is not lost: "
    "context_archive searches the full session log and reads any message back word for word.]"
)

#: the most images the working context holds; a result that would pass it keeps the rest as a note
CONTEXT_IMAGES = 20
#: images in the context that make compaction due (well before the hard limit above)
COMPACT_AT_IMAGES = 12
#: images a compaction leaves in the kept tail (the newest screenshot is in the last round)
TAIL_IMAGES = 4
IMAGE_NOTE = (
    "[{n} image(s) not attached: the conversation already holds {limit} images; "
    "they are attached again once compaction has made room]"
)

# Per-block cap in the transcript given to the summariser: tool outputs dominate long runs and
# their head and tail carry what a summary needs.
BLOCK_CHARS = 2000


def should_compact(context_tokens: int, window: int, threshold_percent: int) -> bool:
    """True when `context_tokens` reached `threshold_percent` % of the model's `window`."""
    if window <= 0 or threshold_percent <= 0:
        return False
    return context_tokens * 100 >= window * threshold_percent


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - head - tail} characters omitted ...]\n{text[-tail:]}"


def render_transcript(messages: Sequence[Message], *, block_chars: int = BLOCK_CHARS) -> str:
    """The history as plain text for the summariser: no tool-call structure for a provider to
    validate, and long blocks clipped so the request stays smaller than the context it replaces."""
    names: dict[str, str] = {}
    out: list[str] = []
    for i, msg in enumerate(messages):
        for block in msg.content:
            if isinstance(block, TextBlock):
                if block.text.strip():
                    out.append(f"[{i} {msg.role}]\n{_clip(block.text, block_chars)}")
            elif isinstance(block, ToolCallBlock):
                names[block.id] = block.name
                if block.arguments is not None:
                    args = json.dumps(block.arguments, ensure_ascii=False, sort_keys=True)
                else:
                    args = block.raw_arguments or ""
                out.append(f"[{i} tool call {block.name}] {_clip(args, block_chars)}")
            elif isinstance(block, ToolResultBlock):
                status = " (error)" if block.is_error else ""
                name = names.get(block.call_id, "tool")
                out.append(f"[{i} {name} result{status}]\n{_clip(block.content, block_chars)}")
            elif isinstance(block, ImageBlock):
                out.append(f"[{i} {msg.role} image {block.image.media_type}]")
            elif isinstance(block, ReasoningBlock):
                continue  # private to the model, often encrypted; the actions show the reasoning
            elif isinstance(block, CompactionBlock) and block.text.strip():
                # the provider's own summary of what came before (OpenAI's is opaque: skipped)
                out.append(f"[{i} provider compaction summary]\n{_clip(block.text, block_chars)}")
    return "\n\n".join(out)


def build_summary_request(
    messages: Sequence[Message],
    focus: str | None,
    *,
    max_chars: int | None = None,
    max_output_tokens: int | None = 8000,
) -> TurnRequest:
    """The model call that writes the checkpoint summary of `messages`. `focus` (from
    `compact_context` or `/compact`) says what to keep in particular. `max_chars` caps the
    transcript (head and tail kept), e.g. when the context-too-long error triggered this."""
    transcript = render_transcript(messages)
    if max_chars is not None:
        transcript = _clip(transcript, max_chars)
    prompt = SUMMARY_PROMPT
    if focus and focus.strip():
        prompt += f"\n\nFocus for this summary (keep it in detail): {focus.strip()}"
    text = f"<conversation>\n{transcript}\n</conversation>\n\n{prompt}"
    return TurnRequest(
        system=SUMMARY_SYSTEM,
        messages=(Message.user_text(text),),
        max_output_tokens=max_output_tokens,
    )


def checkpoint_message(summary_text: str) -> Message:
    return Message.user_text(f"{CHECKPOINT_HEADER}\n\n{summary_text.strip()}")


def image_count(messages: Sequence[Message]) -> int:
    """Images the messages carry (tool-result images and image blocks)."""
    total = 0
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                total += len(block.images)
            elif isinstance(block, ImageBlock):
                total += 1
    return total


def admit_images(message: Message, history: Sequence[Message], limit: int = CONTEXT_IMAGES) -> Message:
    """`message` as it joins `history`: images beyond `limit` for the whole context are left out
    (with a note the model reads) now, when it is first added. History already sent is never
    edited for images: that would change the request prefix (refused by Anthropic with thinking,
    and the prompt cache lost); compaction is what frees room (`images_due`)."""
    arriving = image_count([message])
    if arriving == 0:  # most messages: no need to count the whole history's images
        return message
    room = max(0, limit - image_count(history))
    if arriving <= room:
        return message
    blocks: list[Block] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock) and block.images:
            keep = block.images[:room]
            room -= len(keep)
            dropped = len(block.images) - len(keep)
            if dropped:
                note = IMAGE_NOTE.format(n=dropped, limit=limit)
                content = f"{block.content}\n{note}" if block.content else note
                block = block.model_copy(update={"images": keep, "content": content})
        elif isinstance(block, ImageBlock):
            if room > 0:
                room -= 1
            else:
                block = TextBlock(text=IMAGE_NOTE.format(n=1, limit=limit))
        blocks.append(block)
    return Message(role=message.role, content=tuple(blocks))


def images_due(messages: Sequence[Message]) -> bool:
    """Whether the images in the context call for a compaction (which leaves `TAIL_IMAGES`)."""
    return image_count(messages) >= COMPACT_AT_IMAGES


def _chars(message: Message) -> int:
    total = 0
    for b in message.content:
        if isinstance(b, TextBlock):
            total += len(b.text)
        elif isinstance(b, ToolResultBlock):
            total += len(b.content)
        elif isinstance(b, ToolCallBlock):
            total += len(b.raw_arguments or json.dumps(b.arguments or {}))
    return total


def _cut_index(messages: Sequence[Message], keep_tail_turns: int) -> int:
    """Index of the first kept message: the start of the last `keep_tail_turns` model rounds,
    moved earlier while a kept tool result answers a call that would be removed."""
    if keep_tail_turns <= 0:
        return len(messages)
    starts = [i for i, m in enumerate(messages) if m.role == "assistant"]
    if len(starts) < keep_tail_turns:
        return 0
    pos = len(starts) - keep_tail_turns
    while True:
        cut = starts[pos]
        removed_calls = {c.id for m in messages[:cut] for c in m.tool_calls}
        orphan = any(
            isinstance(b, ToolResultBlock) and b.call_id in removed_calls
            for m in messages[cut:]
            for b in m.content
        )
        if not orphan or pos == 0:
            return cut if not orphan else 0
        pos -= 1


def apply_compaction(
    messages: Sequence[Message],
    summary_text: str,
    keep_tail_turns: int,
    *,
    max_tail_chars: int | None = None,
) -> tuple[list[Message], list[int]]:
    """Replace all but the last `keep_tail_turns` model rounds by one checkpoint message.

    Returns the new history and the indices (into `messages`) that were removed, for the session
    log to mark. When nothing would be removed the history comes back unchanged with `[]`.
    `max_tail_chars` keeps fewer rounds (down to none) when the tail alone is that large, and so
    does a tail with more than `TAIL_IMAGES` images.
    """
    if not summary_text.strip():
        raise ValueError("empty summary: the compaction failed and the history must stay as it is")
    turns = max(0, keep_tail_turns)
    cut = _cut_index(messages, turns)
    while turns > 0 and (
        (max_tail_chars is not None and sum(_chars(m) for m in messages[cut:]) > max_tail_chars)
        or image_count(messages[cut:]) > TAIL_IMAGES
    ):
        # fewer rounds kept while the tail alone is too large or holds too many images
        turns -= 1
        cut = _cut_index(messages, turns)
    if cut == 0:
        return list(messages), []
    # The cut is at an assistant message (or the end), so the checkpoint (a user message) is
    # followed by an assistant one and roles keep alternating.
    return [checkpoint_message(summary_text), *messages[cut:]], list(range(cut))


# Provider wordings for "the prompt does not fit" (Anthropic, OpenAI, Gemini, Bedrock, Mistral,
# vLLM, llama.cpp/Ollama, Groq...). Rate limits that mention tokens per minute are not this.
# Kept as text, compiled (and cached by `re`) on the first provider error: only an error reads
# them, and compiling at import cost every run ~1 ms before its first request (issue 23).
_TOO_LONG = (
    r"context[_ ]length[_ ]exceeded"
    r"|maximum context length"
    r"|context (?:window|length|size|limit)[^.]{0,40}(?:exceed|too|reached|larger)"
    r"|exceeds? (?:the )?(?:model'?s? )?(?:maximum )?(?:context|available context)"
    r"|prompt is too long"
    r"|input is too long"
    r"|input (?:token count|length)[^.]{0,80}exceed"
    r"|too many (?:input )?tokens"
    r"|reduce the length of the (?:messages|prompt|input)"
    r"|maximum number of tokens allowed"
    r"|prompt (?:is )?too large"
)
_NOT_CONTEXT = r"per min|rate.?limit|\bTPM\b|\bRPM\b|quota"


def is_context_too_long_error(message: str | BaseException) -> bool:
    """Whether a provider error means the prompt exceeds the model's context window."""
    if isinstance(message, ContextTooLong):
        return True
    if isinstance(message, ProviderError) and message.code == "context_length":
        return True
    text = message.message if isinstance(message, ProviderError) else str(message)
    if re.search(_NOT_CONTEXT, text, re.IGNORECASE):
        return False
    return bool(re.search(_TOO_LONG, text, re.IGNORECASE))
