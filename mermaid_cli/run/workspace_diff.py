"""What a run changed in the project: a snapshot before the run and a unified diff after it.

With git, the snapshot is a tree object written through a private index (the user's index and
work tree are never touched), so untracked-but-not-ignored files are included and `git diff
--binary` gives a patch `git apply` takes. Without git, small files are copied aside and compared
with difflib (`patch -p1` or `git apply` applies the result).
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SKIP_DIRS = {
    ".git",
    ".mermaid",
    "__pycache__",
    "node_modules",
    ".venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
}
MAX_FILES = 20_000
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_COPY_BYTES = 64 * 1024 * 1024  # past this, files are compared by size and mtime only


def _git(root: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-c", "core.quotepath=off", *args],
        cwd=root,
        env=env,
        input=input,
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout


class WorkspaceSnapshot:
    """`exclude`: project-relative paths that are never the run's changes (the files Mermaid
    itself writes: the target of stdout, `--record`, `--diff-out`, `--output-last-message`)."""

    def __init__(self, root: Path, exclude: frozenset[str] = frozenset()) -> None:
        self.root = root
        self.exclude = exclude
        self.tree: str | None = None
        self.copy_dir: Path | None = None
        self.files: dict[str, tuple[int, int]] = {}  # rel path -> (size, mtime_ns), non-git mode
        self.complete = True
        # The run is over when these are asked for: the "after" state is computed once.
        self._after_tree: str | None = None
        self._changed: list[str] | None = None

    # -- taking it ----------------------------------------------------------------------------
    @classmethod
    def take(cls, root: Path, exclude: frozenset[str] = frozenset()) -> WorkspaceSnapshot:
        snap = cls(root, exclude)
        if shutil.which("git") and _inside_git(root):
            try:
                snap.tree = snap._git_tree()
                return snap
            except (subprocess.SubprocessError, OSError):
                snap.tree = None
        snap._copy_tree()
        return snap

    def _git_env(self, index: str) -> dict[str, str]:
        env = dict(os.environ)
        env["GIT_INDEX_FILE"] = index
        return env

    def _git_tree(self) -> str:
        with tempfile.TemporaryDirectory(prefix="mermaid-idx-") as tmp:
            index = Path(tmp) / "index"
            real = Path(
                _git(self.root, "rev-parse", "--path-format=absolute", "--git-path", "index").decode().strip()
            )
            if real.is_file():
                shutil.copyfile(real, index)  # reuse git's stat cache: no rehash of unchanged files
            env = self._git_env(str(index))
            own = [f":(exclude,literal){rel}" for rel in sorted(self.exclude)]
            _git(self.root, "add", "-A", "--", ".", ":(exclude).mermaid", *own, env=env)
            return _git(self.root, "write-tree", env=env).decode().strip()

    def _walk(self) -> list[str]:
        out: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            for name in filenames:
                path = Path(dirpath) / name
                if path.is_symlink() or not path.is_file():
                    continue
                rel = path.relative_to(self.root).as_posix()
                if rel in self.exclude:
                    continue
                out.append(rel)
                if len(out) > MAX_FILES:
                    self.complete = False
                    return out
        return out

    def _copy_tree(self) -> None:
        self.copy_dir = Path(tempfile.mkdtemp(prefix="mermaid-snap-"))
        budget = MAX_COPY_BYTES
        for rel in self._walk():
            src = self.root / rel
            try:
                st = src.stat()
            except OSError:
                continue
            self.files[rel] = (st.st_size, st.st_mtime_ns)
            if st.st_size <= MAX_FILE_BYTES and st.st_size <= budget:
                budget -= st.st_size
                dst = self.copy_dir / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                try:
                    shutil.copy2(src, dst)
                except OSError:
                    pass

    # -- comparing ----------------------------------------------------------------------------
    def _after(self) -> str:
        if self._after_tree is None:
            self._after_tree = self._git_tree()
        return self._after_tree

    def changed_files(self) -> list[str]:
        if self._changed is None:
            self._changed = self._compare()
        return self._changed

    def _compare(self) -> list[str]:
        if self.tree is not None:
            out = _git(
                self.root, "diff", "--name-only", "--no-renames", "--relative", self.tree, self._after()
            )
            return [line for line in out.decode("utf-8", "replace").splitlines() if line]
        changed: list[str] = []
        now = {rel for rel in self._walk()}
        for rel in sorted(now | set(self.files)):
            if rel not in now or rel not in self.files:
                changed.append(rel)
                continue
            st = (self.root / rel).stat()
            if (st.st_size, st.st_mtime_ns) != self.files[rel] and self._content_differs(rel):
                changed.append(rel)
        return changed

    def _content_differs(self, rel: str) -> bool:
        assert self.copy_dir is not None
        old = self.copy_dir / rel
        if not old.exists():
            return True  # not copied (too big): size or mtime changed, count it
        try:
            return old.read_bytes() != (self.root / rel).read_bytes()
        except OSError:
            return True

    def diff(self) -> str:
        if self.tree is not None:
            raw = _git(self.root, "diff", "--binary", "--no-renames", "--relative", self.tree, self._after())
            return raw.decode("utf-8", "surrogateescape")
        parts: list[str] = []
        for rel in self.changed_files():
            parts.append(self._file_diff(rel))
        return "".join(parts)

    def _file_diff(self, rel: str) -> str:
        assert self.copy_dir is not None
        old_path, new_path = self.copy_dir / rel, self.root / rel
        if rel in self.files and not old_path.exists():
            return f"diff --mermaid a/{rel} b/{rel}\n# {rel} changed; it was too large to keep a copy for the diff\n"
        old = _read_lines(old_path) if rel in self.files else []
        new = _read_lines(new_path) if new_path.exists() else []
        if old is None or new is None:
            return f"Binary files a/{rel} and b/{rel} differ\n"
        a = f"a/{rel}" if rel in self.files else "/dev/null"
        b = f"b/{rel}" if new_path.exists() else "/dev/null"
        lines = list(difflib.unified_diff(old, new, a, b))
        out = []
        for line in lines:
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)

    def close(self) -> None:
        if self.copy_dir is not None:
            shutil.rmtree(self.copy_dir, ignore_errors=True)
            self.copy_dir = None


def stream_target(stream: object) -> Path | None:
    """The regular file an output stream writes to (`mermaid exec --json > events.jsonl`), or None
    for a pipe, a terminal or an in-memory buffer."""
    import stat

    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except (AttributeError, OSError, ValueError):
        return None


def _read_lines(path: Path) -> list[str] | None:
    try:
        data = path.read_bytes()
    except OSError:
        return []
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "surrogateescape").splitlines(keepends=True)


def _inside_git(root: Path) -> bool:
    try:
        out = _git(root, "rev-parse", "--is-inside-work-tree")
    except (subprocess.SubprocessError, OSError):
        return False
    return out.strip() == b"true"
