"""Provider-neutral values that cross module boundaries. Frozen, no logic beyond trivial helpers.

A conversation is a list of `Message`s whose `content` is a list of blocks. Tool results travel in
`user` messages (as Anthropic does); the OpenAI adapters convert. The same models are written to
session files and `--record` files, so they are pydantic models (validated when loaded back).
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Usage(_Frozen):
    """Token counts of one model call (or a sum). `input_tokens` excludes cache reads/writes."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
        )

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
        )


class ImageData(_Frozen):
    media_type: str  # image/png, image/jpeg, image/gif, image/webp
    data: str  # base64


class TextBlock(_Frozen):
    type: Literal["text"] = "text"
    text: str


class ReasoningBlock(_Frozen):
    """Model thinking. `signature`/`redacted` (Anthropic) and `item` (OpenAI reasoning item,
    encrypted content included) are carried back to the provider verbatim on later turns."""

    type: Literal["reasoning"] = "reasoning"
    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    provider: str | None = None
    item: dict[str, Any] | None = None


class ToolCallBlock(_Frozen):
    """A tool call as our tools see it. `arguments` is None when the model sent text that is not
    a JSON object; `raw_arguments` then holds it. `native` keeps a provider-native call as the
    model wrote it (e.g. Anthropic's text editor), so history can send it back unchanged.
    `signature` is an opaque token the model attached to the call (Gemini 3's `thought_signature`
    on the OpenAI-compatible endpoint), sent back with it verbatim on later turns."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    native: dict[str, Any] | None = None
    signature: str | None = None

    @field_validator("arguments", "raw_arguments", "native", mode="before")
    @classmethod
    def _scrubbed(cls, value: Any) -> Any:
        # a lone surrogate from the model's JSON must not reach a tool or the next request
        from mermaid_cli.core.arguments import scrub

        return scrub(value)


class ToolResultBlock(_Frozen):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    content: str
    is_error: bool = False
    images: tuple[ImageData, ...] = ()


class ImageBlock(_Frozen):
    type: Literal["image"] = "image"
    image: ImageData


class CompactionBlock(_Frozen):
    """The provider compacted the context server-side (`[compaction] provider_native`): `item` is
    its compaction block (Anthropic) or item (OpenAI Responses) as returned, sent back verbatim on
    later turns to that provider only; the server then ignores what came before it. `text` is the
    readable summary where the provider gives one (Anthropic), "" when it is opaque (OpenAI)."""

    type: Literal["compaction"] = "compaction"
    provider: str
    item: dict[str, Any]
    text: str = ""


Block = Annotated[
    TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock | ImageBlock | CompactionBlock,
    Field(discriminator="type"),
]


class Message(_Frozen):
    role: Literal["user", "assistant"]
    content: tuple[Block, ...]

    @classmethod
    def user_text(cls, text: str) -> "Message":
        return cls(role="user", content=(TextBlock(text=text),))

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        return [b for b in self.content if isinstance(b, ToolCallBlock)]


class ToolSpec(_Frozen):
    """What the model is told about a tool. `display`: the screenshot size (width, height) of a
    screen tool, for provider-native computer-use definitions that declare it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    display: tuple[int, int] | None = None


class TurnRequest(_Frozen):
    """One model call. `response_schema` asks for JSON-only output (the --output-schema turn)."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None
    reasoning: Literal["none", "low", "medium", "high"] | None = None
    response_schema: dict[str, Any] | None = None
    #: ask the provider to compact server-side once the input reaches this many tokens
    #: (`[compaction] provider_native`, where the model supports it); None: never
    compact_at: int | None = None


StopReason = str  # "stop", "tool_use", "length", "content_filter" or a provider-specific string
#: the reply stopped because the conversation filled the model's context window (Anthropic's
#: `model_context_window_exceeded`): a reason to compact and continue, not a finished answer
CONTEXT_FULL: StopReason = "context_window_exceeded"


class ModelTurn(_Frozen):
    """What one model call produced, provider-neutral. This is also one line of a recording."""

    content: tuple[Block, ...]
    stop_reason: StopReason | None = None
    usage: Usage | None = None
    model: str | None = None

    @property
    def message(self) -> Message:
        return Message(role="assistant", content=self.content)


class Decision(_Frozen):
    """What the policy gate decided about one tool call."""

    verdict: Literal["allow", "deny", "ask"]
    by: Literal["mode", "rule", "hook", "classifier", "user", "headless", "hard_deny", "network"]
    reason: str | None = None
    risk: str | None = None


class GateResult(_Frozen):
    """The policy gate's answer for one call. `blocked`: an approval nobody could give (the run
    ends with exit 3); `args`: replacement arguments (a hook's updatedInput), already validated;
    `message`: what the model is told when the call does not run; `context`: a hook's
    additionalContext, appended to the result the model sees."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    decision: Decision
    blocked: bool = False
    args: Any = None
    message: str | None = None
    context: str | None = None


class ToolResult(_Frozen):
    """A tool's outcome. Failures are data (`is_error=True`), never exceptions across the loop.
    `summary` is one line for `tool_finished.summary`; `metadata` carries tool specifics
    (`exit_code`, `fuzzy`, `files_changed`, `web`, ...)."""

    content: str
    is_error: bool = False
    summary: str = ""
    images: tuple[ImageData, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: the tool asks the loop to compact the context before the next model call, keeping this
    #: focus ("" = none); None = no request
    compaction_focus: str | None = None

    @classmethod
    def error(cls, message: str, **metadata: Any) -> "ToolResult":
        return cls(
            content=message,
            is_error=True,
            summary=message.splitlines()[0][:200] if message else "error",
            metadata=metadata,
        )
