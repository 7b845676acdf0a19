#!/usr/bin/env bash
# The "Run Mermaid" step of action.yml: inputs arrive as INPUT_* environment variables (never
# expanded into this script's text), become argv elements of one `mermaid exec --json` call, and
# the prompt goes in on stdin from a file. Nothing here evals or re-parses an input.
#
# Exits with mermaid's exit code after writing outputs, the step summary and annotations
# (action/summary.py). Runnable outside GitHub: set GITHUB_OUTPUT, GITHUB_STEP_SUMMARY,
# GITHUB_WORKSPACE and RUNNER_TEMP to files/dirs, and MERMAID_BIN / MERMAID_PYTHON if `mermaid` /
# `python3` on PATH are not the ones to use.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mermaid_bin="${MERMAID_BIN:-}"
[[ -n "$mermaid_bin" ]] || mermaid_bin="mermaid"
python="${MERMAID_PYTHON:-}"
[[ -n "$python" ]] || python="python3"

# 1. Mask the secrets before anything else can print them (one mask per line of the value).
mask() {
  local line
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line%$'\r'}"
    if [[ -n "$line" ]]; then
      printf '::add-mask::%s\n' "$line"
    fi
  done <<<"$1"
}
mask "${INPUT_ANTHROPIC_API_KEY:-}"
mask "${INPUT_OPENAI_API_KEY:-}"
if [[ -n "${INPUT_ANTHROPIC_API_KEY:-}" ]]; then
  export ANTHROPIC_API_KEY="$INPUT_ANTHROPIC_API_KEY"
fi
if [[ -n "${INPUT_OPENAI_API_KEY:-}" ]]; then
  export OPENAI_API_KEY="$INPUT_OPENAI_API_KEY"
fi
# The provider variables are all mermaid needs; don't hand the agent's tools a second copy.
unset INPUT_ANTHROPIC_API_KEY INPUT_OPENAI_API_KEY

workspace="${GITHUB_WORKSPACE:-$PWD}"
cd "$workspace"
run_dir="${MERMAID_RUN_DIR:-}" # made by the gate step, shared with the comment steps
if [[ -z "$run_dir" ]]; then
  run_dir="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/mermaid.XXXXXXXX")"
fi
events="$run_dir/events.jsonl"
prompt_file="$run_dir/prompt.txt"
diff_file=""

summarize() { # exit_code [error message]
  local extra=()
  if [[ $# -ge 2 ]]; then
    extra+=(--error="$2")
  fi
  if [[ -n "$diff_file" ]]; then
    extra+=(--diff-file="$diff_file")
  fi
  # (the ${a[@]+...} form keeps bash 3.2, as on macOS runners, happy with an empty array under set -u)
  "$python" "$here/summary.py" --events="$events" --exit-code="$1" ${extra[@]+"${extra[@]}"}
}

# A problem with the inputs themselves: report it like mermaid's usage errors (exit 2).
usage_error() {
  summarize 2 "action input: $1" || true
  exit 2
}

trim() { # prints $1 without leading/trailing whitespace
  local s="$1"
  s="${s#"${s%%[![:space:]]*}"}"
  s="${s%"${s##*[![:space:]]}"}"
  printf '%s' "$s"
}

bool_input() { # name value: sets $bool to true/false (runs in this shell, so usage_error exits)
  local value
  value="$(trim "$2")"
  case "$value" in
    [Tt][Rr][Uu][Ee]) bool=true ;;
    [Ff][Aa][Ll][Ss][Ee] | "") bool=false ;;
    *) usage_error "$1 must be true or false, got '$value'" ;;
  esac
}

absolute() { # a path relative to the workspace -> absolute
  if [[ "$1" == /* ]]; then printf '%s' "$1"; else printf '%s/%s' "$workspace" "$1"; fi
}

# 2. The prompt: copied or written to a file, then fed on stdin (`mermaid exec -`).
prompt="${INPUT_PROMPT:-}"
prompt_input_file="$(trim "${INPUT_PROMPT_FILE:-}")"
if [[ -n "$prompt" && -n "$prompt_input_file" ]]; then
  usage_error "give prompt or prompt-file, not both"
fi
if [[ -n "$prompt_input_file" ]]; then
  if [[ ! -f "$prompt_input_file" ]]; then
    usage_error "prompt-file not found: $prompt_input_file"
  fi
  cp -- "$prompt_input_file" "$prompt_file"
elif [[ -n "$(trim "$prompt")" ]]; then
  printf '%s' "$prompt" >"$prompt_file"
else
  usage_error "prompt or prompt-file is required"
fi

# 3. The argv, as an array: one element per flag, values attached with `=` so a value that starts
#    with a dash is never read as a flag.
workdir="$(trim "${INPUT_WORKING_DIRECTORY:-}")"
[[ -n "$workdir" ]] || workdir="."
if [[ ! -d "$workdir" ]]; then
  usage_error "working-directory not found: $workdir"
fi
args=(exec --json --path="$workdir")

add_value() { # flag input-value: adds --flag=value when the value is not blank
  local value
  value="$(trim "$2")"
  if [[ -n "$value" ]]; then
    args+=("$1=$value")
  fi
}
add_value --model "${INPUT_MODEL:-}"
# A pull request from a fork runs read-only (the permission gate decided; fork-pull-requests).
read_only_fork=false
if [[ "${MERMAID_FORCE_READ_ONLY:-}" == "true" ]]; then
  read_only_fork=true
  safety_input="$(trim "${INPUT_SAFETY:-}")"
  if [[ -n "$safety_input" && "$safety_input" != "read_only" ]]; then
    echo "::warning title=Mermaid::a pull request from a fork runs read-only (safety input '$safety_input' not applied)"
  fi
  args+=(--safety=read_only)
else
  add_value --safety "${INPUT_SAFETY:-}"
fi
# The kernel sandbox is on by default in the Action (`on` also confines full_access).
sandbox="$(trim "${INPUT_SANDBOX:-}")"
case "$sandbox" in
  "" | on | auto | best-effort | off) ;;
  *) usage_error "sandbox must be on, auto, best-effort or off, got '$sandbox'" ;;
esac
add_value --sandbox "${sandbox:-on}"
add_value --max-turns "${INPUT_MAX_TURNS:-}"
add_value --max-cost "${INPUT_MAX_COST:-}"
add_value --timeout "${INPUT_TIMEOUT:-}"

# File inputs are made absolute here, so they mean the workspace file whatever directory mermaid
# resolves them against once --path points it at the project.
policy="$(trim "${INPUT_POLICY:-}")"
if [[ -n "$policy" && -f "$policy" ]]; then
  policy="$(absolute "$policy")" # a TOML file; otherwise a preset name
fi
add_value --policy "$policy"
schema="$(trim "${INPUT_OUTPUT_SCHEMA:-}")"
if [[ -n "$schema" ]]; then
  add_value --output-schema "$(absolute "$schema")"
fi

bool_input allow-untrusted-tools "${INPUT_ALLOW_UNTRUSTED_TOOLS:-}"
if [[ "$bool" == "true" && "$read_only_fork" == "true" ]]; then
  echo "::warning title=Mermaid::allow-untrusted-tools is not applied to a pull request from a fork"
elif [[ "$bool" == "true" ]]; then
  args+=(--allow-untrusted-tools)
fi
bool_input upload-events "${INPUT_UPLOAD_EVENTS:-}"

add_lines() { # flag multi-line-value: one --flag=line per non-blank line, # comments skipped
  local line
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="$(trim "$line")"
    if [[ -n "$line" && "$line" != \#* ]]; then
      args+=("$1=$line")
    fi
  done <<<"$2"
}
add_lines --verify "${INPUT_VERIFY:-}"
add_value --verify-attempts "${INPUT_VERIFY_ATTEMPTS:-}"
add_lines --config "${INPUT_CONFIG:-}"
add_lines --allowed-tools "${INPUT_ALLOWED_TOOLS:-}"
add_lines --disallowed-tools "${INPUT_DISALLOWED_TOOLS:-}"
while IFS= read -r line || [[ -n "$line" ]]; do # add-dir: one directory per line, workspace-relative
  line="$(trim "$line")"
  if [[ -n "$line" && "$line" != \#* ]]; then
    args+=(--add-dir="$(absolute "$line")")
  fi
done <<<"${INPUT_ADD_DIR:-}"

diff_out="$(trim "${INPUT_DIFF_OUT:-}")"
if [[ -n "$diff_out" ]]; then
  diff_file="$(absolute "$diff_out")"
  args+=(--diff-out="$diff_file")
fi
args+=(-)

# 4. Run. Workflow commands are switched off meanwhile, so nothing the model or a tool prints to
#    stderr (which goes to the log) can act as `::add-path::`, `::error::` and the like.
token="mermaid-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
echo "::stop-commands::$token"
set +e
"$mermaid_bin" "${args[@]}" <"$prompt_file" >"$events"
code=$?
set -e
echo "::$token::"

# 5. Outputs, summary, annotations; then the step exits with mermaid's code.
if ! summarize "$code"; then
  echo "::error title=Mermaid action::could not write the step outputs and summary (action/summary.py failed)"
  if [[ "$code" -eq 0 ]]; then
    code=1
  fi
fi
exit "$code"
