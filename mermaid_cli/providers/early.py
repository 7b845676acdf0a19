"""The early first request: a run's first model request sent at start, before the ~0.4 s of imports
that build it, so the model works while Mermaid loads (issue 23). Stdlib only.

How it stays exact:

- A **recipe** is the first request a run really sent (method, URL, headers, body), with the values
  that differ between runs made slots: the prompt, the project root (only where it stands as a
  whole path), and the variables `resolve.create_provider` took the endpoint's base URL and key
  from (`note_endpoint`; nothing is guessed from values, and a request two endpoints could own keeps
  nothing). A filled-in base URL is stripped and checked as `resolve` checks it (no plain http off
  the machine), so an early request never goes where the run's own would not. A secret is never
  stored: a recipe whose text still holds the key or a credential-like variable's value, whose
  credential-like header is not entirely a slot, or whose literal URL holds user info, is not kept.
- Recipes are keyed by everything else a first request can depend on: Mermaid's code (every module's
  size and mtime), the Python, the flags, whether the project is a git repository, the `MERMAID_*`
  and provider variables (values; for URL and credential variables only whether they are blank)
  and which standard streams are terminals. `cli/entry.py` decides which runs qualify at all:
  plain `exec` flags, a prompt argument, no piped stdin, no proxy, a writable project, and no
  config, instructions, memory, skills or plugins anywhere the run would read them.
- A new recipe is a **candidate**; the next run with its key sends it early, and once a sent recipe
  has been taken it is **confirmed**. A recipe that was sent and did not match is marked
  **unpredictable** and never sent again, so an input that changes between runs (a session id, a
  clock) costs one request, once. A candidate that cannot be filled in (its slot variable is now
  blank) is not sent; it is compared with what the run sends, and after three misses it is
  unpredictable too. (The candidate is sent on its second run, not only after a confirming run:
  a CI job on a fresh machine usually runs Mermaid two or three times, and would otherwise never
  gain anything.)
- A recipe is sent on a worker thread at start. When the run's own first request is ready,
  `WireClient` offers it here (`claim`): only byte-identical bytes to the same origin take the early
  connection (its response is read as the run's own); anything else closes it unread, prints a
  warning on stderr and marks the recipe unpredictable. An early send that failed, or is still
  connecting when the run's connect timeout is up, leaves the run to send normally (and meet the
  same failure itself); a worker the run gave up on never sends.

The store sits beside the bytecode (`mermaid_cli/__pycache__`), like the tool-spec and generated-code
caches, so a CI job's fresh `$HOME` still finds it; it holds Mermaid's own prompt and tool schemas
only (qualifying runs have no config or instruction files). `MERMAID_NO_EARLY_REQUEST=1` turns the
whole mechanism off; `MERMAID_EARLY_REQUEST_STORE` moves the store (a directory; tests).
"""

from __future__ import annotations

import json
import os
import sys
import threading

from mermaid_cli.core.sources import package_stats
from mermaid_cli.providers.http1 import Origin, base_url_problem, frame

# not `typing.TYPE_CHECKING`: this module loads before the run's imports, typing's ~7 ms included
TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket

PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
#: one file per recipe key; the least recently written beyond MAX_RECIPES are removed
STORE = os.path.join(PACKAGE, "__pycache__", f"early-request.{sys.implementation.cache_tag}")
MAX_RECIPES = 16
#: misses a candidate may have before it is marked unpredictable
MAX_MISSES = 3
#: seconds the early connection may take to connect (the run's own connect timeout); every address
#: of a name but the last gets ADDRESS_TIMEOUT
CONNECT_TIMEOUT = 10.0
ADDRESS_TIMEOUT = 1.0
#: seconds `claim` waits for an early send still under way
CLAIM_WAIT = 10.0
#: a provider's (`KEY_PREFIXES`) base URL and key variables: the kind a slot is filled from, so the
#: key records only whether they are blank
SLOT_SUFFIXES = ("_BASE_URL", "_API_KEY", "_KEY", "_TOKEN")
#: variables whose values must never reach the store (checked over the whole recipe)
SECRET_MARKS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")
#: what in a header's name marks a credential: its value must be slots entirely
CREDENTIAL_HEADER_MARKS = ("authorization", "key", "token", "secret", "cookie", "auth")
#: prefixes of the variables a first request may depend on (their values are part of the key)
KEY_PREFIXES = (
    "MERMAID_",
    "ANTHROPIC_",
    "OPENAI_",
    "AZURE_",
    "GEMINI_",
    "GOOGLE_",
    "VERTEX",
    "AWS_",
    "XAI_",
    "OPENROUTER_",
    "MISTRAL_",
    "DEEPSEEK_",
    "GROQ_",
    "OLLAMA_",
    "SSL_",
    "BRAVE_",
    "TAVILY_",
)
#: locations and switches, not inputs of a request (their effects are checked by `cli/entry.py`)
UNKEYED = frozenset({"MERMAID_CONFIG_DIR", "MERMAID_DATA_DIR", "MERMAID_EARLY_REQUEST_STORE"})


def slot_name(name: str) -> bool:
    upper = name.upper()
    return upper.endswith(SLOT_SUFFIXES) and upper.startswith(KEY_PREFIXES)


def secret_name(name: str) -> bool:
    return any(mark in name.upper() for mark in SECRET_MARKS)


class Plan:
    """What the entry point learned before anything heavy was imported (plain classes here:
    `dataclasses` imports `inspect`, ~15 ms before the request could go)."""

    def __init__(self, key: str, root: str, prompt: str, env: dict[str, str], store: str = STORE) -> None:
        self.key, self.root, self.prompt, self.env, self.store = key, root, prompt, env, store


class Observed:
    """The run's own first request, as `WireClient` was about to send it."""

    def __init__(
        self, method: str, url: str, headers: dict[str, str], body: bytes, user_agent: str, data: bytes
    ) -> None:
        self.method, self.url, self.headers, self.body = method, url, headers, body
        self.user_agent, self.data = user_agent, data


class Early:
    """The process's early exchange (there is at most one)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.thread: threading.Thread | None = None
        self.origin: Origin | None = None
        self.data = b""
        self.sock: socket.socket | None = None
        self.reusable = True
        self.failed = False
        self.settled = False
        self.observed: Observed | None = None
        self.outcome = "none"  # none | adopted | mismatch | unsent
        self.sent_state: object = None  # the state of the recipe sent early
        #: base URL -> (the variable it came from, the variable the key came from, the key), as
        #: `resolve.create_provider` took them: the only values a recipe may make slots of
        self.endpoints: dict[str, tuple[str | None, str | None, str | None]] = {}
        self.lock = threading.Lock()
        self.abandoned = False  # the run went on without it: a late worker must not send


#: the sources noted for a base URL two endpoints share with different variables
AMBIGUOUS: tuple[str | None, str | None, str | None] = ("", "", "")


def note_endpoint(base_url: str, base_url_var: str | None, key_var: str | None, key: str | None) -> None:
    """Where an endpoint's base URL and key came from (None: not from the environment)."""
    early = _early
    if early is None or early.settled:
        return
    noted = (base_url_var, key_var, key)
    if early.endpoints.get(base_url, noted) != noted:
        noted = AMBIGUOUS  # two providers at one base URL: which one sent the request is a guess
    early.endpoints[base_url] = noted


_early: Early | None = None


def key_for(argv: list[str], env: dict[str, str], ttys: tuple[bool, bool, bool], *, git: bool) -> str:
    """The recipe key: every input of a first request that is not a slot (see the module doc)."""
    import hashlib

    from mermaid_cli import __version__

    files = package_stats(PACKAGE)
    variables = sorted(
        (name, ("<set>" if value.strip() else "<blank>") if slot_name(name) or secret_name(name) else value)
        for name, value in env.items()
        if name.upper().startswith(KEY_PREFIXES) and name not in UNKEYED
    )
    inputs = [1, __version__, sys.version, sys.platform, files, argv, variables, ttys, git]
    return hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:32]


# -- the store ---------------------------------------------------------------------------------


def load_recipe(store: str, key: str) -> dict[str, object] | None:
    try:
        with open(os.path.join(store, key + ".json"), "rb") as file:
            data = json.loads(file.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def save_recipe(store: str, key: str, recipe: dict[str, object]) -> None:
    from pathlib import Path

    from mermaid_cli.core.cache_files import write_whole

    data = json.dumps(recipe, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    write_whole(Path(store) / f"{key}.json", data)
    try:
        kept = sorted(Path(store).glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in kept[MAX_RECIPES:]:
            old.unlink()
    except OSError:
        pass


# -- recipes: a request with its slots ---------------------------------------------------------

#: a template: literal text, or a slot: ["base", VAR] (a base URL), ["key", VAR], ["root"], ["prompt"]
Part = str | list[str]


def _string_inner(text: str) -> str:
    """How a string's characters appear inside a JSON string in a request body (`http.encode`)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _split(parts: list[Part], needle: str, slot: list[str]) -> list[Part]:
    out: list[Part] = []
    for part in parts:
        if not isinstance(part, str) or needle not in part:
            out.append(part)
            continue
        pieces = part.split(needle)
        for i, piece in enumerate(pieces):
            if i:
                out.append(slot)
            if piece:
                out.append(piece)
    return out


#: characters that continue a path name: the root is a slot only where none touches it
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~-")


def _root_stands_alone(body: str, root: str) -> bool:
    """Whether every occurrence of `root` in `body` is the whole path (a project at `/model` must
    not turn `replay/model` into a slot)."""
    start = body.find(root)
    while start >= 0:
        before = body[start - 1] if start else " "
        end = start + len(root)
        after = body[end] if end < len(body) else " "
        if before in _NAME_CHARS or before == "/" or after in _NAME_CHARS:
            return False
        start = body.find(root, end)
    return True


def _endpoint_for(url: str, early: Early) -> tuple[str, str | None, str | None, str | None] | None:
    """(base URL, its variable, the key's variable, the key) of the one noted endpoint `url` is
    under; None when none is, or more than one could be (nothing is guessed)."""
    under = [
        (base, *sources)
        for base, sources in early.endpoints.items()
        if url == base or url.startswith(base + "/") or url.startswith(base + "?")
    ]
    return under[0] if len(under) == 1 and under[0][1:] != AMBIGUOUS else None


def make_recipe(seen: Observed, plan: Plan, early: Early) -> dict[str, object] | None:
    """The recipe for `seen`, or None when it cannot be reproduced exactly without storing a secret."""
    endpoint = _endpoint_for(seen.url, early)
    if endpoint is None:
        return None
    base, base_var, key_var, key = endpoint
    try:
        body = seen.body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    quoted = json.dumps(plan.prompt, ensure_ascii=False)
    root = _string_inner(plan.root)
    if body.count(quoted) != 1 or len(plan.root) < 2 or root not in body:
        return None
    body_parts = _split([body], quoted, ["prompt"])
    if not all(_root_stands_alone(p, root) for p in body_parts if isinstance(p, str)):
        return None
    body_parts = _split(body_parts, root, ["root"])
    url: list[Part] = [["base", base_var], seen.url[len(base) :]] if base_var else [seen.url]
    if base_var is None and "@" in seen.url.split("/")[2]:
        return None  # user info in a literal URL is a credential
    headers: dict[str, list[Part]] = {}
    for name, value in seen.headers.items():
        parts: list[Part] = [value]
        if key_var is not None and key:
            parts = _split(parts, key, ["key", key_var])
        if any(mark in name.lower() for mark in CREDENTIAL_HEADER_MARKS) and any(
            isinstance(p, str) and p.strip() not in ("", "Bearer", "Basic") for p in parts
        ):
            return None  # a credential that did not come whole from the environment
        headers[name] = parts
    recipe: dict[str, object] = {
        "state": "candidate",
        "misses": 0,
        "method": seen.method,
        "url": url,
        "headers": headers,
        "user_agent": seen.user_agent,
        "body": body_parts,
    }
    text = json.dumps(recipe, ensure_ascii=False)
    from mermaid_cli.security.redact import Redactor

    # nothing the run itself would redact (keys, MERMAID_MASK values, token shapes) is stored, nor
    # any credential-like variable's value
    credentials = [value for name, value in plan.env.items() if secret_name(name)]
    redactor = Redactor.from_environment(plan.env, [key, *credentials] if key else credentials)
    return recipe if redactor.redact(text) == text else None


def _fill(parts: object, plan: Plan) -> str | None:
    if not isinstance(parts, list):
        return None
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif part == ["prompt"]:
            out.append(json.dumps(plan.prompt, ensure_ascii=False))
        elif part == ["root"]:
            out.append(_string_inner(plan.root))
        elif isinstance(part, list) and len(part) == 2 and part[0] in ("base", "key"):
            value = plan.env.get(str(part[1]), "").strip()  # as `resolve`/`lookup_key` read it
            if not value:
                return None
            if part[0] == "base":
                if base_url_problem(value) is not None:
                    return None  # what `resolve.check_base_url` refuses is never sent
                value = value.rstrip("/")
            out.append(value)
        else:
            return None
    return "".join(out)


def build(recipe: dict[str, object], plan: Plan) -> tuple[Origin, bytes] | None:
    """The request bytes `recipe` gives for this run (None when a slot cannot be filled)."""
    url = _fill(recipe.get("url"), plan)
    body = _fill(recipe.get("body"), plan)
    raw_headers = recipe.get("headers")
    method, user_agent = recipe.get("method"), recipe.get("user_agent")
    if url is None or body is None or not isinstance(raw_headers, dict):
        return None
    if not isinstance(method, str) or not isinstance(user_agent, str):
        return None
    headers = {}
    for name, parts in raw_headers.items():
        value = _fill(parts, plan)
        if value is None:
            return None
        headers[name] = value
    try:
        return frame(method, url, headers, body.encode("utf-8"), user_agent)
    except Exception:
        return None


# -- the exchange ------------------------------------------------------------------------------


def begin(plan: Plan) -> None:
    """Record the plan and, when its key has a recipe that is not unpredictable, send it on a worker
    thread."""
    global _early
    early = _early = Early(plan)
    recipe = load_recipe(plan.store, plan.key)
    if recipe is None or recipe.get("state") not in ("candidate", "confirmed"):
        return
    built = build(recipe, plan)
    if built is None:
        return
    early.origin, early.data = built
    early.sent_state = recipe.get("state")
    import socket  # noqa: F401 - here, not on the thread: two importing threads hand the GIL to and fro

    if early.origin[0] == "https":
        # here too: asyncio is about to load while `ssl` cannot be imported (cli/lazy_ssl.py)
        import ssl  # noqa: F401

    early.thread = threading.Thread(target=_send, args=(early,), name="mermaid-early-request", daemon=True)
    early.thread.start()


def _connect(host: str, port: int) -> socket.socket:
    """Each address in turn; every one but the last gets at most ADDRESS_TIMEOUT (a black-holed
    IPv6 route must not hold the request the run's own happy-eyeballs connect would not wait for)."""
    import socket

    # an ASCII name goes as bytes: a str is encoded with the "idna" codec, which leaves ASCII labels
    # as they are but imports `encodings.idna`, `stringprep` and `unicodedata` first (~1.5 ms)
    name: str | bytes = host.encode("ascii") if host.isascii() else host
    addresses = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    last: OSError = OSError(f"no address for {host}")
    for i, (family, kind, proto, _, address) in enumerate(addresses):
        sock = socket.socket(family, kind, proto)
        sock.settimeout(CONNECT_TIMEOUT if i == len(addresses) - 1 else ADDRESS_TIMEOUT)
        try:
            sock.connect(address)
            return sock
        except OSError as exc:
            sock.close()
            last = exc
    raise last


def _send(early: Early) -> None:
    assert early.origin is not None
    scheme, host, port = early.origin
    conn: socket.socket | None = None
    try:
        conn = _connect(host, port)
        if scheme == "https":
            from mermaid_cli.providers.tls import verified_context

            conn = verified_context().wrap_socket(conn, server_hostname=host)
        with early.lock:  # the run either takes what was sent or has given up on it: never both
            if early.abandoned:
                raise OSError("abandoned")
        conn.sendall(early.data)
        conn.settimeout(None)
        taken = _relay(conn) if scheme == "https" else conn
        with early.lock:
            if early.abandoned:  # given up on while the bytes went out: nobody reads the answer
                taken.close()
                return
            early.sock, early.reusable = taken, scheme != "https"
    except Exception:
        early.failed = True
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass


def _relay(tls: socket.socket) -> socket.socket:
    """The TLS connection's response relayed, unchanged, into one end of a socket pair (asyncio
    cannot take over a TLS session): the run reads the other end as its connection, once, and
    closing it closes the TLS connection too."""
    import selectors
    import socket

    ours, theirs = socket.socketpair()

    def relay() -> None:
        watch = selectors.DefaultSelector()
        watch.register(tls, selectors.EVENT_READ)
        watch.register(ours, selectors.EVENT_READ)
        try:
            while True:
                for ready, _ in watch.select():
                    if ready.fileobj is ours:
                        if not ours.recv(4096):
                            return  # the run closed its end
                        continue
                    chunk = tls.recv(65536)
                    if not chunk:
                        return  # the server closed
                    ours.sendall(chunk)
                    while pending := tls.pending():  # type: ignore[attr-defined]
                        ours.sendall(tls.recv(pending))  # decrypted already: select cannot see it
        except OSError:
            pass
        finally:
            watch.close()
            for end in (ours, tls):
                try:
                    end.close()
                except OSError:
                    pass

    threading.Thread(target=relay, name="mermaid-early-relay", daemon=True).start()
    return theirs


def _give_up(early: Early) -> socket.socket | None:
    """Stop a send still under way (never waiting on it); the socket of one that completed."""
    early.abandoned = True  # seen by the worker under its lock, before and after it sends
    if not early.lock.acquire(blocking=False):
        return None
    try:
        sock, early.sock = early.sock, None
    finally:
        early.lock.release()
    return sock


async def claim(
    method: str, url: str, headers: dict[str, str], body: bytes, user_agent: str, origin: Origin, data: bytes
) -> tuple[socket.socket, bool] | None:
    """The early connection (and whether it may be kept alive) when `data` is exactly what went out
    early to `origin`; None otherwise. Only the process's first request is considered; a send
    still connecting is waited for without blocking the loop (so a signal or `--timeout` still
    ends the run), up to the connect timeout."""
    early = _early
    if early is None or early.settled:
        return None
    early.settled = True
    early.observed = Observed(method, url, dict(headers), body, user_agent, data)
    if early.thread is None:
        return None
    if early.thread.is_alive():
        import asyncio
        import time

        give_up_at = time.monotonic() + CLAIM_WAIT
        while early.thread.is_alive() and time.monotonic() < give_up_at:
            await asyncio.sleep(0.005)
    sock = _give_up(early)
    if sock is None:
        early.outcome = "unsent"
        return None
    if early.origin != origin or early.data != data:
        early.outcome = "mismatch"
        sock.close()
        print(
            "mermaid: warning: the early first request did not match this run's own and was dropped "
            "unread; this kind of run will not be sent early again",
            file=sys.stderr,
        )
        return None
    early.outcome = "adopted"
    return sock, early.reusable


def finish() -> None:
    """At exit: keep what this run taught about its key (a candidate, a confirmation, a miss)."""
    global _early
    early, _early = _early, None
    if early is None:
        return
    unclaimed = _give_up(early)  # sent early but never claimed: the run ended before its request
    if unclaimed is not None:
        try:
            unclaimed.close()
        except OSError:
            pass
    seen = early.observed
    if seen is None:
        return
    plan = early.plan
    if early.outcome == "adopted" and early.sent_state == "confirmed":
        _touch(plan)  # sent, and byte for byte the run's own (`claim`): confirmed again
        return
    old = load_recipe(plan.store, plan.key)
    state = old.get("state") if old is not None else None
    entry: dict[str, object] | None
    if state == "unpredictable" or early.outcome == "mismatch":
        entry = {"state": "unpredictable"}
    elif old is not None and state in ("candidate", "confirmed"):
        built = build(old, plan)
        if built is not None and built[1] == seen.data:
            entry = {**old, "state": "confirmed"}
        elif state == "confirmed" or early.thread is not None:  # sent, and not what the run sent
            entry = {"state": "unpredictable"}
        else:
            misses = old.get("misses")
            misses = misses + 1 if isinstance(misses, int) else MAX_MISSES
            fresh = make_recipe(seen, plan, early)
            gone = misses >= MAX_MISSES or fresh is None
            entry = {"state": "unpredictable"} if gone else {**(fresh or {}), "misses": misses}
    else:
        entry = make_recipe(seen, plan, early)
    if entry is None:
        return  # nothing this run could teach
    if entry == old:
        _touch(plan)
        return
    save_recipe(plan.store, plan.key, entry)


def _touch(plan: Plan) -> None:
    """Nothing new about the plan's recipe: only its place among the most recently used."""
    try:
        os.utime(os.path.join(plan.store, plan.key + ".json"))
    except OSError:
        pass


def outcome() -> str:
    """What happened to this process's early request (for tests and `--debug` output)."""
    early = _early
    return "none" if early is None else early.outcome
