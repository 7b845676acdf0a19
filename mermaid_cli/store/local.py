"""`<project>/.mermaid/NAME/`: Mermaid's local run history (conversations, batch artifacts), kept
out of git by `.mermaid/.gitignore`, which lists each such directory and ignores itself — the rest
of `.mermaid/` (config, skills, commands) is the project's to commit."""

from __future__ import annotations

from pathlib import Path

_HEADER = "# Mermaid's local run history stays out of git\n"


def local_dir(project_root: Path, name: str) -> Path:
    """`.mermaid/NAME`, made if missing, and listed in `.mermaid/.gitignore` (which ignores itself
    too, so `git status` after a run shows only the agent's changes)."""
    directory = project_root / ".mermaid" / name
    directory.mkdir(parents=True, exist_ok=True)
    gitignore = project_root / ".mermaid" / ".gitignore"
    try:
        lines = gitignore.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    wanted = [entry for entry in (f"{name}/", ".gitignore") if entry not in lines]
    if wanted:
        text = "\n".join(lines) + "\n" if lines else _HEADER
        gitignore.write_text(text + "".join(f"{entry}\n" for entry in wanted), encoding="utf-8")
    return directory
