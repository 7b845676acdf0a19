"""The Action's install (action/install.sh, action/requirements.lock): the cache key, the
mermaid-version pin, a cache hit that skips the install, and a lock that pins every dependency
with hashes (what `pip --require-hashes` needs)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT, plant_shadows

from mermaid_cli import __version__

INSTALL = ROOT / "action" / "install.sh"
LOCK = ROOT / "action" / "requirements.lock"


def _install(
    tmp_path: Path, *args: str, cwd: Path | None = None, **env: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    out = tmp_path / "out.txt"
    out.write_text("")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    full.update(
        {
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_OUTPUT": str(out),
            "RUNNER_TEMP": str(tmp_path),
            "MERMAID_SETUP_PYTHON": sys.executable,
            **env,
        }
    )
    proc = subprocess.run(
        ["bash", str(INSTALL), *args], env=full, capture_output=True, text=True, timeout=120, cwd=cwd
    )
    values = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    return proc, values


def test_the_key_names_the_version_and_changes_with_the_python(tmp_path):
    proc, out = _install(tmp_path, "key")
    assert proc.returncode == 0, proc.stderr
    assert out["version"] == __version__ and out["venv"] == str(tmp_path / "mermaid-venv")
    assert re.fullmatch(rf"mermaid-venv-\w+-\w+-{re.escape(__version__)}-[0-9a-f]{{32}}", out["key"])
    again, out2 = _install(tmp_path, "key")
    assert out2["key"] == out["key"]  # stable for the same python and sources


def test_the_key_is_computed_without_the_checkouts_python_files(tmp_path):
    """The job's working directory is the checkout (perhaps a pull request's): its `hashlib.py`,
    `pathlib.py` or `platform.py` must not be what the key's Python imports."""
    marker = tmp_path / "imported"
    checkout = plant_shadows(tmp_path / "checkout", ["hashlib", "pathlib", "platform", "sys", "venv"], marker)
    proc, out = _install(tmp_path, "key", cwd=checkout)
    assert proc.returncode == 0, proc.stderr
    assert out["key"] == _install(tmp_path, "key")[1]["key"] and not marker.exists()


def test_a_matching_pin_passes_and_another_version_fails_before_installing(tmp_path):
    proc, _ = _install(tmp_path, "key", INPUT_MERMAID_VERSION=f" v{__version__} ")
    assert proc.returncode == 0, proc.stderr
    proc, out = _install(tmp_path, "key", INPUT_MERMAID_VERSION="9.9.9")
    assert proc.returncode == 2 and "key" not in out
    assert f"mermaid-version is 9.9.9 but this action ref ships Mermaid {__version__}" in proc.stderr


def test_a_cache_hit_with_a_working_venv_installs_nothing(tmp_path):
    bin_dir = tmp_path / "mermaid-venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "mermaid").write_text("#!/bin/sh\necho 'mermaid 0.0.cached'\n")
    (bin_dir / "mermaid").chmod(0o755)
    proc, out = _install(tmp_path, MERMAID_CACHE_HIT="true")
    assert proc.returncode == 0, proc.stderr
    assert "from the cache" in proc.stdout and "mermaid 0.0.cached" in proc.stdout
    assert out["bin"] == str(bin_dir / "mermaid")


def _locked() -> dict[str, list[str]]:
    """package name -> its hashes, from requirements.lock."""
    text = re.sub(r"\\\n\s*", " ", LOCK.read_text())
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.match(r"([A-Za-z0-9_.-]+)==\S+", line)
        assert m, f"not pinned with ==: {line[:80]}"
        found[m.group(1).lower().replace("_", "-")] = re.findall(r"--hash=sha256:([0-9a-f]{64})", line)
    return found


def test_the_lock_pins_every_dependency_with_hashes_for_this_version():
    assert f"mermaid-agent {__version__}," in LOCK.read_text().splitlines()[0]
    locked = _locked()
    assert all(locked.values()), [name for name, hashes in locked.items() if not hashes]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for spec in [*project["dependencies"], "hatchling"]:
        name = re.match(r"[A-Za-z0-9_.-]+", spec).group(0).lower().replace("_", "-")  # type: ignore[union-attr]
        assert name in locked, f"{name} is a dependency but not in action/requirements.lock"
