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
walker, `words` argv helpers and wrappers, `rules` (with `dev_rules`) the per-program rules as a
table; this module is the walker that applies the rules to the parse tree (wrappers, re-parsed
strings, `cd`, pipelines into shells) and the public API.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mermaid_cli.policy.shell.parse import MAX_DEPTH, _Cmd, _Node, _Parser, _Redirect, _TooDeep
from mermaid_cli.policy.shell.paths import _Paths
from mermaid_cli.policy.shell.risk import (
    _SAFE_DEVICES,
    MUTATION,
    RANK,
    RISK_ORDER,
    Call,
    Risk,
    _Verdict,
    sensitive_write_rule,
    worst,
)
from mermaid_cli.policy.shell.rules import classify_program
from mermaid_cli.policy.shell.words import (
    _ASSIGNMENT,
    _DANGEROUS_ASSIGNMENT,
    _DECLARERS,
    _FORK_BOMB,
    _PYTHON,
    _RESERVED,
    _WRITE_REDIRECTS,
    DOWNLOADERS,
    GLOB_SUSPECTS,
    INTERPRETERS,
    PRIVILEGED,
    SHELLS,
    WRAPPERS,
    _argv_of,
    _base,
    _brace_expand,
    _lenient,
    _operands,
    _reads_stdin,
    _shell_dash_c,
    _skip_options,
    _strip_expansions,
    long_option,
)
from mermaid_cli.policy.shell.wrappers import _unwrap, _unwrap_all, splices_into_code, xargs_replace_string

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


@dataclass(frozen=True)
class Segment:
    """One simple command: its argv (words after quote removal; substitutions left as written),
    its own risk (not counting nested substitutions, which are segments of their own) and why."""

    argv: list[str]
    risk: Risk
    program: str | None = None
    depth: int = 0
    reason: str = ""


@dataclass(frozen=True)
class ShellClassification:
    risk: Risk
    hard_deny_rule: str | None
    segments: list[Segment] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)
    #: a single simple command: no `;`/`|`/`&&`, no substitution, heredoc, subshell, assignment
    #: prefix or file redirect. Only such a command can match an anchored `allow` rule.
    simple: bool = False
    malformed: bool = False
    reason: str = ""
    #: the hard deny was found only by the lenient second reading (comments, escapes, bad quoting)
    lenient: bool = False



# --------------------------------------------------------------------------------------------
# The walker


class _Classifier(_Paths):
    """Walks the parse tree; `_Paths` judges the write targets."""

    def __init__(self, project_root: Path | None, home: Path | None) -> None:
        super().__init__(project_root, home)
        self.segments: list[Segment] = []
        self.hard: str | None = None
        self.risk: Risk = "read_only"
        self.reason = ""

    def _note(self, risk: Risk, reason: str, hard: str | None = None) -> None:
        if hard is not None and self.hard is None:
            self.hard = hard
        if RANK[risk] > RANK[self.risk]:
            self.risk, self.reason = risk, reason

    # -- lists and pipelines ----------------------------------------------------------------
    def node(self, node: _Node, depth: int, cwd: str | None) -> bool:
        """Classify a command list. Returns whether any segment downloads (for `sh <(curl …)`)."""
        downloads = False
        for pipeline in node.pipelines:
            programs: list[str | None] = []
            for cmd in pipeline:
                cwd, prog, dl = self.cmd(cmd, depth, cwd, in_pipeline=len(pipeline) > 1)
                programs.append(prog)
                downloads |= dl
            self._download_pipe(pipeline, programs, depth, cwd)
        return downloads

    def _download_pipe(
        self, pipeline: list[_Cmd], programs: list[str | None], depth: int, cwd: str | None
    ) -> None:
        seen_download = False
        echoed: list[str] = []
        for cmd, prog in zip(pipeline, programs, strict=True):
            argv = _unwrap_all(_argv_of(cmd))
            base = _base(argv[0]) if argv else ""
            if echoed and base in SHELLS and _reads_stdin(base, argv[1:]):
                # `echo "rm -rf /" | sh`: what is echoed is the script
                v = _Verdict()
                for text in echoed:
                    self._reparse(text, v, cwd, depth)
                self._note(v.risk, v.reason, v.hard)
            if base == "cat" and not _operands(argv[1:]):
                echoed.extend(cmd.stdin_texts)
            if base in ("echo", "printf"):
                echoed.append(" ".join(a for a in argv[1:] if not re.fullmatch(r"-[neE]+", a)))
            dynamic = bool(argv) and ("$" in argv[0] or "`" in argv[0])
            if seen_download and dynamic:
                rule = "a download piped into a computed program (maybe a shell) is hard-denied and cannot be approved"
                self._note("destructive", rule, rule)
            elif seen_download and (base in SHELLS or base in INTERPRETERS or _PYTHON.match(base)):
                if _reads_stdin(base, argv[1:]):
                    rule = f"a download piped into a shell ({base}) is hard-denied and cannot be approved"
                    self._note("destructive", rule, rule)
            if prog in DOWNLOADERS or base in DOWNLOADERS:
                seen_download = True
            elif argv and ("$" in argv[0] or "`" in argv[0]):
                # a computed program (`$CURL x | sh`, `$()curl x | sh`) may well be a downloader
                seen_download = True

    # -- one simple command -----------------------------------------------------------------
    def cmd(
        self, cmd: _Cmd, depth: int, cwd: str | None, *, in_pipeline: bool
    ) -> tuple[str | None, str | None, bool]:
        subst_downloads = False
        for sub in cmd.substs:
            subst_downloads |= self.node(sub, depth + 1, cwd)
        downloads = False
        for group in cmd.groups:
            downloads |= self.node(group, depth + 1, cwd)
        words = [w.text for w in cmd.words]
        k = _command_start(cmd)
        argv, dyn = words[k:], [w.dynamic for w in cmd.words][k:]
        v = _Verdict()
        if _changes_program_lookup(words[:k], argv):
            v.raise_to("process", "an assignment changes which program runs (PATH, LD_PRELOAD, PAGER…)")
        for r in cmd.redirects:
            self._redirect(r, v, cwd)
        program = None
        if argv:
            program = _base(argv[0])
            self._argv(argv, dyn, v, cwd, depth, subst_downloads, cmd)
            expanded = _brace_expand(argv)
            if expanded:
                # `{rm,-rf,/}` is `rm -rf /` to bash
                self._argv(expanded, [False] * len(expanded), v, cwd, depth, subst_downloads, cmd)
            downloads |= program in DOWNLOADERS
        self.segments.append(
            Segment(argv=list(argv), risk=v.risk, program=program, depth=depth, reason=v.reason)
        )
        self._note(v.risk, v.reason, v.hard)
        if not in_pipeline:
            cwd = self._after_cd(argv, cwd)
        return cwd, program, downloads or subst_downloads

    def _after_cd(self, argv: list[str], cwd: str | None) -> str | None:
        """Track `cd` so `cd build && rm -rf *` is judged in the right directory."""
        if not argv or argv[0] not in ("cd", "pushd"):
            return cwd
        ops = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
        target = ops[0] if ops else "~"
        return self.resolve(target, cwd) if target != "-" else None

    def judge_argv(self, argv: list[str], v: _Verdict, cwd: str | None) -> None:
        """`Walker.judge_argv`: a nested command line such as `find -exec CMD ;`."""
        if argv:
            self._argv(argv, [False] * len(argv), v, cwd, 0, False, _Cmd())

    def _argv(
        self,
        argv: list[str],
        dyn: list[bool],
        v: _Verdict,
        cwd: str | None,
        depth: int,
        subst_downloads: bool,
        cmd: _Cmd,
    ) -> None:
        again = functools.partial(
            self._argv, v=v, cwd=cwd, depth=depth, subst_downloads=subst_downloads, cmd=cmd
        )
        if dyn[0] and ("$" in argv[0] or "`" in argv[0]):
            self._computed_program(argv, dyn, v, again)
            return
        if argv[0] not in ("[", "[[") and any(ch in argv[0] for ch in "*?["):
            self._glob_program(argv, dyn, v, again)
            return
        if "/" in argv[0] and not _SYSTEM_PATH.match(argv[0]):
            # a local program (`./ls` is not ls)
            v.raise_to("process", f"{argv[0]} runs a local program")
            return
        prog, args = _base(argv[0]), argv[1:]
        if subst_downloads and (
            prog in SHELLS or prog in INTERPRETERS or _PYTHON.match(prog) or prog in _SOURCERS
        ):
            v.deny(f"a download fed to a shell ({prog}) is hard-denied and cannot be approved")
        elif prog in WRAPPERS or prog in PRIVILEGED:
            inner = self._wrapper(prog, args, v, cwd, depth)
            if inner:
                again(inner, dyn[len(argv) - len(inner) :])
        elif prog in _REPARSED_BUILTINS:
            self._reparse_builtin(prog, args, v, cwd, depth)
        elif prog in SHELLS or prog == "busybox":
            self._shell(prog, args, v, cwd, depth, cmd)
        else:
            if prog in _SUBSCRIPT_BUILTINS:
                self._subscripts(prog, args, v, cwd, depth)
            classify_program(Call(prog, args, v, self, cwd, argv[0]))

    def _subscripts(self, prog: str, args: list[str], v: _Verdict, cwd: str | None, depth: int) -> None:
        """`let 'a[$(touch x)]=1'`, `read 'a[$(…)]'`, `test -v 'a[$(…)]'`: bash evaluates the
        array subscript in a name or an arithmetic argument, quoted or not, and runs its `$(…)`."""
        for a in _subscript_words(prog, args):
            if "$(" in a or "`" in a:
                v.raise_to("process", f"{prog} evaluates an array subscript, which runs its $(…)")
                self._reparse(a, v, cwd, depth)

    def _computed_program(
        self, argv: list[str], dyn: list[bool], v: _Verdict, again: Callable[[list[str], list[bool]], None]
    ) -> None:
        v.raise_to("shell_mutation", "the program name is computed at run time")
        # expansions that are empty leave the rest (`r$()m` is rm)
        stripped = _strip_expansions(argv[0])
        if stripped and "$" not in stripped and "`" not in stripped:
            again([stripped, *argv[1:]], [False, *dyn[1:]])
        # the computed name may be a wrapper (`$(echo sudo) rm -rf /`): judge the rest too
        k = 0
        while k < len(argv) and dyn[k] and ("$" in argv[k] or "`" in argv[k]):
            k += 1
        if k < len(argv):
            again(argv[k:], dyn[k:])

    def _glob_program(
        self, argv: list[str], dyn: list[bool], v: _Verdict, again: Callable[[list[str], list[bool]], None]
    ) -> None:
        # `/???/r? -rf /` and `/b?n/rm -rf /` run /bin/rm: judge every program the glob may name
        v.raise_to("shell_mutation", f"the program name {argv[0]} is a glob")
        base = _base(argv[0])
        names = (
            [n for n in sorted(GLOB_SUSPECTS) if fnmatch.fnmatchcase(n, base)]
            if any(ch in base for ch in "*?[")
            else [base]
        )
        for name in names:
            again([name, *argv[1:]], [False, *dyn[1:]])

    def _wrapper(
        self, prog: str, args: list[str], v: _Verdict, cwd: str | None, depth: int
    ) -> list[str] | None:
        """Look through `sudo`, `env`, `xargs`…: the wrapped argv to judge next, or None."""
        if prog in PRIVILEGED:
            v.raise_to("system_mutation", f"{prog} runs with elevated privileges")
        inner, reparse = _unwrap(prog, args)
        if reparse is not None:
            self._reparse(reparse, v, cwd, depth)
            return None
        if inner is None and prog in PRIVILEGED:
            v.raise_to("system_mutation", f"{prog} opens a privileged shell")
        if prog == "time":
            for target in _time_outputs(args):
                self.write_target(target, v, cwd, "time -o")
        if inner and prog == "xargs":
            placeholder = xargs_replace_string(args)
            spliced = splices_into_code(inner, placeholder) if placeholder else None
            if spliced:
                v.raise_to(MUTATION, f"xargs -I: {spliced}")
        return inner

    def _reparse_builtin(self, prog: str, args: list[str], v: _Verdict, cwd: str | None, depth: int) -> None:
        """`eval`, `alias`, `trap` and `watch` run strings: parse them as commands."""
        if prog == "eval":
            self._reparse(" ".join(args), v, cwd, depth)
        elif prog == "alias":
            for a in args:
                if "=" in a:
                    self._reparse(a.split("=", 1)[1], v, cwd, depth)
        elif prog == "trap":
            if args and not args[0].startswith("-"):
                self._reparse(args[0], v, cwd, depth)
        else:  # watch
            rest = _skip_options(args, with_arg={"-n", "--interval", "-d", "--differences", "-q"})
            self._reparse(" ".join(rest), v, cwd, depth)
            v.raise_to("process", "watch runs a command repeatedly")

    def _shell(self, prog: str, args: list[str], v: _Verdict, cwd: str | None, depth: int, cmd: _Cmd) -> None:
        code = _shell_dash_c(args)
        if code is not None:
            self._reparse(code, v, cwd, depth)
            return
        if args and args[0] in ("--version", "--help"):
            return
        if _reads_stdin(prog, args):
            # `bash <<EOF … EOF`, `sh <<< "…"`: the heredoc is the script
            for text in cmd.stdin_texts:
                self._reparse(text, v, cwd, depth)
        v.raise_to("process", f"{prog} runs a script")

    def _reparse(self, text: str, v: _Verdict, cwd: str | None, depth: int) -> None:
        if depth + 1 > MAX_DEPTH:
            raise _TooDeep
        p = _Parser(text)
        node = p.parse_list(depth + 1, stop_paren=False)
        before = len(self.segments)
        self.node(node, depth + 1, cwd)
        inner_worst: Risk = "read_only"
        for seg in self.segments[before:]:
            inner_worst = worst(inner_worst, seg.risk)
        if p.malformed:
            inner_worst = worst(inner_worst, "shell_mutation")
            lenient = _lenient(text)
            if lenient != text:
                sub = classify_command(lenient, project_root=None, home=Path(self.home), _lenient_pass=True)
                if sub.hard_deny_rule:
                    self._note("destructive", sub.hard_deny_rule, sub.hard_deny_rule)
        v.raise_to(inner_worst, "re-parsed command string")

    # -- redirects and paths ----------------------------------------------------------------
    def _redirect(self, r: _Redirect, v: _Verdict, cwd: str | None) -> None:
        if (
            r.target is not None
            and r.op not in ("<<", "<<-", "<<<")
            and re.match(r"^/dev/(?:tcp|udp)/", r.target.text)
        ):
            v.raise_to("network", f"a redirect to {r.target.text} opens a network connection")
            return
        if r.op not in _WRITE_REDIRECTS or r.target is None:
            return
        t = r.target.text
        if r.op == ">&" and (t.isdigit() or t == "-"):
            return
        self.write_target(t, v, cwd, "a redirect")


_SYSTEM_PATH = re.compile(r"^/(?:usr/(?:local/)?)?s?bin/[^/]+$")
_SOURCERS = frozenset({"eval", "source", "."})
_REPARSED_BUILTINS = frozenset({"eval", "alias", "trap", "watch"})
#: builtins that evaluate array subscripts (and so `$(…)`) in their variable-name or arithmetic
#: arguments even when those are quoted
_SUBSCRIPT_BUILTINS = frozenset(
    "let printf read declare typeset local readonly export test [ unset getopts mapfile readarray wait".split()
)


def _subscript_words(prog: str, args: list[str]) -> list[str]:
    """The arguments bash evaluates as arithmetic or as a variable name (with a subscript):
    all of `let`'s, the name after `printf -v` / `test -v`, the names (`a[i]` of `a[i]=v`) of
    `declare`, `read`, `unset`…, and with `declare -n` the nameref target too."""
    if prog == "let":
        return args
    if prog in ("printf", "test", "["):
        return [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-v"]
    nameref = any(a.startswith("-") and "n" in a[1:] for a in args) and prog in (
        "declare",
        "typeset",
        "local",
    )
    names = [a if nameref else a.split("=", 1)[0] for a in args if not a.startswith("-")]
    return [n for n in names if "[" in n or nameref]


def _time_outputs(args: list[str]) -> list[str]:
    """The files `time -o FILE` / `-oFILE` / `--output=FILE` (abbreviable) writes."""
    out: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        a = args[i]
        if a == "-o" or (long_option(a, "--output") and "=" not in a):
            out.extend(args[i + 1 : i + 2])
            i += 2
            continue
        if long_option(a, "--output"):
            out.append(a.split("=", 1)[1])
        elif a.startswith("-o") and not a.startswith("--"):
            out.append(a[2:])
        i += 1
    return out


def _command_start(cmd: _Cmd) -> int:
    """Index of the program word: after reserved words (`if`, `!`, `function f`) and assignments;
    past the end for a loop or case header, whose words are data."""
    k = 0
    while k < len(cmd.words):
        word = cmd.words[k]
        if not word.quoted and word.text in _RESERVED:
            k += 2 if word.text == "function" else 1
        elif not word.quoted and word.text in ("for", "select", "case"):
            return len(cmd.words)
        elif _ASSIGNMENT.match(word.plain):
            k += 1
        else:
            break
    return k


def _changes_program_lookup(prefix: list[str], argv: list[str]) -> bool:
    """`LD_PRELOAD=x.so ls`, `export PATH=…`: an assignment that changes what later programs run."""
    assignments = [w for w in prefix if _ASSIGNMENT.match(w)]
    if argv and _base(argv[0]) in _DECLARERS:
        assignments += [w for w in argv[1:] if _ASSIGNMENT.match(w)]
    return any(_DANGEROUS_ASSIGNMENT.match(a) for a in assignments)


# --------------------------------------------------------------------------------------------
# Entry point


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
    c = _Classifier(project_root, home)
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
