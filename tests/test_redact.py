"""The redactor: known values, token shapes, environment collection, nested data, properties."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mermaid_cli.security.redact import PLACEHOLDER, Redactor


def test_known_values_are_replaced() -> None:
    r = Redactor(["hunter2hunter2", "abc"])  # "abc" is too short to be a secret
    assert r.redact("pw=hunter2hunter2; x=abc") == f"pw={PLACEHOLDER}; x=abc"
    assert r("hunter2hunter2hunter2hunter2") == PLACEHOLDER * 2


@pytest.mark.parametrize(
    "token",
    [
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
        "sk-AbCdEfGhIjKlMnOpQrStUvWx12",
        "ghp_" + "a1B2" * 9,
        "gho_" + "Z" * 36,
        "github_pat_11ABCDEFG0" + "x" * 40,
        "xoxb-123456789012-abcdefghijkl",
        "xoxp-1234-5678-abcdefgh",
        "AKIAIOSFODNN7EXAMPLE",
        "glpat-" + "a" * 20,
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    ],
)
def test_token_shapes(token: str) -> None:
    text = f"before {token} after"
    out = Redactor().redact(text)
    assert token not in out and out == f"before {PLACEHOLDER} after"


def test_bearer_keeps_the_scheme() -> None:
    out = Redactor().redact("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig")
    assert out == f"Authorization: Bearer {PLACEHOLDER}"


def test_no_false_positives_on_ordinary_text() -> None:
    text = "task-runner risk-assessment desk-lamp ghp_short Bearer of bad news sk-short AKIA"
    assert Redactor().redact(text) == text


def test_from_environment() -> None:
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-xyz-123456",
        "MY_SERVICE_TOKEN": "tok_live_abcdef",
        "db_password": "correct horse",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/dev",
        "SHORT_KEY": "abc",
        "SSH_KEY_PATH": "/home/dev/.ssh/id_ed25519",
        "MERMAID_MASK": "first-mask-value,second-mask\nthird-mask",
    }
    r = Redactor.from_environment(env, extra=["from-the-flag"])
    text = " ".join([*env.values(), "from-the-flag"])
    out = r.redact(text)
    for secret in [
        "sk-ant-xyz-123456",
        "tok_live_abcdef",
        "correct horse",
        "wJalrXUtnFEMI/K7MDENG",
        "first-mask-value",
        "second-mask",
        "third-mask",
        "from-the-flag",
    ]:
        assert secret not in out, secret
    assert "/usr/bin:/bin" in out and "/home/dev" in out and "abc" in out
    assert "/home/dev/.ssh/id_ed25519" in out


def test_redact_obj_nested_and_json_escaped() -> None:
    r = Redactor(['pa"ss\\word-1'])
    data = {"a": ['x pa"ss\\word-1 y', {'pa"ss\\word-1': 3}], "b": ('pa"ss\\word-1',), "n": 5, "f": None}
    out = r.redact_obj(data)
    assert out == {"a": [f"x {PLACEHOLDER} y", {PLACEHOLDER: 3}], "b": (PLACEHOLDER,), "n": 5, "f": None}
    # serialised first, the escaped form is still caught
    assert 'pa\\"ss' not in r.redact(json.dumps(data))


def test_one_megabyte() -> None:
    secrets = [f"secret-value-{i:03d}-xyz" for i in range(60)]
    r = Redactor(secrets)
    chunk = "lorem ipsum dolor sit amet " * 40
    parts = []
    for i in range(1000):
        parts.append(chunk)
        parts.append(secrets[i % 60])
    text = "".join(parts)
    assert len(text) > 1_000_000
    out = r.redact(text)
    assert all(s not in out for s in secrets)
    assert out.count(PLACEHOLDER) == 1000


def test_empty_redactor_is_identity() -> None:
    r = Redactor([], shapes=False)
    assert r.redact("sk-ant-aaaaaaaaaaaaaaaa") == "sk-ant-aaaaaaaaaaaaaaaa"


_secret = st.text(alphabet=string.ascii_letters + string.digits + "-_/+=.", min_size=6, max_size=40).filter(
    lambda s: s not in PLACEHOLDER
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_secret, min_size=1, max_size=5), st.text(max_size=200), st.text(max_size=200), st.integers(0, 4)
)
def test_planted_secret_never_survives(secrets: list[str], before: str, after: str, which: int) -> None:
    r = Redactor(secrets)
    planted = secrets[which % len(secrets)]
    out = r.redact(before + planted + after + planted)
    for s in secrets:
        assert s not in out, (s, out)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_redact_never_raises_and_is_stable(text: str) -> None:
    r = Redactor(["some-secret-value"])
    once = r.redact(text)
    assert r.redact(once) == once


def _regex_only(redactor: Redactor, text: str) -> str:
    """What redaction gives with the regexes run unconditionally (no substring pre-check)."""
    import re

    from mermaid_cli.security import redact as module

    literals = "|".join(re.escape(s) for s in sorted(redactor.secrets, key=len, reverse=True))
    pattern = re.compile(literals) if literals else None
    for _ in range(3):
        new = pattern.sub(PLACEHOLDER, text) if pattern is not None else text
        new = module._SHAPES.sub(module._replace, new)
        if new == text:
            break
        text = new
    return text


_FRAGMENTS = st.sampled_from(
    [
        "sk-ant-",
        "sk-proj-",
        "ghp_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "AKIA",
        "ASIA",
        "AIza",
        "hf_",
        "npm_",
        "pypi-",
        "Bearer ",
        "bearer\t",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "s3cr3t-value",
        " ",
        "\n",
        "=",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            _FRAGMENTS,
            st.text(alphabet=string.ascii_letters + string.digits + "_-", max_size=40),
            st.text(alphabet=string.ascii_uppercase + string.digits, min_size=16, max_size=20),
        ),
        max_size=12,
    )
)
def test_the_substring_pre_check_never_changes_what_is_redacted(parts: list[str]) -> None:
    redactor = Redactor(["s3cr3t-value"])
    text = "".join(parts)
    assert redactor.redact(text) == _regex_only(redactor, text)
