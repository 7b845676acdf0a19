"""Shell command classifier: how risky is a `bash -c COMMAND`, without running it.

The command is split the way bash would split it (`;`, `&&`, `||`, `|`, `&`, newlines, glued
operators), quote-aware; `$(…)`, backticks, `<(…)`/`>(…)`, `${…}` and unquoted heredoc bodies are
parsed recursively; wrappers (`sudo`, `env`, `timeout`, `nice`, `nohup`, `xargs`, `command`,
`time`, `exec`, `stdbuf`, …) are looked through; `eval`, `bash -c`, `sh -c`, `su -c`, `trap`,
`watch` and `env -S` strings are re-parsed. Every simple command gets a risk; the worst one wins.

Severity (a total order; `worst` picks the higher):

    read_only < low_mutation < file_mutation < shell_mutation < process < network
              < system_mutation < external_access < destructive

What lands where (the choices that are not obvious):
- Every command that changes files is `shell_mutation`: a redirect to a file, `tee FILE`, `cp`,
  `mv`, `mkdir`, `touch`, `rm`, `sed -i`, `sort -o`, archive extraction, `git` commands that change
  the repository, unknown programs. The shell is not checkpointed like the edit tools, so `auto`
  sends these to the reviewer (`low_mutation`/`file_mutation` are for the edit and memory tools).
- Project-local builds, tests and installs (`pytest`, `make`, `cargo build`, `npm test`,
  `npm install` without `-g`), interpreters running code (`python -c`, `node script.js`,
  `bash script.sh`) and `./anything` are `process`.
- `pip install`, `apt-get install`, `npm i -g`, `cargo install`, … are `system_mutation`, and so is
  anything under `sudo`/`doas`/`su` (privileges are machine-scoped even for a read).
- With `project_root` given, a write to a path outside the project (other than temp dirs) is
  `external_access`.
- Options are read as GNU getopt reads them: a long option may be abbreviated (`sort --outp=F`,
  `sed --in`), a short one glued (`-oF`, `-i.bak`) or clustered, and options may follow operands.
  A sed script is read command by command: `w`/`W` and the `w` flag write, `e` and the `e` flag
  run a command; a script this reading does not follow counts as a write.
- Code that runs data: `xargs -I{} sh -c '… {} …'` and `find -exec sh -c '… {} …'` paste file
  names into a script (at least `shell_mutation`); bash evaluates array subscripts in the names
  and arithmetic of `let`, `read`, `printf -v`, `declare`, `test -v`… and runs their `$(…)`, which
  is re-parsed (so `read 'a[$(rm -rf /)]'` is hard-denied); `hash -p` re-points a program name.
- Hard deny (risk `destructive`, `hard_deny_rule` names the rule): recursive rm/chmod/chown/find
  -delete on `/`, a top-level directory, `~`, `$HOME`, the project root or an ancestor of it;
  `mkfs*`, `dd of=/dev/…`, writes to `/etc`, `/boot`, `~/.ssh` or raw devices; `git reset --hard`;
  a force push (or branch deletion) that may hit main/master/production/release/*; a download piped
  into a shell; a fork bomb; a listening socket (`nc -l`); nesting deeper than the cap.
- Input bash would reject (an unterminated quote or substitution, an unmatched `)`) is at least
  `shell_mutation`; such input, and input with comments or escaped operators, is also read a
  second time leniently (quotes, `\\` and `#` dropped) and a hard-deny shape found that way still
  denies, so a parser disagreement can never hide `rm -rf /`.

Layout: `parse` is the bash parser, `risk` the risk order and the interface rules see of the
walker, `words` argv helpers and wrappers, `builtins` what bash does with words before a program
runs, `rules` (with `file_rules`, `git_rules`, `dev_rules`) the per-program rules as a table,
`walker` the walk that applies the rules to the parse tree (wrappers, re-parsed strings, `cd`,
pipelines into shells), `result` the answer; this module is the public API: one command in, one
`ShellClassification` out, with the lenient second reading that a parser disagreement cannot
slip past.
"""

from __future__ import annotations

import re
from pathlib import Path

from mermaid_cli.policy.shell.parse import _Parser
from mermaid_cli.policy.shell.result import Segment, ShellClassification
from mermaid_cli.policy.shell.risk import _SAFE_DEVICES, RANK, RISK_ORDER, Risk, sensitive_write_rule, worst
from mermaid_cli.policy.shell.syntax import MAX_DEPTH, _Cmd, _TooDeep
from mermaid_cli.policy.shell.walker import _Classifier
from mermaid_cli.policy.shell.words import _ASSIGNMENT, _FORK_BOMB, _RESERVED, _WRITE_REDIRECTS, _lenient

__all__ = [
    "MAX_DEPTH",
    "RANK",
    "RISK_ORDER",
    "Risk",
    "Segment",
    "ShellClassification",
    "classify_command",
    "sensitive_write_rule",
    "worst",
]


def classify_command(
    command: str,
    *,
    project_root: Path | None = None,
    home: Path | None = None,
    _lenient_pass: bool = False,
) -> ShellClassification:
    """Classify `command` as `bash -c` would run it. Never raises."""
    try:
        return _classify(command, project_root, home, _lenient_pass)
    except _TooDeep:
        rule = f"command nesting deeper than {MAX_DEPTH} levels is hard-denied and cannot be approved"
        return ShellClassification(risk="destructive", hard_deny_rule=rule, reason=rule, malformed=True)
    except RecursionError:
        rule = "command nesting too deep to analyse is hard-denied and cannot be approved"
        return ShellClassification(risk="destructive", hard_deny_rule=rule, reason=rule, malformed=True)
    except Exception as exc:  # pragma: no cover - a classifier bug must not open the gate
        return ShellClassification(
            risk="shell_mutation",
            hard_deny_rule=None,
            reason=f"could not analyse the command ({exc})",
            malformed=True,
        )


def _classify(
    command: str, project_root: Path | None, home: Path | None, lenient_pass: bool
) -> ShellClassification:
    text = command.replace("\r\n", "\n")
    c = _Classifier(project_root, home, _reread)
    squashed = re.sub(r"\s+", "", text)
    if _FORK_BOMB.search(squashed) and re.search(r"\(\)\{[^}]*\|[^}]*&", squashed):
        rule = "a fork bomb is hard-denied and cannot be approved"
        c._note("destructive", rule, rule)
    parser = _Parser(text)
    node = parser.parse_list(0, stop_paren=False)
    c.node(node, 0, c.root)
    malformed = parser.malformed
    if malformed:
        c._note("shell_mutation", "the command does not parse as bash would run it")
    if "IFS" in text and not lenient_pass:
        # `rm${IFS}-rf${IFS}/`: bash splits on IFS
        variant = re.sub(r"\$\{IFS[^}]*\}|\$IFS\b", " ", text)
        if variant != text:
            sub = classify_command(variant, project_root=project_root, home=home, _lenient_pass=True)
            c._note(sub.risk, sub.reason, sub.hard_deny_rule)
    strict_hard = c.hard
    if not lenient_pass and (malformed or parser.comments or parser.escaped_ops):
        lenient = _lenient(text)
        if lenient != text:
            sub = classify_command(lenient, project_root=project_root, home=home, _lenient_pass=True)
            if sub.hard_deny_rule:
                c._note("destructive", sub.hard_deny_rule, sub.hard_deny_rule)
    simple = (
        len(node.pipelines) == 1
        and len(node.pipelines[0]) == 1
        and not parser.malformed
        and not parser.comments
        and not parser.separators
        and len(c.segments) == 1
        and _is_plain(node.pipelines[0][0])
    )
    programs = [s.program for s in c.segments if s.program]
    reason = c.hard or c.reason or ("read-only command" if c.risk == "read_only" else "")
    return ShellClassification(
        risk=c.risk if c.hard is None else "destructive",
        hard_deny_rule=c.hard,
        segments=c.segments,
        programs=programs,
        simple=simple,
        malformed=malformed,
        reason=reason,
        lenient=c.hard is not None and strict_hard is None,
    )


def _is_plain(cmd: _Cmd) -> bool:
    if cmd.substs or cmd.groups or cmd.heredoc or cmd.proc_subst:
        return False
    if not cmd.words or any(w.dynamic for w in cmd.words):
        return False
    if _ASSIGNMENT.match(cmd.words[0].plain) or cmd.words[0].text in _RESERVED:
        return False
    for r in cmd.redirects:
        if r.op in _WRITE_REDIRECTS and r.target is not None:
            t = r.target.text
            if not (_SAFE_DEVICES.match(t) or (r.op == ">&" and (t.isdigit() or t == "-"))):
                return False
    return True


def _reread(text: str, home: Path) -> str | None:
    """The walker's lenient second reading of a re-parsed string: its hard-deny rule, or None."""
    return classify_command(text, project_root=None, home=home, _lenient_pass=True).hard_deny_rule
