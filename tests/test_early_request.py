"""The early first request (`providers/early.py`, `cli/entry.py`): real `mermaid` processes against the
fake provider server, and the real `WireClient` over TLS. A recipe is kept from one run and sent at
start by the next (taken, it is confirmed); only byte-identical requests take the early connection;
a stale recipe is dropped unread and never sent again; no secret reaches the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider_fixtures import FAKE_KEY, FakeProviderServer, fake_env
from web_servers import Handler, LocalServer, make_cert, server_tls

from mermaid_cli.cli import entry
from mermaid_cli.providers import early
from mermaid_cli.providers.http import encode
from mermaid_cli.providers.wire import WireClient

MODEL = "anthropic/claude-sonnet-4-5"
DONE = {
    "type": "turn",
    "content": [{"type": "text", "text": "done"}],
    "stop_reason": "stop",
    "usage": {"input_tokens": 10, "output_tokens": 2},
}
# what a test process runs: `mermaid`, telling on stderr what became of its early request
PROBE = """
import os, sys
from mermaid_cli.providers import early
_finish = early.finish
def finish():
    os.write(2, ("\\nearly-outcome: " + early.outcome() + "\\n").encode())
    early.finish = _finish
    _finish()
early.finish = finish
sys.argv = ["mermaid", *sys.argv[1:]]
from mermaid_cli.cli.entry import main
main()
"""


def _run(project: Path, prompt: str, server: FakeProviderServer | dict[str, str], store: Path, **env: str):
    full = {k: v for k, v in os.environ.items() if k != "MERMAID_NO_EARLY_REQUEST"}
    full.update(
        server if isinstance(server, dict) else fake_env(server),
        MERMAID_EARLY_REQUEST_STORE=str(store),
        **env,
    )
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "exec", "--json", "--model", MODEL, prompt],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
    )
    outcome = proc.stderr.split("early-outcome: ")[1].split()[0] if "early-outcome: " in proc.stderr else "-"
    return proc, outcome


def _states(store: Path) -> list[str]:
    return [json.loads(path.read_text())["state"] for path in sorted(store.glob("*.json"))]


def _project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "README.md").write_text("# a project\n")
    return root


def _confirmed(tmp_path: Path, store: Path) -> None:
    """One run keeps a candidate; the next sends it early, and taken it is confirmed."""
    for i, (outcome_now, state) in enumerate([("none", "candidate"), ("adopted", "confirmed")]):
        with FakeProviderServer([DONE]) as server:
            proc, outcome = _run(_project(tmp_path, f"warm{i}"), f"warm-up {i}", server, store)
            assert len(server.requests) == 1  # an adopted early request is the run's only one
        assert proc.returncode == 0, proc.stderr
        assert (outcome, _states(store)) == (outcome_now, [state])


def test_a_confirmed_recipe_goes_out_early_and_its_response_is_the_runs(tmp_path: Path) -> None:
    store = tmp_path / "early"
    _confirmed(tmp_path, store)
    (recipe,) = store.glob("*.json")
    before = recipe.read_bytes()
    os.utime(recipe, ns=(10**9, 10**9))
    third = _project(tmp_path, "third")
    with FakeProviderServer([DONE]) as server:
        proc, outcome = _run(third, 'say "done" \\ ünïcode', server, store)
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    assert outcome == "adopted"
    assert json.loads(proc.stdout.splitlines()[-1])["response"] == "done"
    assert len(requests) == 1  # the early request was the run's request, not an extra one
    body = requests[0]["body"]
    assert body["messages"][0]["content"][0]["text"] == 'say "done" \\ ünïcode'
    assert str(third) in json.dumps(body["system"])
    kept = "".join(path.read_text() for path in store.glob("*.json"))
    assert FAKE_KEY not in kept and "warm-up" not in kept and "warm0" not in kept and "ünïcode" not in kept
    assert _states(store) == ["confirmed"]
    # taken again: the recipe stays as it was, and moves up among the most recently used
    assert recipe.read_bytes() == before and recipe.stat().st_mtime_ns > 10**9


@pytest.mark.parametrize("state", ["candidate", "confirmed"])
def test_a_stale_recipe_is_dropped_unread_and_never_sent_again(tmp_path: Path, state: str) -> None:
    store = tmp_path / "early"
    if state == "confirmed":
        _confirmed(tmp_path, store)
    else:
        with FakeProviderServer([DONE]) as server:
            _run(_project(tmp_path, "first"), "go", server, store)
    assert _states(store) == [state]
    (path,) = store.glob("*.json")
    recipe = json.loads(path.read_text())
    recipe["body"][0] = recipe["body"][0].replace("Mermaid", "Merman", 1)  # what an older Mermaid sent
    path.write_text(json.dumps(recipe))
    with FakeProviderServer([DONE, DONE]) as server:
        proc, outcome = _run(_project(tmp_path, "stale"), "go", server, store)
        sent = [json.dumps(r["body"]) for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert outcome == "mismatch"
    assert "did not match" in proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["response"] == "done"
    assert "Merman" in sent[0] and "Merman" not in sent[-1]
    assert _states(store) == ["unpredictable"]
    with FakeProviderServer([DONE]) as server:
        proc, outcome = _run(_project(tmp_path, "after"), "go", server, store)
        assert len(server.requests) == 1
    assert outcome == "none" and proc.returncode == 0 and "did not match" not in proc.stderr


def test_an_early_send_that_fails_leaves_the_run_to_meet_the_failure_itself(tmp_path: Path) -> None:
    store = tmp_path / "early"
    _confirmed(tmp_path, store)
    with FakeProviderServer([DONE]) as server:
        dead = fake_env(server)
    proc, outcome = _run(_project(tmp_path, "dead"), "go", dead, store)
    assert outcome == "unsent"
    assert proc.returncode == 5
    assert dead["ANTHROPIC_BASE_URL"] in json.loads(proc.stdout.splitlines()[-1])["errors"][-1]
    assert _states(store) == ["confirmed"]  # the recipe still reproduced the request exactly


def test_a_run_with_project_instructions_is_never_recorded(tmp_path: Path) -> None:
    store = tmp_path / "early"
    project = _project(tmp_path, "instructed")
    (project / "AGENTS.md").write_text("Always answer in French.\n")
    for _ in range(3):
        with FakeProviderServer([DONE]) as server:
            proc, outcome = _run(project, "go", server, store)
        assert proc.returncode == 0 and outcome == "none"
    assert not store.exists()


# -- who qualifies ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "split"),
    [
        (["exec", "--json", "--model", "m", "fix", "it"], (["--json", "--model", "m"], "fix it")),
        (["exec", "--model=m", "-q", "go"], (["--model", "m", "-q"], "go")),
        (["exec", "--", "--json", "x"], ([], "--json x")),
        (["exec", "--record", "f.jsonl", "go"], None),  # not a plain flag
        (["exec", "--json=1", "go"], None),
        (["exec", "--model"], None),
        (["exec", "--json"], None),  # the prompt would come from stdin
        (["exec", "-"], None),
        (["exec", "/review", "the diff"], None),  # a prompt command expands before it is sent
        (["run", "go"], None),
        (["exec", "-qm", "m", "go"], None),
        (["exec", "-m=anthropic/x", "go"], None),
        (
            ["exec", "--append-system-prompt", "token ghp_x", "go"],
            None,
        ),  # free text a recipe would keep  # click reads the value "=anthropic/x"
        ([], None),
    ],
)
def test_which_command_lines_are_plain(argv: list[str], split: object) -> None:
    assert entry.split_argv(argv) == split


@pytest.mark.parametrize(
    "spoiler",
    [
        "AGENTS.md",
        "CLAUDE.md",
        "MERMAID.md",
        ".mermaid",
        "../.git",
        "cfg/config.toml",
        "data/memory",
        "proxy",
        "off",
        "read-only",
    ],
)
def test_what_keeps_a_run_from_qualifying(tmp_path: Path, monkeypatch, spoiler: str) -> None:
    project = tmp_path / "repo" / "project"
    project.mkdir(parents=True)
    env = {"MERMAID_CONFIG_DIR": str(tmp_path / "cfg"), "MERMAID_DATA_DIR": str(tmp_path / "data")}
    monkeypatch.chdir(project)
    monkeypatch.setattr(entry, "_stdin_is_quiet", lambda: True)
    argv = ["exec", "--json", "go"]
    assert entry.plan_early(argv, env) is not None
    if spoiler == "proxy":
        env["HTTPS_PROXY"] = "http://proxy:3128"
    elif spoiler == "read-only":  # (root writes anywhere: the kernel's answer is what counts)
        monkeypatch.setattr(entry.os, "access", lambda path, mode: path != str(project))
    elif spoiler == "off":
        env["MERMAID_NO_EARLY_REQUEST"] = "1"
    else:
        target = tmp_path / spoiler if "/" in spoiler and not spoiler.startswith("..") else project / spoiler
        target.parent.mkdir(parents=True, exist_ok=True)
        target.mkdir() if spoiler in (".mermaid", "../.git", "data/memory") else target.write_text("x")
    assert entry.plan_early(argv, env) is None


def test_piped_stdin_disqualifies_and_dev_null_does_not(tmp_path: Path) -> None:
    code = "from mermaid_cli.cli import entry; print(entry._stdin_is_quiet())"
    piped = subprocess.run([sys.executable, "-c", code], input="text", capture_output=True, text=True)
    null = subprocess.run(
        [sys.executable, "-c", code], stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    assert piped.stdout.strip() == "False" and null.stdout.strip() == "True"


# -- recipes -------------------------------------------------------------------------------------

BASE = "http://127.0.0.1:4001"
KEY = "sk-ant-secret-1"


def _plan(root: str, prompt: str, **env: str) -> early.Plan:
    return early.Plan(key="k", root=root, prompt=prompt, env=env)


def _noted(plan: early.Plan, *endpoints: tuple[str, str | None, str | None, str | None]) -> early.Early:
    """The exchange state after `resolve.create_provider` noted where its endpoints came from."""
    state = early.Early(plan)
    for base, base_var, key_var, key in endpoints:
        state.endpoints[base] = (base_var, key_var, key)
    return state


def _observed(root: str, prompt: str, url: str, headers: dict[str, str], extra: str = "") -> early.Observed:
    body = encode(
        {
            "model": "m",
            "system": [{"type": "text", "text": f"You work on the project at {root} (Linux).{extra}"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
        }
    )
    from mermaid_cli.providers.http1 import parse_url, request_head

    origin, target, host, _ = parse_url(url)
    data = request_head("POST", target, host, headers, len(body), "mermaid/0") + body
    return early.Observed("POST", url, headers, body, "mermaid/0", data)


def _anthropic(root: str = "/r/p", prompt: str = "go", base: str = BASE, key: str = KEY) -> early.Observed:
    return _observed(
        root, prompt, base + "/v1/messages", {"x-api-key": key, "anthropic-version": "2023-06-01"}
    )


def _recipe(seen: early.Observed, plan: early.Plan, **env_sources: str | None) -> dict[str, object] | None:
    noted = (
        BASE,
        env_sources.get("base", "ANTHROPIC_BASE_URL"),
        env_sources.get("key", "ANTHROPIC_API_KEY"),
        KEY,
    )
    return early.make_recipe(seen, plan, _noted(plan, noted))


@settings(max_examples=200, deadline=None)
@given(
    first=st.text(min_size=1),
    second=st.text(min_size=1),
    root=st.text(st.characters(blacklist_categories=("Cs",)), min_size=3).map(lambda s: "/" + s),
)
def test_a_recipe_rebuilds_any_prompt_and_root_byte_for_byte(first: str, second: str, root: str) -> None:
    env = {"ANTHROPIC_BASE_URL": BASE, "ANTHROPIC_API_KEY": KEY}
    seen = _anthropic("/first/root", first)
    recipe = _recipe(seen, _plan("/first/root", first, **env))
    if recipe is None:  # the prompt is also elsewhere in the body: nothing kept
        assert seen.body.count(encode(first)) != 1
        return
    assert KEY not in json.dumps(recipe)
    later = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:5002/ \n", "ANTHROPIC_API_KEY": " sk-ant-other-2"}
    want = _anthropic(root, second, "http://127.0.0.1:5002", "sk-ant-other-2")  # as resolve reads them
    built = early.build(recipe, _plan(root, second, **later))
    assert built is not None and built[1] == want.data and built[0] == ("http", "127.0.0.1", 5002)


def test_a_base_url_the_run_would_refuse_is_never_sent_early() -> None:
    env = {"ANTHROPIC_BASE_URL": BASE, "ANTHROPIC_API_KEY": KEY}
    recipe = _recipe(_anthropic(), _plan("/r/p", "go", **env))
    assert recipe is not None
    for refused in ("http://192.0.2.2:4001", "ftp://127.0.0.1", "https://", "   "):
        assert early.build(recipe, _plan("/r/p", "go", **{**env, "ANTHROPIC_BASE_URL": refused})) is None
    assert early.build(recipe, _plan("/r/p", "go", **{**env, "ANTHROPIC_API_KEY": " "})) is None


def test_only_the_variables_the_run_took_its_endpoint_from_are_slots() -> None:
    env = {
        "ANTHROPIC_BASE_URL": BASE,
        "OPENAI_BASE_URL": BASE + "/v1",
        "ANTHROPIC_API_KEY": KEY,
        "OPENAI_API_KEY": KEY,
    }
    plan = _plan("/r/p", "go", **env)
    recipe = _recipe(_anthropic(), plan)
    assert recipe is not None
    assert recipe["url"] == [["base", "ANTHROPIC_BASE_URL"], "/v1/messages"]
    assert recipe["headers"]["x-api-key"] == [["key", "ANTHROPIC_API_KEY"]]
    moved = _plan(
        "/r/p",
        "go",
        **{**env, "OPENAI_BASE_URL": "http://127.0.0.1:6000/v1", "OPENAI_API_KEY": "sk-other-99"},
    )
    built = early.build(recipe, moved)
    assert built is not None and built[0] == ("http", "127.0.0.1", 4001) and KEY.encode() in built[1]
    # a base URL the run took from its own defaults stays literal: no variable can move it
    literal = _recipe(_anthropic(), plan, base=None)
    assert literal is not None and literal["url"] == [BASE + "/v1/messages"]


def test_two_endpoints_a_request_could_belong_to_keep_nothing() -> None:
    plan = _plan("/r/p", "go", ANTHROPIC_API_KEY=KEY)
    both = _noted(
        plan, (BASE, None, "ANTHROPIC_API_KEY", KEY), (BASE + "/v1", None, "ANTHROPIC_API_KEY", KEY)
    )
    assert early.make_recipe(_anthropic(), plan, both) is None
    assert early.make_recipe(_anthropic(), plan, _noted(plan)) is None  # no endpoint noted at all


def test_a_root_that_is_also_part_of_other_text_keeps_nothing() -> None:
    plan = _plan("/model", "go", ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=BASE)
    assert (
        _recipe(
            _observed("/model", "go", BASE + "/v1/messages", {"x-api-key": KEY}, " Use replay/model."), plan
        )
        is None
    )
    assert (
        _recipe(_observed("/model", "go", BASE + "/v1/messages", {"x-api-key": KEY}, " See /model/x."), plan)
        is not None
    )


def test_a_credential_that_is_not_from_the_environment_is_never_kept() -> None:
    plan = _plan("/r/p", "go", ANTHROPIC_BASE_URL=BASE)
    assert _recipe(_anthropic(key="sk-from-a-keyring"), plan, key=None) is None
    token = _observed("/r/p", "go", BASE + "/v1/messages", {"x-custom-token": "tok-literal-99"})
    assert _recipe(token, plan, key=None) is None


def test_a_second_endpoint_at_the_same_base_url_makes_it_a_guess_and_keeps_nothing() -> None:
    plan = _plan("/r/p", "go", ANTHROPIC_BASE_URL=BASE, OPENAI_BASE_URL=BASE, ANTHROPIC_API_KEY=KEY)
    previous, early._early = early._early, early.Early(plan)
    try:
        early.note_endpoint(BASE, "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", KEY)
        early.note_endpoint(BASE, "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", KEY)  # the same again
        assert early.make_recipe(_anthropic(), plan, early._early) is not None
        early.note_endpoint(BASE, "OPENAI_BASE_URL", "OPENAI_API_KEY", KEY)
        assert early.make_recipe(_anthropic(), plan, early._early) is None
    finally:
        early._early = previous


def test_what_the_run_would_redact_is_never_kept() -> None:
    env = {"ANTHROPIC_BASE_URL": BASE, "ANTHROPIC_API_KEY": KEY, "MERMAID_MASK": "internal-codename-77"}
    for extra in (" Token ghp_" + "a" * 36 + ".", " Ship internal-codename-77."):
        seen = _observed("/r/p", "go", BASE + "/v1/messages", {"x-api-key": KEY}, extra)
        assert _recipe(seen, _plan("/r/p", "go", **env)) is None
    assert _recipe(_anthropic(), _plan("/r/p", "go", **env)) is not None


def test_a_secret_anywhere_in_the_request_keeps_it_out_of_the_store() -> None:
    env = {"ANTHROPIC_BASE_URL": BASE, "ANTHROPIC_API_KEY": KEY, "SOME_PASSWORD": "hunter2-hunter2"}
    seen = _observed(
        "/r/p", "go", BASE + "/v1/messages", {"x-api-key": KEY, "anthropic-version": "hunter2-hunter2"}
    )
    assert _recipe(seen, _plan("/r/p", "go", **env)) is None


def test_a_blank_variable_and_a_set_one_are_different_runs() -> None:
    ttys = (False, False, False)
    keys = {
        early.key_for(["exec"], {"ANTHROPIC_BASE_URL": value}, ttys, git=False)
        for value in ("", "  ", "https://gw.example")
    }
    assert len(keys) == 2


# -- TLS: the request goes out over a verified connection; the response is relayed ---------------


def _ok(handler: Handler) -> None:
    handler.send_text(200, '{"ok": true}', "application/json")


async def test_over_https_the_early_request_is_verified_and_its_response_relayed(
    tmp_path: Path, monkeypatch
) -> None:
    cert, key = make_cert(tmp_path, ["127.0.0.1"])
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    store = tmp_path / "early"
    with LocalServer({"/v1": _ok}, tls=server_tls(cert, key)) as server:
        url = server.url("/v1")
        env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test-0123456789"}
        headers = {"authorization": "Bearer " + env["OPENAI_API_KEY"], "content-type": "application/json"}
        from mermaid_cli.providers.tls import verified_context

        outcomes = []
        for prompt in ("one", "two", "three"):
            plan = early.Plan(key="k", root="/work/p", prompt=prompt, env=env, store=store)
            early.begin(plan)
            early.note_endpoint(
                url, "OPENAI_BASE_URL", "OPENAI_API_KEY", env["OPENAI_API_KEY"]
            )  # as resolve does
            client = WireClient(verified_context, timeout=10, connect_timeout=10, user_agent="mermaid-test")
            body = encode({"root": "/work/p", "input": prompt})
            async with client.request("POST", url, headers, body) as response:
                assert response.status == 200 and await response.read() == b'{"ok": true}'
            await client.aclose()
            outcomes.append(early.outcome())
            early.finish()
        assert outcomes == ["none", "adopted", "adopted"]
        for _ in range(500):  # the run closed its end: the relay closes the TLS connection and ends
            if not any(t.name == "mermaid-early-relay" for t in threading.enumerate()):
                break
            time.sleep(0.01)
        assert not any(t.name == "mermaid-early-relay" for t in threading.enumerate())
        assert len(server.requests) == 3
        assert "sk-test-0123456789" not in "".join(path.read_text() for path in store.glob("*.json"))

        monkeypatch.delenv("SSL_CERT_FILE")  # nothing vouches for the server now: the early send fails closed
        early.begin(early.Plan(key="k", root="/work/p", prompt="four", env=env, store=store))
        assert early._early is not None and early._early.thread is not None
        early._early.thread.join(10)
        assert early._early.failed and len(server.requests) == 3
        early.finish()


def test_the_store_keeps_the_most_recently_used_recipes(tmp_path: Path) -> None:
    for n in range(early.MAX_RECIPES + 3):
        early.save_recipe(str(tmp_path), f"k{n:02d}", {"state": "unpredictable"})
        os.utime(tmp_path / f"k{n:02d}.json", ns=(n * 10**9, n * 10**9))
    early.save_recipe(str(tmp_path), "last", {"state": "unpredictable"})
    kept = sorted(p.stem for p in tmp_path.glob("*.json"))
    assert len(kept) == early.MAX_RECIPES and "last" in kept and "k00" not in kept


def test_the_early_connection_to_an_ascii_name_loads_no_idna_codec() -> None:
    """An ASCII host goes to getaddrinfo as bytes (a str would import the "idna" codec, with
    `stringprep` and `unicodedata`, ~1.5 ms before the request can go); a name still resolves."""
    script = (
        "import socket, sys\n"
        "from mermaid_cli.providers import early\n"
        "server = socket.create_server(('127.0.0.1', 0))\n"
        "port = server.getsockname()[1]\n"
        "for host in ('127.0.0.1', 'localhost'):\n"
        "    early._connect(host, port).close()\n"
        "print(sorted(m for m in ('encodings.idna', 'stringprep', 'unicodedata') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
