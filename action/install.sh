#!/usr/bin/env bash
# Install Mermaid from the action's own checkout (so the version is pinned by the ref in `uses:`)
# into a private virtualenv under RUNNER_TEMP: the job's Python, PATH and packages stay untouched,
# so the project's own test commands (e.g. a --verify "pytest -q") see the job's environment.
set -euo pipefail

action_path="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}"
python="${MERMAID_SETUP_PYTHON:-}"
if [[ -z "$python" ]]; then
  python="$(command -v python3 || true)"
fi
if [[ -z "$python" ]]; then
  echo "::error title=Mermaid::no python3 found; set the python-version input" >&2
  exit 2
fi

venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/mermaid-venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --quiet "$action_path"
"$venv/bin/mermaid" --version

{
  echo "bin=$venv/bin/mermaid"
  echo "python=$venv/bin/python"
} >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
