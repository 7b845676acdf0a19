"""A bash lexer/parser, just deep enough to classify commands (see `policy.shell`).

It splits a command line into pipelines of simple commands the way bash would: quotes, escapes,
`$'…'`, `$(…)`, backticks, `${…}`, `$((…))`, `<(…)`/`>(…)`, redirects, heredocs (quoted bodies are
data, unquoted ones have their substitutions parsed), `[[ … ]]`, `(( … ))`, subshells, function
definitions. Substitutions are parsed recursively up to `MAX_DEPTH`; input bash would reject is
flagged `malformed` rather than refused. The tree it builds is in `syntax`, the lexical facts
(operators, ANSI-C escapes, arithmetic ends) in `lexer`.
"""

from __future__ import annotations

import re

from mermaid_cli.policy.shell.lexer import (
    _LIST_CHARS,
    _REDIRECT_OPS,
    _SEP_OPS,
    _WORD_BREAK,
    _ansi_c,
    _find_arith_end,
    _heredoc_end,
    _is_brace_fd,
)
from mermaid_cli.policy.shell.syntax import MAX_DEPTH, _Cmd, _ListState, _Node, _Redirect, _TooDeep, _Word

#: the `()` (blanks allowed inside) that makes the word before it a function's name
_EMPTY_PARENS = re.compile(r"\([ \t]*\)")


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.n = len(text)
        self.i = 0
        self.malformed = False
        self.comments: list[str] = []
        self.escaped_ops = False
        self.separators = 0  # `;`, `&&`, `||`, `&` seen (even with nothing after them)
        self.pending_heredocs: list[tuple[_Cmd, str, bool, bool]] = []

    # -- command lists ----------------------------------------------------------------------
    def parse_list(self, depth: int, stop_paren: bool) -> _Node:
        if depth > MAX_DEPTH:
            raise _TooDeep
        st = _ListState()
        while self.i < self.n:
            c = self.s[self.i]
            if c == ")":
                self.i += 1
                if stop_paren:
                    st.end_pipeline()
                    return st.node
                self.malformed = True  # bash: syntax error near unexpected token `)'
                st.end_pipeline()
            elif c in _LIST_CHARS or (c == "\\" and self.s.startswith("\\\n", self.i)):
                self._list_char(c, st, depth)
            elif c == "#" and not st.word.started:
                end = self.s.find("\n", self.i)
                end = self.n if end < 0 else end
                self.comments.append(self.s[self.i + 1 : end])
                self.i = end
            elif c == "(":
                self._open_paren(st, depth)
            elif c in "<>" and self.s.startswith("(", self.i + 1) and not st.word.started:
                self._process_substitution(st, depth)
            elif c in "<>" or (c == "&" and self.s.startswith(("&>>", "&>"), self.i)):
                self._redirect(st, depth)
            elif c in ";&|":
                self._separator(st)
            else:
                self._word_part(st, depth)
        if stop_paren:
            self.malformed = True  # unterminated `(` / `$(`
        st.end_pipeline()
        return st.node

    def _list_char(self, c: str, st: _ListState, depth: int) -> None:
        """A blank ends the word, `\\` + newline joins lines, a newline ends the pipeline."""
        if c == "\n":
            st.end_pipeline()
            self.i += 1
            self._read_heredocs(depth)
        elif c == "\\":
            self.i += 2
        else:
            st.finish_word()
            self.i += 1

    def _open_paren(self, st: _ListState, depth: int) -> None:
        s, word = self.s, st.word
        definition = _EMPTY_PARENS.match(s, self.i)
        name = word if word.started else (st.cmd.words[-1] if st.cmd.words else None)
        if definition and name is not None and (name.dynamic or name.quoted):
            # `$(x)()`: no name bash would define (it refuses the line); read on as before
            self.malformed = True
            st.finish_word()
            self.i = definition.end()
        elif definition and name is not None:
            # `name()` / `name ( )` defines a function, as `function name` does, and is read as
            # that: the body that follows is judged as commands, not as the arguments of a
            # program called `name` (`ls() { rm -rf /; }; ls` is not a read-only `ls`).
            st.finish_word()
            st.cmd.words.insert(len(st.cmd.words) - 1, _Word("function", started=True, plain="function"))
            self.i = definition.end()
        elif word.started:
            # extglob `@(…)`, `!(…)` or junk: keep it inside the word.
            self._read_balanced_into(word, depth)
        elif s.startswith("((", self.i) and not st.cmd.words and self._arith_command(st.cmd, depth):
            pass
        else:
            st.finish_word()
            self.i += 1
            st.cmd.groups.append(self.parse_list(depth + 1, stop_paren=True))

    def _process_substitution(self, st: _ListState, depth: int) -> None:
        self.i += 2
        st.cmd.substs.append(self.parse_list(depth + 1, stop_paren=True))
        st.cmd.proc_subst = True
        st.word.text += "/dev/fd/63"
        st.word.started = st.word.dynamic = True

    def _redirect(self, st: _ListState, depth: int) -> None:
        fd = None
        word, cmd = st.word, st.cmd
        if word.started and not word.quoted and (word.text.isdigit() or _is_brace_fd(word.text)):
            fd, st.word = word.text, _Word()
        else:
            st.finish_word()
        op = next(o for o in _REDIRECT_OPS if self.s.startswith(o, self.i))
        self.i += len(op)
        target = self._read_word(depth, cmd)
        if target is None:
            self.malformed = True
        cmd.redirects.append(_Redirect(op, fd, target))
        if op in ("<<", "<<-") and target is not None:
            cmd.heredoc = True
            self.pending_heredocs.append((cmd, target.text, op == "<<-", target.quoted))
        elif op == "<<<" and target is not None:
            cmd.stdin_texts.append(target.text)

    def _separator(self, st: _ListState) -> None:
        op = next(o for o in _SEP_OPS if self.s.startswith(o, self.i))
        self.i += len(op)
        if op in ("|", "|&"):
            st.end_cmd()
        else:
            self.separators += 1
            st.end_pipeline()

    def _word_part(self, st: _ListState, depth: int) -> None:
        word, cmd = st.word, st.cmd
        self._read_word_part(word, depth, cmd)
        if (
            word.started
            and not word.quoted
            and word.text == "[["
            and not cmd.words
            and (self.i >= self.n or self.s[self.i] in " \t")
        ):
            self._double_bracket(word, depth, cmd)

    # -- words ------------------------------------------------------------------------------
    def _read_word(self, depth: int, cmd: _Cmd) -> _Word | None:
        """The word after a redirect operator (blanks skipped)."""
        while self.i < self.n and self.s[self.i] in " \t":
            self.i += 1
        word = _Word()
        while self.i < self.n:
            c = self.s[self.i]
            if c in _WORD_BREAK:
                if c in "<>" and self.s.startswith("(", self.i + 1) and not word.started:
                    self.i += 2
                    cmd.substs.append(self.parse_list(depth + 1, stop_paren=True))
                    cmd.proc_subst = True
                    word.text += "/dev/fd/63"
                    word.started = word.dynamic = True
                    continue
                break
            self._read_word_part(word, depth, cmd)
        return word if word.started else None

    def _read_word_part(self, word: _Word, depth: int, cmd: _Cmd) -> None:
        s, c = self.s, self.s[self.i]
        word.started = True
        if c == "'":
            end = s.find("'", self.i + 1)
            if end < 0:
                self.malformed = True
                end = self.n
            word.text += s[self.i + 1 : end]
            word.quoted = True
            self.i = end + 1
        elif c == '"':
            self.i += 1
            text, closed = self._read_dquoted(depth, cmd, '"', word)
            if not closed:
                self.malformed = True
            word.text += text
            word.quoted = True
        elif c == "\\":
            if self.i + 1 >= self.n:
                self.malformed = True  # a trailing backslash: bash waits for more input
                self.i += 1
                return
            nxt = s[self.i + 1]
            if nxt in ";&|<>()":
                self.escaped_ops = True
            word.text += nxt
            word.quoted = True
            self.i += 2
        elif c == "`":
            word.text += self._backtick(depth, cmd)
            word.dynamic = True
        elif c == "$":
            word.text += self._dollar(depth, cmd, word, in_dquote=False)
        else:
            j = self.i
            while j < self.n and s[j] not in _WORD_BREAK and s[j] not in "'\"\\`$":
                j += 1
            if j == self.i:  # a lone break char reached here only via callers; consume it
                j += 1
            if word.text == word.plain:
                word.plain += s[self.i : j]
            word.text += s[self.i : j]
            self.i = j

    def _read_dquoted(self, depth: int, cmd: _Cmd, terminator: str, word: _Word | None) -> tuple[str, bool]:
        """Text up to `terminator` with double-quote rules: `\\` escapes, expansions and
        substitutions are live (and parsed); returns (text, closed)."""
        s, out = self.s, list[str]()
        while self.i < self.n:
            c = s[self.i]
            if c == terminator:
                self.i += 1
                return "".join(out), True
            if c == "\\" and self.i + 1 < self.n:
                nxt = s[self.i + 1]
                if nxt == "\n":
                    self.i += 2
                    continue
                out.append(nxt if nxt in '$`"\\}' else c + nxt)
                self.i += 2
            elif c == "`":
                out.append(self._backtick(depth, cmd))
                if word is not None:
                    word.dynamic = True
            elif c == "$":
                out.append(self._dollar(depth, cmd, word, in_dquote=True))
            elif terminator == "}" and c in "'\"":
                # quotes inside ${…} nest
                if c == "'":
                    end = s.find("'", self.i + 1)
                    end = self.n if end < 0 else end
                    out.append(s[self.i + 1 : end])
                    self.i = end + 1
                else:
                    self.i += 1
                    text, _ = self._read_dquoted(depth + 1, cmd, '"', word)
                    out.append(text)
            else:
                out.append(c)
                self.i += 1
        return "".join(out), False

    def _dollar(self, depth: int, cmd: _Cmd, word: _Word | None, *, in_dquote: bool) -> str:
        s, start = self.s, self.i
        nxt = s[self.i + 1] if self.i + 1 < self.n else ""
        if s.startswith("$((", self.i):
            end = _find_arith_end(s, self.i + 3)
            if end is not None:
                self.i = end + 2
                cmd.substs.extend(_collect_substs(s[start + 3 : end], depth + 1, self))
                if word is not None:
                    word.dynamic = True
                return s[start : self.i]
            # not arithmetic after all: `$(` followed by a subshell
        if nxt == "(":
            self.i += 2
            cmd.substs.append(self.parse_list(depth + 1, stop_paren=True))
            if word is not None:
                word.dynamic = True
            return s[start : self.i]
        if nxt == "{":
            save = self.i
            self.i += 2
            _, closed = self._read_dquoted(depth + 1, cmd, "}", word)
            if not closed:
                self.malformed = True
                self.i = save + 2  # unterminated: do not swallow the rest
                return "${"
            if word is not None:
                word.dynamic = True
            return s[start : self.i]
        if nxt == "'" and not in_dquote:
            end = self.i + 2
            while end < self.n and s[end] != "'":
                end += 2 if s[end] == "\\" else 1
            if end >= self.n:
                self.malformed = True
                end = self.n
            text = s[self.i + 2 : end]
            self.i = end + 1
            if word is not None:
                word.quoted = True
            return _ansi_c(text)
        if nxt == '"' and not in_dquote:
            self.i += 2
            text, closed = self._read_dquoted(depth, cmd, '"', word)
            if not closed:
                self.malformed = True
            if word is not None:
                word.quoted = True
            return text
        m = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])").match(s, self.i)
        if m:
            self.i = m.end()
            if word is not None:
                word.dynamic = True
            return m.group(0)
        self.i += 1
        return "$"

    def _backtick(self, depth: int, cmd: _Cmd) -> str:
        s, start, j, body = self.s, self.i, self.i + 1, []
        while j < self.n and s[j] != "`":
            if s[j] == "\\" and j + 1 < self.n and s[j + 1] in "`$\\":
                body.append(s[j + 1])
                j += 2
            else:
                body.append(s[j])
                j += 1
        if j >= self.n:
            self.malformed = True
        self.i = min(j + 1, self.n)
        cmd.substs.append(_parse_text("".join(body), depth + 1, self))
        return s[start : self.i]

    def _read_balanced_into(self, word: _Word, depth: int) -> None:
        s, level, j = self.s, 0, self.i
        while j < self.n:
            if s[j] == "(":
                level += 1
            elif s[j] == ")":
                level -= 1
                if level == 0:
                    word.text += s[self.i : j + 1]
                    self.i = j + 1
                    return
            elif s[j] == "\n":
                break
            j += 1
        self.malformed = True
        word.text += "("
        self.i += 1

    def _arith_command(self, cmd: _Cmd, depth: int) -> bool:
        end = _find_arith_end(self.s, self.i + 2)
        if end is None:
            return False
        cmd.substs.extend(_collect_substs(self.s[self.i + 2 : end], depth + 1, self))
        cmd.words.append(_Word(text="((", started=True))
        self.i = end + 2
        return True

    def _double_bracket(self, word: _Word, depth: int, cmd: _Cmd) -> None:
        # `[[ … ]]` is one test command: `<`, `>`, `&&` inside are not shell operators.
        m = re.compile(r"(?:^|[ \t])\]\](?=$|[ \t\n;&|)])").search(self.s, self.i)
        if m is None or "\n" in self.s[self.i : m.start()]:
            return  # unterminated: parse the rest as ordinary words
        cmd.substs.extend(_collect_substs(self.s[self.i : m.start()], depth + 1, self))
        self.i = m.end()
        word.text = "[["

    def _read_heredocs(self, depth: int) -> None:
        pending, self.pending_heredocs = self.pending_heredocs, []
        for cmd, delim, strip_tabs, quoted in pending:
            body_start = self.i
            found = _heredoc_end(self.s, body_start, delim, strip_tabs)
            if found is None:
                # Unterminated: not a heredoc; what follows is parsed as commands.
                self.malformed = True
                return
            body = self.s[body_start : found[0]]
            cmd.stdin_texts.append(body)
            if not quoted:
                cmd.substs.extend(_collect_substs(body, depth + 1, self))
            self.i = min(found[1] + 1, self.n)


def _parse_text(text: str, depth: int, parent: _Parser | None = None) -> _Node:
    p = _Parser(text)
    node = p.parse_list(depth, stop_paren=False)
    if parent is not None:
        parent.malformed |= p.malformed
        parent.comments.extend(p.comments)
        parent.escaped_ops |= p.escaped_ops
    return node


def _collect_substs(text: str, depth: int, parent: _Parser) -> list[_Node]:
    """Substitutions inside text that is otherwise data (arithmetic, `[[ ]]`, heredoc bodies)."""
    if depth > MAX_DEPTH:
        raise _TooDeep
    p = _Parser(text)
    holder = _Cmd()
    p._read_dquoted(depth, holder, "\0", None)
    parent.malformed |= p.malformed
    return holder.substs
