#!/usr/bin/env bash
# The sticky-comment steps of action.yml: `comment.sh start` posts (or finds) the run's comment and
# leaves a follower in the background that updates it with progress; `comment.sh finish` stops the
# follower and writes the outcome. The token reaches only these steps and the follower (which makes
# itself non-dumpable), never the step that runs Mermaid. Logic: mermaid_cli/ci/comment.py.
set -euo pipefail

action_path="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}"
# Python runs from the action's own directory: from the job's working directory (the checkout,
# perhaps of a pull request nobody trusts) `-m`, `-` and a venv's pip would find that
# repository's `json.py`, `mermaid_cli/` or `pip/` before the real ones
cd "$action_path"
python="${MERMAID_PYTHON:-}"
[[ -n "$python" ]] || python="python3"
run_dir="${MERMAID_RUN_DIR:?MERMAID_RUN_DIR is not set}"
export PYTHONPATH="$action_path"
ci() { "$python" -s -m mermaid_cli.ci "$@"; }

case "${1:-}" in
  start)
    ci comment start
    cid="$(sed -n 's/^comment-id=//p' "${GITHUB_OUTPUT:?}" | tail -n 1)"
    if [[ -n "$cid" ]]; then
      nohup "$python" -s -m mermaid_cli.ci comment follow --events="$run_dir/events.jsonl" \
        --comment-id="$cid" --interval="${MERMAID_COMMENT_INTERVAL:-20}" >/dev/null 2>&1 &
      echo $! >"$run_dir/comment-follow.pid"
    fi
    ;;
  finish)
    : >"$run_dir/comment-follow.stop"
    if [[ -f "$run_dir/comment-follow.pid" ]]; then
      kill "$(cat "$run_dir/comment-follow.pid")" 2>/dev/null || true
    fi
    ci comment finish --events="$run_dir/events.jsonl" --exit-code="${MERMAID_EXIT_CODE:-1}" \
      --diff-file="${MERMAID_DIFF_FILE:-}" --comment-id="${MERMAID_COMMENT_ID:-}"
    ;;
  *)
    echo "usage: comment.sh start|finish" >&2
    exit 2
    ;;
esac
