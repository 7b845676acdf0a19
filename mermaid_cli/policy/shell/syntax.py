"""The tree the bash parser (`parse`) builds and the walker reads: a command list (`_Node`) of
pipelines of simple commands (`_Cmd`: words, redirects, nested substitutions and groups, heredoc
bodies), and the state a list is built in (`_ListState`). `MAX_DEPTH` caps nesting; past it,
`_TooDeep` (the classifier hard-denies such a command).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_DEPTH = 12


class _TooDeep(Exception):
    pass


@dataclass
class _Word:
    """One shell word as the parser builds it."""

    text: str = ""
    started: bool = False
    quoted: bool = False
    dynamic: bool = False  # contains a substitution or parameter expansion
    plain: str = ""  # the leading unquoted, literal part (where `NAME=` of an assignment must be)


@dataclass
class _Redirect:
    """A redirection: its operator, file descriptor and target."""

    op: str
    fd: str | None
    target: _Word | None


@dataclass
class _Cmd:
    """One simple command of a parsed line."""

    words: list[_Word] = field(default_factory=list)
    redirects: list[_Redirect] = field(default_factory=list)
    substs: list[_Node] = field(default_factory=list)
    groups: list[_Node] = field(default_factory=list)
    heredoc: bool = False
    proc_subst: bool = False
    #: what the command reads on stdin from a heredoc or here-string (code, if it is a shell)
    stdin_texts: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.words or self.redirects or self.substs or self.groups)


@dataclass
class _Node:
    """A command list: pipelines separated by `;`, `&&`, `||`, `&`, newlines."""

    pipelines: list[list[_Cmd]] = field(default_factory=list)


@dataclass
class _ListState:
    """The command list being built: finished pipelines, the current pipeline, command and word."""

    node: _Node = field(default_factory=_Node)
    pipeline: list[_Cmd] = field(default_factory=list)
    cmd: _Cmd = field(default_factory=_Cmd)
    word: _Word = field(default_factory=_Word)

    def finish_word(self) -> None:
        if self.word.started:
            self.cmd.words.append(self.word)
        self.word = _Word()

    def end_cmd(self) -> None:
        self.finish_word()
        if not self.cmd.empty():
            self.pipeline.append(self.cmd)
        self.cmd = _Cmd()

    def end_pipeline(self) -> None:
        self.end_cmd()
        if self.pipeline:
            self.node.pipelines.append(self.pipeline)
        self.pipeline = []
