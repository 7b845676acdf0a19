"""Run the real `mermaid` binary with stdin and stderr on a pseudo-terminal (stdout to a file), as a
person's terminal would: the child's controlling terminal is the pty, so closing it hangs up."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


class PtyRun:
    def __init__(
        self,
        args: list[str],
        cwd: Path,
        env: dict[str, str],
        stdout: Path | None,
        *,
        cols: int = 100,
        rows: int = 30,
        argv: list[str] | None = None,
    ) -> None:
        """`stdout` None puts stdout on the terminal too; `argv` replaces `python -m mermaid_cli ARGS`."""
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.stdout_path = stdout
        full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
        full_env = {**full_env, "TERM": "xterm-256color", **env}
        with open(stdout or os.devnull, "wb") as out:

            def controlling_tty() -> None:
                os.setsid()
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)

            self.proc = subprocess.Popen(
                argv or [sys.executable, "-m", "mermaid_cli", *args],
                cwd=cwd,
                stdin=slave,
                stdout=out if stdout is not None else slave,
                stderr=slave,
                env=full_env,
                preexec_fn=controlling_tty,
            )
        os.close(slave)
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        # polls: a thread blocked in read() would keep the master open past hang_up()
        while not self._stop.is_set():
            if not select.select([self.master], [], [], 0.05)[0]:
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self._buf += data

    @property
    def raw(self) -> str:
        with self._lock:
            return self._buf.decode("utf-8", "replace")

    @property
    def text(self) -> str:
        """What reached the terminal, escapes stripped."""
        return ANSI.sub("", self.raw).replace("\r", "")

    def wait_for(self, needle: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text:
            if time.monotonic() > deadline or (self.proc.poll() is not None and needle not in self.text):
                time.sleep(0.2)
                if needle in self.text:
                    return
                raise AssertionError(f"{needle!r} never appeared on the terminal:\n{self.text}")
            time.sleep(0.05)

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait(self, timeout: float = 60) -> int:
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code

    def hang_up(self) -> None:
        """Close the terminal, as closing its window does (the kernel sends SIGHUP)."""
        self._stop.set()
        self._reader.join(timeout=5)
        os.close(self.master)
        self.master = -1

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._stop.set()
        self._reader.join(timeout=5)
        if self.master >= 0:
            os.close(self.master)
            self.master = -1

    @property
    def stdout(self) -> bytes:
        assert self.stdout_path is not None
        return self.stdout_path.read_bytes()
