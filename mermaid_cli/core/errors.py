"""The MermaidError tree. Each error knows its exit code and `result.status` (DESIGN.md §3)."""

from __future__ import annotations


class MermaidError(Exception):
    exit_code = 70
    status = "internal_error"
    code: str | None = None

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class UsageError(MermaidError):
    """Bad flags, empty prompt, unknown session, bad schema file (exit 2)."""

    exit_code = 2
    status = "usage_error"
    code = "usage"


class ConfigError(UsageError):
    """A config file or `-c` override that does not validate: names the file, key and reason."""

    code = "config"

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None) -> None:
        parts = [p for p in (source, key) if p]
        super().__init__(f"{': '.join(parts)}: {message}" if parts else message)
        self.source = source
        self.key = key


class ProviderError(MermaidError):
    """Auth failure, unknown model, unreachable provider, retries exhausted (exit 5)."""

    exit_code = 5
    status = "provider_error"
    code = "provider"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        retryable: bool = False,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.retryable = retryable
        self.status_code = status_code


class ContextTooLong(ProviderError):
    """The provider said the prompt exceeds the model's context window."""

    code = "context_length"


class LimitReached(MermaidError):
    exit_code = 4
    status = "limit"
    code = "limit"


class Blocked(MermaidError):
    exit_code = 3
    status = "blocked"
    code = "blocked"


class RunTimeout(MermaidError):
    exit_code = 124
    status = "timeout"
    code = "timeout"


class Interrupted(MermaidError):
    status = "interrupted"
    code = "interrupted"

    def __init__(self, signum: int) -> None:
        import signal

        name = signal.Signals(signum).name
        super().__init__(f"interrupted by {name}")
        self.exit_code = 128 + signum


EXIT_CODES = {
    "success": 0,
    "failed": 1,
    "usage_error": 2,
    "blocked": 3,
    "limit": 4,
    "provider_error": 5,
    "internal_error": 70,
    "timeout": 124,
}

#: When several outcomes apply (a run's errors, a batch's tasks), the first in this order wins
#: (docs/exit-codes.md); `usage_error` ranks after `internal_error` because, once a run or task has
#: started, a usage error is a fact about that one task's flags, not the batch's.
STATUS_PRECEDENCE = (
    "interrupted",
    "timeout",
    "internal_error",
    "usage_error",
    "provider_error",
    "limit",
    "blocked",
    "failed",
    "success",
)


def worst_status(statuses: list[str]) -> str:
    """The status that wins among `statuses` by STATUS_PRECEDENCE (`success` for none); an unknown
    status ranks as `internal_error`, since only a bug produces one."""
    rank = {status: index for index, status in enumerate(STATUS_PRECEDENCE)}
    worst = "success"
    for status in statuses:
        known = status if status in rank else "internal_error"
        if rank[known] < rank[worst]:
            worst = known
    return worst
