from hypothesis import given
from hypothesis import strategies as st

from mermaid_cli.security.childenv import is_secret_name, scrubbed_env

BASE = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/ci",
    "ANTHROPIC_API_KEY": "sk-ant-1",
    "OPENAI_API_KEY": "sk-2",
    "GROQ_API_KEY": "g",
    "XAI_API_KEY": "x",
    "OPENROUTER_API_KEY": "o",
    "NVIDIA_API_KEY": "n",
    "GEMINI_API_KEY": "ge",
    "GOOGLE_API_KEY": "go",
    "MERMAID_DAEMON_TOKEN": "d",
    "MERMAID_SOMEKEY_X": "m",
    "FOO_TOKEN": "t",
    "db_password": "p",
    "AWS_SECRET_ACCESS_KEY": "a",
    "GITHUB_TOKEN": "gh",
    "LANG": "C.UTF-8",
}


def test_provider_keys_and_secret_names_are_removed() -> None:
    env = scrubbed_env(BASE)
    assert env["PATH"] == "/usr/bin:/bin"
    assert env["HOME"] == "/home/ci"
    assert env["LANG"] == "C.UTF-8"
    for name in BASE:
        if name not in ("PATH", "HOME", "LANG"):
            assert name not in env, name
    assert not set(BASE.values()) - {"/usr/bin:/bin", "/home/ci", "C.UTF-8"} & set(env.values())


def test_allow_list_keeps_a_named_variable_only() -> None:
    env = scrubbed_env(BASE, allow=["GITHUB_TOKEN"])
    assert env["GITHUB_TOKEN"] == "gh"
    assert "FOO_TOKEN" not in env


def test_non_interactive_defaults() -> None:
    env = scrubbed_env({"TERM": "xterm", "GIT_TERMINAL_PROMPT": "1", "PAGER": "less"})
    assert env["GIT_TERMINAL_PROMPT"] == "0"  # forced: a prompt would hang the command
    assert env["TERM"] == "xterm"  # kept when set
    assert env["PAGER"] == "less"
    assert env["GIT_PAGER"] == "cat"
    assert scrubbed_env({})["TERM"] == "dumb"


def test_base_is_not_modified() -> None:
    base = dict(BASE)
    scrubbed_env(base)
    assert base == BASE


@given(
    prefix=st.text(alphabet="abcXYZ_019", max_size=8),
    marker=st.sampled_from(["key", "KEY", "Token", "SECRET", "PassWord"]),
    suffix=st.text(alphabet="abcXYZ_019", max_size=8),
)
def test_any_name_containing_a_marker_is_secret(prefix: str, marker: str, suffix: str) -> None:
    name = prefix + marker + suffix
    assert is_secret_name(name)
    assert name not in scrubbed_env({name: "v", "PATH": "/bin"})


@given(name=st.text(alphabet="ABCDFGHIJLMNOPQRUVWXZ_0123456789", min_size=1, max_size=20))
def test_names_without_a_marker_pass(name: str) -> None:
    # the alphabet lacks E, K, S, T, Y: no marker can be spelled
    assert scrubbed_env({name: "v"})[name] == "v"


def test_a_withheld_value_goes_under_any_name_even_when_allowed() -> None:
    from mermaid_cli.security.childenv import withhold

    withhold(["Qm3Xv8Lp2Rt6Wz9Ky4"])
    env = scrubbed_env(
        {"LLM_CREDS": "Qm3Xv8Lp2Rt6Wz9Ky4", "COPY": "Qm3Xv8Lp2Rt6Wz9Ky4", "PATH": "/bin"}, ["LLM_CREDS"]
    )
    assert "LLM_CREDS" not in env and "COPY" not in env and env["PATH"] == "/bin"


def test_a_helper_gets_only_what_its_program_reads() -> None:
    from mermaid_cli.security.childenv import helper_env

    env = helper_env(
        {
            "PATH": "/bin",
            "HOME": "/h",
            "LC_ALL": "C",
            "GIT_DIR": "/r/.git",
            "LLM_CREDS": "not-marked-secret-by-name",
            "GIT_TOKEN": "x" * 20,
            "GITHUB_ENV": "/runner/env",
        }
    )
    assert env.pop("PATH") == "/bin" and env.pop("HOME") == "/h" and env.pop("LC_ALL") == "C"
    assert env.pop("GIT_DIR") == "/r/.git"
    assert not {"LLM_CREDS", "GIT_TOKEN", "GITHUB_ENV"} & set(env)
