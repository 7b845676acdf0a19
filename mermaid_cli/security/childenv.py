"""The environment child processes get: provider keys and secret-looking variables removed.

Used for `execute_command`, background processes (and by the lead for MCP servers and hooks).
A model-driven command must not be able to print our credentials into the transcript, so the
scrub is by name, conservatively: anything that *looks* secret goes unless explicitly allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# Named explicitly so the list documents intent even where the pattern below would catch them.
PROVIDER_KEY_VARS = frozenset(
    {
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_API_KEY",
        "GROQ_API_KEY",
        "XAI_API_KEY",
        "OPENROUTER_API_KEY",
        "NVIDIA_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OLLAMA_API_KEY",
        "MERMAID_DAEMON_TOKEN",
        # Amazon Bedrock: keys, session token, API key, and what mints credentials (the OIDC
        # token file, the container credential endpoints, which answer without a token)
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    }
)

# CI runner files and tokens: a child that can append to GITHUB_ENV/GITHUB_PATH poisons every later
# step of the job (`BASH_ENV=/tmp/evil.sh`), and the runtime/OIDC tokens mint credentials. Removed
# by exact name (or prefix), whatever `allow` says. The sandbox also refuses writes to the files.
#: the runner's command files among them: the gate keeps file tools from them too
CI_RUNNER_FILE_VARS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")
CI_RUNNER_VARS = frozenset(
    {
        *CI_RUNNER_FILE_VARS,
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_RUNTIME_URL",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
        "ACTIONS_CACHE_URL",
        "ACTIONS_RESULTS_URL",
        "CI_JOB_TOKEN",
        "CI_REGISTRY_PASSWORD",
        "CI_DEPLOY_PASSWORD",
        "CI_DEPENDENCY_PROXY_PASSWORD",
        "CI_REPOSITORY_URL",  # GitLab embeds the job token in it
    }
)
CI_RUNNER_PREFIXES = ("CI_JOB_JWT", "ACTIONS_ID_TOKEN_", "ACTIONS_RUNTIME_")

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE", re.IGNORECASE)

#: options that make git run nothing of the repository's own (hooks, fsmonitor, signing, pager),
#: for every git Mermaid runs for itself, outside the sandbox: a `.git/config` the model managed to
#: plant must not run in Mermaid's own process tree
SAFE_GIT = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.pager=cat",
)
#: and for every `git diff` of Mermaid's own: no external diff program, no textconv filter
SAFE_DIFF = ("--no-ext-diff", "--no-textconv")

# Non-interactive defaults: a child must never wait for a credential prompt or a pager.
_FORCED = {"GIT_TERMINAL_PROMPT": "0"}
_DEFAULTS = {"PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb"}


def is_secret_name(name: str) -> bool:
    """True when an environment variable of this name is treated as a secret."""
    return name.upper() in PROVIDER_KEY_VARS or _SECRET_NAME.search(name) is not None


def is_ci_runner_name(name: str) -> bool:
    """True for the CI runner's files and tokens children must never see (never allow-listed)."""
    upper = name.upper()
    return upper in CI_RUNNER_VARS or upper.startswith(CI_RUNNER_PREFIXES)


#: the values of the credentials this process resolved (a provider's key, read from a variable of
#: any name: `[providers.NAME] api_key_env = "LLM_CREDS"`); no child gets a variable holding one,
#: whatever its name or `allow` says (`withhold`)
_WITHHELD: set[str] = set()


def withhold(values: Iterable[str]) -> None:
    """From now on, no `scrubbed_env` holds a variable whose value is one of `values`."""
    _WITHHELD.update(v for v in values if v)


#: what the processes Mermaid runs for itself (git, find, rg) are given of its environment: where
#: programs, home, config and temp files are, the locale, and git's own variables
_HELPER_NAMES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "XDG_CONFIG_HOME"}
)
_HELPER_PREFIXES = ("LC_", "GIT_")


def helper_env(base: Mapping[str, str]) -> dict[str, str]:
    """The environment of a process Mermaid runs for itself, not for the model: `scrubbed_env`
    of what such a program reads (`_HELPER_NAMES`, `LC_*`, `GIT_*`) only. Any same-uid process can
    read a running helper's /proc/PID/environ, and the first ones (the workspace snapshot's git
    or find) start before the run knows which variable holds its key (`withhold`)."""
    return scrubbed_env(
        {k: v for k, v in base.items() if k in _HELPER_NAMES or k.startswith(_HELPER_PREFIXES)}
    )


def scrubbed_env(base: Mapping[str, str], allow: Iterable[str] = ()) -> dict[str, str]:
    """A copy of `base` without secret-looking variables (names in `allow` are kept, compared
    case-sensitively as environment names are), plus non-interactive defaults. CI runner files
    and tokens (`is_ci_runner_name`) and the resolved credentials (`withhold`) go even when
    allowed."""
    allowed = set(allow)
    env = {
        k: v
        for k, v in base.items()
        if not is_ci_runner_name(k) and (k in allowed or not is_secret_name(k)) and v not in _WITHHELD
    }
    env.update(_FORCED)
    for key, value in _DEFAULTS.items():
        env.setdefault(key, value)
    return env
