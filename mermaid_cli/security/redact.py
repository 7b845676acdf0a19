"""Secret hygiene: one redactor for everything that leaves the process.

Known secret values (provider keys, values of env vars named like *KEY*, *TOKEN*, *SECRET*,
*PASSWORD*, `--mask` values, `MERMAID_MASK`) and well-known token shapes (`sk-…`, `sk-ant-…`,
`ghp_…`, `github_pat_…`, `xoxb-…`, AWS access key ids, `Bearer …`, PEM private keys) become
`[REDACTED]`. One precompiled regex does the whole text in a single pass.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Iterable, Mapping
from typing import Any

PLACEHOLDER = "[REDACTED]"
MIN_SECRET_LEN = 6

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE", re.IGNORECASE)
# names that match SECRET_NAME but hold no secret (paths, switches, ids that are not sensitive)
_NOT_SECRET_NAME = re.compile(
    r"(?:_PATH|_FILE|_DIR|_ENV|_URL_PATH|_ID_TYPE)$|^KEYBOARD|^GPG_KEY_ID$", re.IGNORECASE
)
PROVIDER_KEY_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "MERMAID_DAEMON_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)

PEM_PRIVATE_KEY = r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"
# each starts at a word boundary (applied once to the whole group, which is ~3x faster)
TOKEN_SHAPES = (
    r"sk-ant-[A-Za-z0-9_\-]{10,}",
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"glpat-[A-Za-z0-9_\-]{20,}",
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}\b",
    r"AIza[0-9A-Za-z_\-]{35}",
    r"hf_[A-Za-z0-9]{30,}",
    r"npm_[A-Za-z0-9]{36}",
    r"pypi-[A-Za-z0-9_\-]{50,}",
)
_BEARER = r"(?P<bearer>\b[Bb]earer[ \t]+)(?P<bearer_token>[A-Za-z0-9._~+/\-]{8,}=*)"
#: a literal every match of the shapes above contains: text holding none of them has no token
#: shape, which a substring search (far faster than the regex scan) tells
SHAPE_HINTS = (
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xox",
    "AKIA",
    "ASIA",
    "AGPA",
    "AIDA",
    "AROA",
    "ANPA",
    "AIza",
    "hf_",
    "npm_",
    "pypi-",
    "-----BEGIN ",
    "earer",
)


class Redactor:
    """Replaces known secret values and token shapes with `[REDACTED]`."""

    def __init__(self, secrets: Iterable[str] = (), *, shapes: bool = True) -> None:
        values: set[str] = set()
        for s in secrets:
            if not isinstance(s, str):
                continue
            s = s.strip()
            if len(s) < MIN_SECRET_LEN or s in PLACEHOLDER:
                continue
            values.add(s)
            # the same value as it appears inside a JSON string
            escaped = json.dumps(s, ensure_ascii=False)[1:-1]
            if escaped != s:
                values.add(escaped)
        self.secrets: frozenset[str] = frozenset(values)
        # Two precompiled patterns, not one: an alternation of plain literals keeps the regex
        # engine's fast literal scan, which mixing in the token shapes would lose (~6x slower).
        self._values = tuple(sorted(values, key=len, reverse=True))
        literals = "|".join(re.escape(s) for s in self._values)
        self._literals = re.compile(literals) if literals else None
        self._shapes = _SHAPES if shapes else None

    @classmethod
    def from_environment(cls, env: Mapping[str, str], extra: Iterable[str] = ()) -> Redactor:
        """Secrets from the environment: provider key vars, vars named like *KEY*/*TOKEN*/
        *SECRET*/*PASSWORD*, and `MERMAID_MASK` (comma- or newline-separated), plus `extra`
        (`--mask` values)."""
        found: list[str] = list(extra)
        for name, value in env.items():
            if not value:
                continue
            if name == "MERMAID_MASK":
                found.extend(v.strip() for v in re.split(r"[,\n]", value) if v.strip())
            elif name in PROVIDER_KEY_VARS or (
                SECRET_NAME.search(name) and not _NOT_SECRET_NAME.search(name)
            ):
                found.append(value)
        return cls(found)

    @property
    def longest(self) -> int:
        return max((len(s) for s in self.secrets), default=0)

    def with_secrets(self, more: Iterable[str]) -> Redactor:
        return Redactor([*self.secrets, *more])

    def redact(self, text: str) -> str:
        if not text:
            return text
        # A replacement can, in theory, splice a new occurrence out of its neighbours; repeating
        # until nothing changes settles it (one round when there is nothing to redact).
        # Most text holds no secret: a substring search for each value and each shape's literal
        # decides that ~10x faster than the regex scans, which run only when one is found.
        for _ in range(3):
            new = text
            if self._literals is not None and any(v in new for v in self._values):
                new = self._literals.sub(PLACEHOLDER, new)
            if self._shapes is not None and any(h in new for h in SHAPE_HINTS):
                new = self._shapes.sub(_replace, new)
            if new == text:
                break
            text = new
        return text

    __call__ = redact

    def redact_obj(self, obj: Any) -> Any:
        return redact_obj(obj, self.redact)


_SHAPES = re.compile("|".join([r"\b(?:" + "|".join(TOKEN_SHAPES) + ")", PEM_PRIVATE_KEY, _BEARER]))


def _replace(m: re.Match[str]) -> str:
    if m.group("bearer"):
        return m.group("bearer") + PLACEHOLDER
    return PLACEHOLDER


def redact_obj(obj: Any, redact: Callable[[str], str]) -> Any:
    """A copy of JSON-like data (dicts, lists, tuples, strings) with every string passed through
    `redact`, dict keys included: the one walk every writer of events and sessions uses."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact(k) if isinstance(k, str) else k: redact_obj(v, redact) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_obj(v, redact) for v in obj]
    if isinstance(obj, tuple):
        return tuple(redact_obj(v, redact) for v in obj)
    return obj
_TOKEN_CHARS = string.ascii_letters + string.digits + "_-./+=~"
#: token characters no `TOKEN_SHAPES` body holds: a cut just after one splits no token
_NEVER_IN_SHAPES = "./+=~"
#: longer than any credential's token: a run of token characters past this is data
LONGEST_TOKEN = 1024
_BEARER_TAIL = re.compile(r"[Bb]earer[ \t]*$")
_PEM_BEGIN = "-----BEGIN"


class StreamRedactor:
    """Redaction of text that arrives in pieces (streamed `text` deltas), so that joining the
    emitted pieces never rebuilds a secret: each piece is redacted alone, and a secret split
    across pieces is matched by neither. `feed` returns what is safe to emit now and holds back
    a tail: at least as long as the longest known secret minus one, never cut inside a run of
    token characters (a `sk-…` shape may go on in the next piece), nor after `Bearer ` or an
    unfinished PEM block. `flush` returns the rest (end of the text block)."""

    def __init__(self, redact: Callable[[str], str], secrets: Callable[[], Iterable[str]] = tuple) -> None:
        self.redact = redact
        self.secrets = secrets
        self.pending = ""

    #: below this much held text, a delta that cannot go out whole waits whole (the stream keeps
    #: the model's own chunks); above it, the safe prefix goes out so streaming stays live
    MAX_WHOLE_HOLD = 512

    def feed(self, delta: str) -> str:
        self.pending += delta
        cut = self._safe_cut(self.pending)
        if cut <= 0 or (cut < len(self.pending) and len(self.pending) <= self.MAX_WHOLE_HOLD):
            return ""
        out, self.pending = self.pending[:cut], self.pending[cut:]
        return self.redact(out)

    def flush(self) -> str:
        out, self.pending = self.pending, ""
        return self.redact(out) if out else ""

    def _safe_cut(self, buf: str) -> int:
        secrets = [s for s in self.secrets() if s]
        hold = max((len(s) for s in secrets), default=1) - 1
        cut = max(0, len(buf) - hold)
        for _ in range(len(buf) + 1):  # each round only moves the cut back
            before = cut
            for secret in secrets:  # a whole secret must not straddle the cut
                lo = max(0, cut - len(secret) + 1)
                i = buf.find(secret, lo, cut + len(secret) - 1)
                while 0 <= i < cut:
                    if i + len(secret) > cut:
                        cut = i
                        break
                    i = buf.find(secret, i + 1, cut + len(secret) - 1)
            # a token-shaped word may continue after the cut (or in the next delta): back to its
            # start, found by one scan from the end (a character at a time, a long unbroken run
            # such as base64 cost the whole buffer on every delta, quadratic in the answer)
            if cut > 0 and (cut == len(buf) or buf[cut] in _TOKEN_CHARS) and buf[cut - 1] in _TOKEN_CHARS:
                start = len(buf[:cut].rstrip(_TOKEN_CHARS))
                end = len(buf) - len(buf[cut:].lstrip(_TOKEN_CHARS))
                longest = max(LONGEST_TOKEN, hold + 1)
                if end - start <= longest:
                    cut = start
                else:
                    # No token is that long (base64, a hash run): the run's head goes out, its
                    # last `longest` characters wait, cut after a character no token shape holds
                    # where there is one. Held whole, the answer stalled until the run ended.
                    limit = min(cut, end - longest)
                    safe = max(buf.rfind(c, start, limit) for c in _NEVER_IN_SHAPES)
                    cut = safe + 1 if safe >= start else limit
            bearer = _BEARER_TAIL.search(buf, 0, cut)
            if bearer is not None:
                cut = bearer.start()
            begin = buf.rfind(_PEM_BEGIN, 0, cut)
            if begin >= 0 and not re.search(r"-----END [A-Z ]*PRIVATE KEY-----", buf[begin:]):
                cut = begin
            if cut == before:
                break
        return cut

