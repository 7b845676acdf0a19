"""The walker of the shell classifier: it goes over the parse tree segment by segment and applies
the program table (`rules.classify_program`) to each simple command, looking through what hides a
command: wrappers (`sudo`, `env`, `xargs`…), strings bash runs (`eval`, `bash -c`, `trap`, a
heredoc fed to a shell), computed or globbed program names, brace expansion, `cd` before the next
command, and a download or an `echo` piped into a shell. `_Paths` judges the write targets.

The lenient second reading of a re-parsed string that does not parse is the entry point's
(`classifier.classify_command`): the walker is handed it as `reread`, so nothing imports the
classifier.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable
from pathlib import Path

from mermaid_cli.policy.shell.builtins import (
    _REPARSED_BUILTINS,
    _SOURCERS,
    _SUBSCRIPT_BUILTINS,
    _SYSTEM_PATH,
    _changes_program_lookup,
    _command_start,
    _subscript_words,
    _time_outputs,
)
from mermaid_cli.policy.shell.parse import _Parser
from mermaid_cli.policy.shell.paths import _Paths
from mermaid_cli.policy.shell.result import Segment
from mermaid_cli.policy.shell.risk import (
    MUTATION,
    RANK,
    Call,
    Risk,
    _Verdict,
    worst,
)
from mermaid_cli.policy.shell.rules import classify_program
from mermaid_cli.policy.shell.syntax import MAX_DEPTH, _Cmd, _Node, _Redirect, _TooDeep
from mermaid_cli.policy.shell.words import (
    _PYTHON,
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
)
from mermaid_cli.policy.shell.wrappers import _unwrap, _unwrap_all, splices_into_code, xargs_replace_string

#: the hard-deny rule a lenient reading of `text` (quotes, `\\` and `#` dropped) finds, or None
Reread = Callable[[str, Path], str | None]


class _Classifier(_Paths):
    """Walks the parse tree; `_Paths` judges the write targets."""

    def __init__(self, project_root: Path | None, home: Path | None, reread: Reread) -> None:
        super().__init__(project_root, home)
        self.reread = reread
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
                rule = self.reread(lenient, Path(self.home))
                if rule:
                    self._note("destructive", rule, rule)
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
