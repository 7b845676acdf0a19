#!/usr/bin/env bash
# Install Mermaid from the action's own checkout (so the version is pinned by the ref in `uses:`)
# into a private virtualenv under RUNNER_TEMP: the job's Python, PATH and packages stay untouched,
# so the project's own test commands (e.g. a --verify "pytest -q") see the job's environment.
#
# `install.sh key`: print the cache key (Python build + OS + requirements.lock + the package source)
# and the venv path to GITHUB_OUTPUT, and check the mermaid-version pin. `install.sh` (no argument):
# install unless MERMAID_CACHE_HIT is true and the cached venv still runs. Dependencies come from
# action/requirements.lock with `pip --require-hashes`; the package itself from the checkout.
set -euo pipefail

action_path="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}"
# Python runs from the action's own directory: from the job's working directory (the checkout,
# perhaps of a pull request nobody trusts) `-m`, `-` and a venv's pip would find that
# repository's `json.py`, `mermaid_cli/` or `pip/` before the real ones
cd "$action_path"
python="${MERMAID_SETUP_PYTHON:-}"
if [[ -z "$python" ]]; then
  python="$(command -v python3 || true)"
fi
if [[ -z "$python" ]]; then
  echo "::error title=Mermaid::no python3 found; set the python-version input" >&2
  exit 2
fi
venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/mermaid-venv"
lock="$action_path/action/requirements.lock"
version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$action_path/mermaid_cli/__init__.py")"

if [[ "${1:-}" == "key" ]]; then
  pin="${INPUT_MERMAID_VERSION:-}"
  pin="${pin//[[:space:]]/}"
  pin="${pin#v}"
  if [[ -n "$pin" && "$pin" != "$version" ]]; then
    echo "::error title=Mermaid::mermaid-version is $pin but this action ref ships Mermaid $version; use the action ref (tag or commit SHA) that ships $pin" >&2
    exit 2
  fi
  key="$("$python" - "$action_path" <<'PY'
import hashlib, pathlib, platform, sys
root = pathlib.Path(sys.argv[1])
h = hashlib.sha256(f"{sys.version}|{platform.platform()}|{sys.executable}".encode())
files = [root / "pyproject.toml", root / "action" / "requirements.lock"]
files += sorted(p for p in (root / "mermaid_cli").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
for p in files:
    h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
print(h.hexdigest()[:32])
PY
)"
  {
    echo "key=mermaid-venv-$(uname -s)-$(uname -m)-$version-$key"
    echo "venv=$venv"
    echo "version=$version"
  } >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
  exit 0
fi

if [[ "${MERMAID_CACHE_HIT:-}" == "true" ]] && "$venv/bin/mermaid" --version >/dev/null 2>&1; then
  echo "Mermaid $version from the cache ($venv)"
else
  rm -rf "$venv"
  "$python" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install --disable-pip-version-check --quiet)
  "${pip[@]}" --require-hashes -r "$lock"
  # The package itself is the action's checkout; its dependencies (and hatchling) are in the venv.
  "${pip[@]}" --no-deps --no-build-isolation "$action_path"
fi
"$venv/bin/mermaid" --version

{
  echo "bin=$venv/bin/mermaid"
  echo "python=$venv/bin/python"
} >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
