#!/usr/bin/env bash
# The "Check permission" step of action.yml, before anything is installed or run: who triggered
# the workflow may start Mermaid only if mermaid_cli/ci/gate.py says so (allowed-users, allowed-bots,
# or write access by the GitHub API). Stdlib Python straight from the action's checkout. Also makes
# the run's private directory, shared by the comment and run steps.
set -euo pipefail

action_path="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}"
# Python runs from the action's own directory: from the job's working directory (the checkout,
# perhaps of a pull request nobody trusts) `-m`, `-` and a venv's pip would find that
# repository's `json.py`, `mermaid_cli/` or `pip/` before the real ones
cd "$action_path"
python="${MERMAID_SETUP_PYTHON:-}"
[[ -n "$python" ]] || python="$(command -v python3 || true)"
if [[ -z "$python" ]]; then
  echo "::error title=Mermaid::no python3 found; set the python-version input" >&2
  exit 2
fi
if [[ -n "${INPUT_GITHUB_TOKEN:-}" ]]; then
  echo "::add-mask::$INPUT_GITHUB_TOKEN"
fi

PYTHONPATH="$action_path" "$python" -s -m mermaid_cli.ci gate
run_dir="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/mermaid.XXXXXXXX")"
echo "run-dir=$run_dir" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
