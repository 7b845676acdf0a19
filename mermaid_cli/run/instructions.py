"""Project instructions for the system prompt: the user's `MERMAID.md`, then the project's
`AGENTS.md`, `CLAUDE.md` and `MERMAID.md`, later files winning on conflict (the prompt says so).

The whole text is capped at 40,000 bytes (~10k tokens, paid on every request) and ends with a
marker when cut, so the model knows it did not see everything. A file that is a symlink leading out
of the project is skipped: its text would be sent to the provider.
"""

from __future__ import annotations

from pathlib import Path

MAX_INSTRUCTION_BYTES = 40_000
TRUNCATED_MARKER = "[Project instructions truncated - exceeds 10k token cap]"
PROJECT_FILES = ("AGENTS.md", "CLAUDE.md", "MERMAID.md")


def _read(path: Path, allowed_root: Path) -> str | None:
    try:
        if not path.is_file():
            return None
        real = path.resolve()
        root = allowed_root.resolve()
        if real != root and root not in real.parents:
            return None
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None


def instruction_sources(project_root: Path, user_config_dir: Path | None) -> list[tuple[str, str]]:
    """(label, text) of each instruction file found, in prompt order, duplicates skipped
    (CLAUDE.md is often a symlink to or copy of AGENTS.md)."""
    candidates: list[tuple[str, Path, Path]] = []
    if user_config_dir is not None:
        user_dir = Path(user_config_dir)
        candidates.append(("MERMAID.md (user)", user_dir / "MERMAID.md", user_dir))
    root = Path(project_root)
    candidates += [(name, root / name, root) for name in PROJECT_FILES]
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for label, path, allowed in candidates:
        text = _read(path, allowed)
        if text is None:
            continue
        text = text.strip()
        if not text or text in seen:
            continue
        seen.add(text)
        found.append((label, text))
    return found


def cap_utf8(text: str, limit: int, marker: str) -> str:
    """`text` if it fits in `limit` UTF-8 bytes, else its head and `marker`, the whole within `limit`."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    room = max(0, limit - len(marker.encode("utf-8")) - 1)
    head = data[:room].decode("utf-8", errors="ignore")  # never cut a character in half
    return f"{head}\n{marker}"


def load_project_instructions(
    project_root: Path, user_config_dir: Path | None, *, cap: int = MAX_INSTRUCTION_BYTES
) -> str:
    """The instruction files as one text ("" when there are none), each under a `## <file>` heading."""
    sources = instruction_sources(project_root, user_config_dir)
    if not sources:
        return ""
    text = "\n\n".join(f"## {label}\n\n{body}" for label, body in sources)
    return cap_utf8(text, cap, TRUNCATED_MARKER)
