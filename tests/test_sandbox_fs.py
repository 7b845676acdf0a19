"""The filesystem half of the kernel sandbox, against the real kernel: read_only changes nothing,
auto writes only the project and its temp dir, `.git`/`.mermaid` stay read-only, $HOME secrets
stay unreadable. Real processes, no mocks."""

from __future__ import annotations

import hashlib
import os
import subprocess
import uuid
from pathlib import Path
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mermaid_cli.security.sandbox import Mode, PreparedSandbox, for_mode, prepare, probe

SUPPORT = probe(env={})
pytestmark = pytest.mark.skipif(
    SUPPORT.landlock_abi < 3 or not SUPPORT.seccomp_filter, reason="no Landlock/seccomp"
)
PY = "/usr/bin/python3"


def snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Everything observable about a tree: type, mode, size, mtime, content hash, link target."""
    out: dict[str, tuple[object, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st_ = p.lstat()
            if p.is_symlink():
                out[str(p.relative_to(root))] = ("link", os.readlink(p))
            elif p.is_dir():
                out[str(p.relative_to(root))] = ("dir", st_.st_mode, st_.st_mtime_ns)
            else:
                digest = hashlib.sha256(p.read_bytes()).hexdigest()
                out[str(p.relative_to(root))] = (
                    "file",
                    st_.st_mode,
                    st_.st_size,
                    st_.st_mtime_ns,
                    digest,
                    st_.st_uid,
                )
    return out


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    proj, home, priv, outside = (tmp_path / n for n in ("proj", "home", "priv", "outside"))
    for d in (
        proj / "sub",
        proj / ".git" / "hooks",
        proj / ".mermaid",
        home / ".ssh",
        home / ".aws",
        priv,
        outside,
    ):
        d.mkdir(parents=True)
    (proj / "f.txt").write_text("alpha\n")
    (proj / "sub" / "g.txt").write_text("beta\n")
    (proj / ".git" / "config").write_text("[core]\n")
    (proj / ".mermaid" / "config.toml").write_text("")
    (outside / "o.txt").write_text("outside\n")
    (proj / "link_out").symlink_to(outside / "o.txt")
    (proj / "link_dir_out").symlink_to(outside)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (home / ".aws" / "credentials").write_text("aws_secret_access_key=abc\n")
    (home / ".netrc").write_text("machine x password hunter2\n")
    (home / ".bashrc").write_text("# bashrc\n")
    (home / "notes.txt").write_text("notes\n")
    return {"proj": proj, "home": home, "priv": priv, "outside": outside, "tmp": tmp_path}


def sandbox(tree: dict[str, Path], mode: str = "read_only") -> PreparedSandbox:
    policy = for_mode(cast(Mode, mode), project_root=tree["proj"], temp_dir=tree["priv"], home=tree["home"])
    return prepare(policy, support=SUPPORT)


def run(sb: PreparedSandbox, cmd: str, tree: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tree["home"]), "TMPDIR": str(sb.tmpdir), "LC_ALL": "C"}
    return subprocess.run(
        ["/bin/bash", "-c", cmd], cwd=tree["proj"], env=env, capture_output=True, text=True, timeout=20,
        close_fds=True, start_new_session=True, **sb.popen_kwargs(),
    )  # fmt: skip


def test_read_only_writes_change_nothing(tree: dict[str, Path]) -> None:
    shared = f"/tmp/mermaid-sbx-{uuid.uuid4().hex}"
    home = tree["home"]
    writes = [
        "touch new.txt", "touch f.txt", "echo x > f.txt", "echo x >> f.txt", "sed -i s/alpha/beta/ f.txt",
        "sort -o f.txt f.txt", "dd if=/dev/zero of=f.txt bs=1 count=1", "ln -s f.txt l2", "ln f.txt hard",
        "mv f.txt f2.txt", "cp f.txt f3.txt", "mkdir d", "rm f.txt", "rm -rf sub", "truncate -s 0 f.txt",
        f"{PY} -c \"open('x','w')\"", f"{PY} -c \"open('f.txt','r+').write('z')\"", "echo x | tee f.txt",
        "install -m 644 f.txt f4", "chmod 777 f.txt", "chown nobody f.txt", f"{PY} -c \"import os; os.utime('f.txt', (0, 0))\"",
        f"{PY} -c \"import os; os.setxattr('f.txt', 'user.x', b'1')\"", "perl -e 'open(F, \">f.txt\") or die'",
        "mkfifo fifo", f"echo x > {shared}", f"echo x > {home}/new", f"echo x > {home}/notes.txt",
        "echo x > link_out", "echo x > link_dir_out/new", f"echo x > {tree['outside']}/o.txt",
        f"mv {tree['outside']}/o.txt .", "echo x > .git/config", "touch .git/hooks/pre-commit", "rm -rf .git",
        "git init -q newrepo", f"cp /etc/hostname {home}/copy",
    ]  # fmt: skip
    assert len(writes) >= 20
    before = snapshot(tree["tmp"])
    sb = sandbox(tree)
    for cmd in writes:
        r = run(sb, cmd, tree)
        assert r.returncode != 0, f"{cmd!r} succeeded: {r.stdout}{r.stderr}"
    assert snapshot(tree["tmp"]) == before
    assert not os.path.exists(shared)


def test_read_only_reads_work_and_temp_is_writable(tree: dict[str, Path]) -> None:
    sb = sandbox(tree)
    r = run(
        sb, "cat f.txt sub/g.txt && ls /usr >/dev/null && cat ~/.bashrc ~/notes.txt && ls ~ | wc -l", tree
    )
    assert r.returncode == 0, r.stderr
    assert "alpha" in r.stdout and "beta" in r.stdout and "notes" in r.stdout
    r = run(
        sb,
        f'echo scratch > "$TMPDIR/t" && cat "$TMPDIR/t" && {PY} -c "import tempfile; tempfile.mkstemp()"',
        tree,
    )
    assert r.returncode == 0 and "scratch" in r.stdout, r.stderr
    r = run(sb, "echo hi > /dev/null && echo out > /dev/stdout && head -c 4 /dev/urandom | wc -c", tree)
    assert r.returncode == 0 and "out" in r.stdout, r.stderr


@pytest.mark.parametrize("secret", ["~/.ssh/id_rsa", "~/.aws/credentials", "~/.netrc"])
def test_home_secrets_are_unreadable(tree: dict[str, Path], secret: str) -> None:
    for mode in ("read_only", "auto"):
        sb = sandbox(tree, mode)
        r = run(sb, f"cat {secret}", tree)
        assert r.returncode != 0 and "Permission denied" in r.stderr, (mode, r)
        assert "KEY" not in r.stdout and "secret" not in r.stdout and "hunter2" not in r.stdout


def test_other_homes_and_shared_tmp_are_unreadable(tree: dict[str, Path]) -> None:
    other = Path(f"/tmp/mermaid-sbx-read-{uuid.uuid4().hex}")
    other.write_text("someone else's\n")
    try:
        r = run(sandbox(tree), f"cat {other}; cat {tree['outside']}/o.txt", tree)
        assert "someone" not in r.stdout and "outside" not in r.stdout and r.returncode != 0
    finally:
        other.unlink()


def test_auto_writes_project_and_temp_only(tree: dict[str, Path]) -> None:
    sb = sandbox(tree, "auto")
    assert sb.describe()["read_only_strategy"] in ("mount_ro", "landlock_siblings")
    ok = ["echo y > f.txt", "echo z > sub/new.txt", "mkdir -p sub/d/e && touch sub/d/e/x", "rm sub/g.txt",
          f"{PY} -c \"open('sub/py.txt','w').write('1')\"", 'echo t > "$TMPDIR/t"', "mv f.txt sub/moved.txt"]  # fmt: skip
    if sb.describe()["read_only_strategy"] == "mount_ro":
        ok += ["touch newtop.txt", "mkdir newdir && echo a > newdir/a"]
    for cmd in ok:
        r = run(sb, cmd, tree)
        assert r.returncode == 0, (cmd, r.stderr)
    assert (tree["proj"] / "sub" / "moved.txt").read_text() == "y\n"


def test_auto_refuses_outside_tmp_git_and_mermaid(tree: dict[str, Path]) -> None:
    shared = f"/tmp/mermaid-sbx-{uuid.uuid4().hex}"
    outside_before = snapshot(tree["outside"])
    home_before = snapshot(tree["home"])
    git_before = snapshot(tree["proj"] / ".git")
    mermaid_before = snapshot(tree["proj"] / ".mermaid")
    sb = sandbox(tree, "auto")
    refused = [
        f"echo x > {shared}", f"echo x > {tree['outside']}/o.txt", "echo x > link_out", "echo x > link_dir_out/n",
        f"echo x > {tree['home']}/n", "echo x > .git/config", "echo x >> .git/config", "touch .git/hooks/post-checkout",
        "echo x > .mermaid/config.toml", "touch .mermaid/new", "mv .git moved-git", "mv .mermaid m2", "rm -rf .git",
        "rmdir .git/hooks", "rm .git/config", "mv .git/config .git/c2", "ln -s /tmp .git/evil", "truncate -s0 .git/config",
        f"{PY} -c \"open('.git/config','a').write('x')\"", "mv sub/g.txt .git/hooks/pre-commit", "cp f.txt .git/hooks/x",
    ]  # fmt: skip
    for cmd in refused:
        r = run(sb, cmd, tree)
        assert r.returncode != 0, f"{cmd!r} succeeded"
    assert not os.path.exists(shared)
    assert snapshot(tree["outside"]) == outside_before
    assert snapshot(tree["home"]) == home_before
    assert snapshot(tree["proj"] / ".git") == git_before
    assert snapshot(tree["proj"] / ".mermaid") == mermaid_before


def test_auto_without_mount_namespace_keeps_git_read_only(tree: dict[str, Path]) -> None:
    """The Landlock-only construction (no CAP_SYS_ADMIN): `.git` is safe; the known cost is that
    new top-level entries cannot be created (existing subdirectories stay writable)."""
    support = probe(env={"MERMAID_SANDBOX_FORCE_UNAVAILABLE": "mount_namespace"})
    policy = for_mode("auto", project_root=tree["proj"], temp_dir=tree["priv"], home=tree["home"])
    sb = prepare(policy, support=support)
    assert sb.describe()["read_only_strategy"] == "landlock_siblings"
    git_before = snapshot(tree["proj"] / ".git")
    for cmd in ["echo x > .git/config", "touch .git/hooks/x", "rm -rf .git", "mv .git g", "touch .mermaid/x"]:
        assert run(sb, cmd, tree).returncode != 0, cmd
    assert snapshot(tree["proj"] / ".git") == git_before
    assert run(sb, "echo ok > sub/new && echo y > f.txt", tree).returncode == 0
    assert run(sb, "touch newtop", tree).returncode != 0  # the documented limitation


SEGMENTS = st.sampled_from(["a", "b", "..", ".", "sub", "link_up", "link_out_dir", ".git", "hooks", "x.txt"])


@pytest.fixture(scope="module")
def prop_tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("prop")
    proj, outside, priv, home = base / "w" / "proj", base / "w" / "outside", base / "priv", base / "home"
    for d in (proj / "sub" / "a", proj / ".git" / "hooks", outside / "b", priv, home):
        d.mkdir(parents=True)
    (proj / ".git" / "config").write_text("[core]\n")
    (outside / "x.txt").write_text("x\n")
    (proj / "link_up").symlink_to("..")
    (proj / "sub" / "link_up").symlink_to("../..")
    (proj / "link_out_dir").symlink_to(outside)
    (proj / "sub" / "a" / "link_out_dir").symlink_to(outside)
    return {"proj": proj, "outside": outside, "priv": priv, "home": home, "base": base}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(SEGMENTS, min_size=1, max_size=6).map("/".join), min_size=1, max_size=12))
def test_property_no_write_outside_writable_roots(prop_tree: dict[str, Path], rels: list[str]) -> None:
    outside_before = snapshot(prop_tree["outside"])
    git_before = snapshot(prop_tree["proj"] / ".git")
    home_before = snapshot(prop_tree["home"])
    policy = for_mode(
        "auto", project_root=prop_tree["proj"], temp_dir=prop_tree["priv"], home=prop_tree["home"]
    )
    sb = prepare(policy, support=SUPPORT)
    script = (
        "import os, sys\n"
        "for rel in sys.argv[1:]:\n"
        "    for op in (lambda p: open(p, 'a').write('w'), lambda p: os.makedirs(p, exist_ok=True),\n"
        "               lambda p: os.rename(p, p + '.moved'), lambda p: os.unlink(p), lambda p: os.rmdir(p)):\n"
        "        try: op(rel)\n"
        "        except Exception: pass\n"
    )
    subprocess.run([PY, "-c", script, *rels], cwd=prop_tree["proj"], env={"PATH": "/usr/bin"}, timeout=20,
                   capture_output=True, **sb.popen_kwargs())  # fmt: skip
    assert snapshot(prop_tree["outside"]) == outside_before
    assert snapshot(prop_tree["proj"] / ".git") == git_before
    assert snapshot(prop_tree["home"]) == home_before
    assert sorted(os.listdir(prop_tree["base"] / "w")) == ["outside", "proj"]


@pytest.mark.parametrize("strategy", ["mount_ro", "landlock_siblings"])
def test_a_writable_roots_git_and_mermaid_stay_read_only(tree: dict[str, Path], strategy: str) -> None:
    """`--add-dir` and `[sandbox] writable_roots` are writable like the project, and like the
    project's, their `.git/` and `.mermaid/` are not (a hook written there runs outside any sandbox)."""
    extra = tree["tmp"] / "extra"
    (extra / ".git" / "hooks").mkdir(parents=True)
    (extra / ".git" / "config").write_text("[core]\n")
    (extra / ".mermaid").mkdir()
    (extra / "sub").mkdir()
    env = {"MERMAID_SANDBOX_FORCE_UNAVAILABLE": "mount_namespace"} if strategy == "landlock_siblings" else {}
    policy = for_mode(
        "auto", project_root=tree["proj"], temp_dir=tree["priv"], home=tree["home"], writable_roots=(extra,)
    )
    assert policy is not None
    sb = prepare(policy, support=probe(env=env))
    assert sb.describe()["read_only_strategy"] == strategy
    before = snapshot(extra / ".git")
    for cmd in [f"echo x > {extra}/.git/config", f"touch {extra}/.git/hooks/pre-commit", f"rm -rf {extra}/.git",
                f"mv {extra}/.git {extra}/g", f"touch {extra}/.mermaid/config.toml", "echo x > .git/config"]:  # fmt: skip
        assert run(sb, cmd, tree).returncode != 0, cmd
    assert snapshot(extra / ".git") == before
    assert run(sb, f"echo ok > {extra}/sub/new.txt", tree).returncode == 0
    assert (extra / "sub" / "new.txt").read_text() == "ok\n"
