"""Checkpoints: a copy of the files a mutation is about to touch, so `mermaid restore ID` can put
them back.

Layout: `<data_dir>/checkpoints/<id>/manifest.json` and `<id>/files/<n>` (one copy per file that
existed). A path that did not exist is recorded as such; restoring deletes it again (a directory
only when it is empty). A restore first checkpoints the files it is about to overwrite, so a
restore can itself be undone. Restores are confined to the recorded project root.
"""

import errno
import os
import secrets
import shutil
import stat
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from mermaid_cli.core.defaults import empty_list
from mermaid_cli.security.paths import fd_path, inside_project, locate


class CheckpointFile(BaseModel):
    #: posix path relative to the project root (absolute for a path outside it)
    path: str
    existed: bool
    kind: Literal["file", "dir", "symlink", "absent"] = "file"
    #: relative to the checkpoint directory, when a copy was kept
    snapshot: str | None = None
    #: symlink target, when the path was a symlink
    link: str | None = None
    mode: int | None = None


class Manifest(BaseModel):
    id: str
    session: str
    created_at: str
    reason: str = ""
    project_path: str
    files: list[CheckpointFile] = Field(default_factory=empty_list)


class RestoreReport(BaseModel):
    id: str
    restored: list[str] = Field(default_factory=empty_list)
    deleted: list[str] = Field(default_factory=empty_list)
    skipped: list[str] = Field(default_factory=empty_list)
    #: the checkpoint taken just before restoring (undo the restore with it)
    pre_restore_checkpoint: str | None = None


class CheckpointNotFound(KeyError):
    pass


def default_data_dir() -> Path:
    """`$MERMAID_DATA_DIR`, else the platform's per-user data directory (where runs write them)."""
    from mermaid_cli.config.dirs import data_dir

    return data_dir()


class CheckpointStore:
    def __init__(
        self,
        data_dir: Path,
        project_root: Path,
        session_id: str,
        refuse: Callable[[str], str | None] | None = None,
    ) -> None:
        self.base = Path(data_dir) / "checkpoints"
        self.project_root = Path(os.path.realpath(project_root))
        self.session_id = session_id
        #: the gate's path rules for a read (`ToolContext.path_rules`): the store resolves each
        #: path once more, and a symlink swapped since the tool's check must not make it copy a
        #: secret into the data dir
        self.refuse = refuse

    # -- taking ---------------------------------------------------------------------------------

    def __call__(self, paths: list[Path], reason: str) -> str:
        """So the store itself can be `ToolContext.checkpoint`."""
        return self.checkpoint(paths, reason)

    def checkpoint(self, paths: list[Path], reason: str) -> str:
        cid = f"checkpoint-{time.time_ns():x}-{secrets.token_hex(2)}"
        final = self.base / cid
        staging = self.base / f".{cid}.partial"
        (staging / "files").mkdir(parents=True)
        files: list[CheckpointFile] = []
        seen: set[str] = set()
        try:
            for path in self._with_missing_parents([self._absolute(raw) for raw in paths]):
                key = str(path)
                if key in seen:
                    continue
                seen.add(key)
                files.append(self._snapshot(path, staging, len(files)))
            manifest = Manifest(
                id=cid,
                session=self.session_id,
                created_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
                reason=reason,
                project_path=str(self.project_root),
                files=files,
            )
            (staging / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
            # a checkpoint appears whole or not at all
            os.rename(staging, final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return cid

    def _with_missing_parents(self, paths: list[Path]) -> list[Path]:
        """Also record the missing directories a write will create, so a restore removes them."""
        out = []
        for path in paths:
            out.append(path)
            parent = path.parent
            while parent != self.project_root and self.project_root in parent.parents and not parent.exists():
                out.append(parent)
                parent = parent.parent
        return out

    def _absolute(self, raw: Path) -> Path:
        # the parent resolved, the final component kept: a symlink is recorded as a symlink
        return locate(self.project_root, str(raw), follow_final=False).path

    def _record_path(self, path: Path) -> str:
        try:
            return path.relative_to(self.project_root).as_posix()
        except ValueError:
            return str(path)

    def _snapshot(self, path: Path, staging: Path, n: int) -> CheckpointFile:
        rec = self._record_path(path)
        try:
            st = path.lstat()
        except FileNotFoundError:
            return CheckpointFile(path=rec, existed=False, kind="absent")
        if path.is_symlink():
            return CheckpointFile(path=rec, existed=True, kind="symlink", link=os.readlink(path))
        if path.is_dir():
            return CheckpointFile(path=rec, existed=True, kind="dir", mode=st.st_mode & 0o7777)
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the run's thread for good, a device never end
            raise OSError(
                errno.EINVAL, f"not checkpointed: {rec} is not a regular file (a FIFO, socket or device)"
            )
        snapshot = f"files/{n}"
        refusal = self.refuse(str(path)) if self.refuse is not None else None
        if refusal is not None:
            raise OSError(errno.EACCES, f"not checkpointed: {refusal}")
        _copy_exactly(path, staging / snapshot)
        return CheckpointFile(
            path=rec, existed=True, kind="file", snapshot=snapshot, mode=st.st_mode & 0o7777
        )

    # -- listing --------------------------------------------------------------------------------

    def load(self, cid: str) -> Manifest:
        if "/" in cid or "\\" in cid or cid.startswith("."):
            raise CheckpointNotFound(cid)
        path = self.base / cid / "manifest.json"
        try:
            return Manifest.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            raise CheckpointNotFound(cid) from None

    def list(self, session_id: str | None = None, all_projects: bool = False) -> list[Manifest]:
        """Checkpoints of this project (oldest first), optionally of one session only."""
        out: list[Manifest] = []
        if not self.base.is_dir():
            return out
        for entry in self.base.iterdir():
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            try:
                manifest = Manifest.model_validate_json((entry / "manifest.json").read_bytes())
            except (OSError, ValueError):
                continue
            if not all_projects and manifest.project_path != str(self.project_root):
                continue
            if session_id is not None and manifest.session != session_id:
                continue
            out.append(manifest)
        out.sort(key=lambda m: (m.created_at, m.id))
        return out

    # -- restoring ------------------------------------------------------------------------------

    def restore(self, cid: str) -> RestoreReport:
        manifest = self.load(cid)
        root = Path(manifest.project_path)
        targets: list[tuple[CheckpointFile, Path]] = []
        report = RestoreReport(id=cid)
        for entry in manifest.files:
            target = Path(entry.path) if Path(entry.path).is_absolute() else root / entry.path
            if not Path(entry.path).is_absolute() and not _within(root, target):
                report.skipped.append(entry.path)  # a manifest that points outside: never follow it
                continue
            targets.append((entry, target))
        report.pre_restore_checkpoint = self.checkpoint([t for _e, t in targets], f"before restore {cid}")
        # files before directories on delete (deepest first), directories before files on create
        for entry, target in sorted(targets, key=lambda et: et[0].kind != "dir"):
            if entry.kind == "dir":
                target.mkdir(parents=True, exist_ok=True)
                report.restored.append(entry.path)
        for entry, target in targets:
            if entry.kind == "file" and entry.snapshot is not None:
                self._put_file(self.base / cid / entry.snapshot, target, entry.mode)
                report.restored.append(entry.path)
            elif entry.kind == "symlink" and entry.link is not None:
                _remove(target)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(entry.link, target)
                report.restored.append(entry.path)
        for entry, target in sorted(targets, key=lambda et: -len(et[1].parts)):
            if entry.kind == "absent" and (target.exists() or target.is_symlink()):
                if target.is_dir() and not target.is_symlink():
                    try:
                        target.rmdir()
                    except OSError:
                        report.skipped.append(entry.path)  # a directory that is not empty now
                        continue
                else:
                    target.unlink()
                report.deleted.append(entry.path)
        return report

    def _put_file(self, snapshot: Path, target: Path, mode: int | None) -> None:
        if target.is_symlink() or (target.exists() and not target.is_file()):
            _remove(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        # stream through a temp file in the target's directory: memory-bounded and atomic
        tmp = target.parent / f".{target.name}.{secrets.token_hex(4)}.restore"
        try:
            shutil.copyfile(snapshot, tmp)
            if mode is not None:
                os.chmod(tmp, mode)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def _within(root: Path, target: Path) -> bool:
    return inside_project(root, str(target), follow_final=False)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _copy_exactly(path: Path, dest: Path) -> None:
    """Copy the file at `path` itself: opened without following a final symlink, and (Linux) only
    when the kernel says the open file is at `path`. A directory on the way swapped for a symlink
    after `path` was resolved (to `~/.ssh`, say) would otherwise copy what it points at into the
    data directory."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if fd_path(fd) not in (None, str(path)):
            raise OSError(errno.ELOOP, f"{path} changed while being checkpointed (a symlink appeared)")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} changed while being checkpointed (no longer a regular file)")
        with open(fd, "rb", closefd=False) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    finally:
        os.close(fd)
