"""Commands that write files or run code while looking like reads (issue 14's measured holes and
their near variants): the classifier must never call them `read_only`, and `read_only` mode must
deny them. The real-process test runs each attack in a scratch directory to prove it does write,
so the table holds real writers, not guesses. The program table's shape is checked too."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mermaid_cli.config.sections.safety import SafetySettings
from mermaid_cli.policy.actions import ActionRequest
from mermaid_cli.policy.engine import evaluate
from mermaid_cli.policy.shell import dev_rules, rules
from mermaid_cli.policy.shell.classifier import classify_command

PKG = Path(rules.__file__).parent

#: (command, what it writes or runs); each must be classified above read_only
WRITERS: list[tuple[str, str]] = [
    # sed: e / w / W commands, s///e and s///w flags, in-place spellings
    ("sed '1e touch PWNED' f", "PWNED"),
    ("sed 'e touch PWNED' f", "PWNED"),
    ("sed -n '1{e touch PWNED\n}' f", "PWNED"),
    ("sed 's/a/b/w PWNED' f", "PWNED"),
    ("sed 's/a/b/gw PWNED' f", "PWNED"),
    ("sed -n 's/a/touch PWNED/ep' f", "PWNED"),
    ("sed -n '/a/w PWNED' f", "PWNED"),
    ("sed -n '1W PWNED' f", "PWNED"),
    ("sed -e p -e 'w PWNED' f", "PWNED"),
    ("sed '-es/a/b/w PWNED' f", "PWNED"),
    ("sed --expression='1e touch PWNED' f", "PWNED"),
    ("sed --exp '1e touch PWNED' f", "PWNED"),
    ("sed --in s/a/b/ f", "f"),
    ("sed --in-pl s/a/b/ f", "f"),
    ("sed --in-place=.bak s/a/b/ f", "f.bak"),
    ("sed -i.bak s/a/b/ f", "f.bak"),
    ("sed -ni s/a/b/p f", "f"),
    ("sed -Ei s/a/b/ f", "f"),
    ("sed -s -i s/a/b/ f", "f"),
    ("sed s/a/b/ -i f", "f"),
    ("sed -f script.sed f", "PWNED"),
    # sort / shuf: -o, -oFILE, clusters, --output and every abbreviation
    ("sort -o PWNED f", "PWNED"),
    ("sort -oPWNED f", "PWNED"),
    ("sort -ruoPWNED f", "PWNED"),
    ("sort --output=PWNED f", "PWNED"),
    ("sort --outp=PWNED f", "PWNED"),
    ("sort --o=PWNED f", "PWNED"),
    ("sort --ou PWNED f", "PWNED"),
    ("sort f --output PWNED", "PWNED"),
    ("shuf -o PWNED f", "PWNED"),
    ("shuf -oPWNED f", "PWNED"),
    ("shuf --outp=PWNED f", "PWNED"),
    ("shuf -e a b --output=PWNED", "PWNED"),
    # python -m json.tool IN OUT; a script with a later `-m json.tool` runs the script
    ("python3 -m json.tool in.json PWNED", "PWNED"),
    ("python3 -m json.tool --indent 2 in.json PWNED", "PWNED"),
    ("python3 evil.py -m json.tool", "PWNED"),
    ('python3 -c \'open("PWNED", "w")\' -m json.tool', "PWNED"),
    # the next `ls` runs ./evil.sh
    ("hash -p ./evil.sh ls; ls", "PWNED"),
    ("hash -p./evil.sh ls; ls", "PWNED"),
    # file names spliced into a script
    ("find . -name '*.md' | xargs -I{} sh -c 'wc -l {}'", "PWNED"),
    ("find . -name '*.md' | xargs -I {} bash -c 'wc -l {}'", "PWNED"),
    ("find . -name '*.md' | xargs -IX sh -c 'wc -l X'", "PWNED"),
    ("find . -name '*.md' | xargs -i sh -c 'wc -l {}'", "PWNED"),
    ("find . -name '*.md' | xargs --replace sh -c 'wc -l {}'", "PWNED"),
    ("find . -name '*.md' | xargs --replace=X sh -c 'wc -l X'", "PWNED"),
    ("find . -name '*.md' | xargs -0 -I{} env sh -c 'wc -l {}'", "PWNED"),
    ("find . -name '*.md' | xargs -I{} timeout 5 sh -c 'wc -l {}'", "PWNED"),
    ("find . -name '*.md' -print0 | xargs -0 -I{} sh -c 'wc -l {}'", "PWNED"),
    ("find . -name '*.md' -exec sh -c 'wc -l {}' \\;", "PWNED"),
    # bash evaluates array subscripts in names and arithmetic, quoted or not, running their $(…)
    ("let 'a[$(touch PWNED)]=1'", "PWNED"),
    ("printf -v 'a[$(touch PWNED)]' x", "PWNED"),
    ("read 'a[$(touch PWNED)]' <<< x", "PWNED"),
    ("declare 'a[$(touch PWNED)]=1'", "PWNED"),
    ("test -v 'a[`touch PWNED`]'", "PWNED"),
    ("[ -v 'a[$(touch PWNED)]' ]", "PWNED"),
    ("typeset -n r='a[$(touch PWNED)]'; r=1", "PWNED"),
    # /usr/bin/time writes its report
    ("/usr/bin/time -o PWNED true", "PWNED"),
    ("command time --output=PWNED true", "PWNED"),
    ("env time --outp=PWNED true", "PWNED"),
    # wrappers do not hide a writer
    ("env sed -i s/a/b/ f", "f"),
    ("env LC_ALL=C sort --outp=PWNED f", "PWNED"),
    ("command sort -o PWNED f", "PWNED"),
    ("nice -n 5 shuf -o PWNED f", "PWNED"),
    ("nice sed '1e touch PWNED' f", "PWNED"),
    ("timeout 5 sed '1e touch PWNED' f", "PWNED"),
    ("timeout -s KILL 5 sort --outp=PWNED f", "PWNED"),
    ("stdbuf -oL sed 's/a/b/w PWNED' f", "PWNED"),
    ("nohup sort -o PWNED f", "PWNED"),
]

#: not runnable here in a scratch dir (or not installed everywhere): classification only
WRITERS_NOT_RUN: list[str] = [
    "go env -w GOFLAGS=-toolexec=./evil.sh",
    "go env -u GOFLAGS",
    "git fsck --lost-found",
    "git diff --outp=PWNED",
    "git log --output=PWNED",
    "ls | xargs -I{} sed -n '/{}/p' f",
    "ls | xargs -I{} sed {} f",
    "ls | xargs -I{} awk '/{}/' f",
    "ls | xargs -I{} env -S 'wc {}'",
    "ls | xargs -I{} python3 -c 'print(\"{}\")'",
]

#: look alike, but read: these must stay read_only (the fix must not make read_only useless)
READERS = [
    "sed -n '1,10p' f",
    "sed 's/a/b/g' f",
    "sed -n '/a/p' f",
    "sed -n '$=' f",
    "sed -e 's/a/b/' -e 's/c/d/' f",
    "sed -n 'w /dev/stdout' f",
    "sed '/^#/d;s/x/y/2' f",
    "sed 'y/abc/xyz/' f",
    "sed 'a hello world' f",
    "sed '1i\\\nheader' f",
    "sed ':a;N;$!ba;s/\\n/ /g' f",
    "sed -E 's/(a|b)+/c/' f",
    "sort -u f",
    "sort -k2,2 -t, f",
    "sort -rn f",
    "shuf -n 3 f",
    "shuf -e a b c",
    "python3 -m json.tool in.json",
    "find . -name '*.md' | xargs wc -l",
    "find . -name '*.md' | xargs -I{} wc -l {}",
    "find . -name '*.md' | xargs sh -c 'wc -l \"$@\"' _",
    "find . -name '*.md' | xargs -I{} sh -c 'wc -l \"$1\"' _ {}",
    "git ls-files | xargs -I% sed -n 1p %",
    "ls | xargs -I{} awk -F, '{print}' {}",
    "hash",
    "let x=1",
    "printf '%s' '$(x)'",
    "export X='$(date)'",
    "declare -a arr",
    "test -v HOME",
    "time ls",
    "hash -r",
    "go env GOPATH",
    "git fsck",
    "git log --oneline",
]

WRAPPERS = ["", "env ", "command ", "nice ", "nice -n 5 ", "timeout 5 ", "stdbuf -oL ", "env -i LC_ALL=C "]


@pytest.mark.parametrize(("command", "_effect"), WRITERS)
def test_writer_is_not_read_only(command: str, _effect: str) -> None:
    got = classify_command(command)
    assert got.risk != "read_only", command


@pytest.mark.parametrize("command", [c for c, _ in WRITERS] + WRITERS_NOT_RUN)
def test_read_only_mode_denies_writer(command: str) -> None:
    request = ActionRequest(tool="execute_command", category="shell", command=command, summary=command)
    out = evaluate(request, SafetySettings(mode="read_only"), interactive=False, allow_untrusted=False)
    assert out.verdict == "deny", (command, out.reason)


@pytest.mark.parametrize("command", WRITERS_NOT_RUN)
def test_other_writers_are_mutations(command: str) -> None:
    assert classify_command(command).risk in ("shell_mutation", "process"), command


@pytest.mark.parametrize("command", READERS)
def test_lookalike_reader_stays_read_only(command: str) -> None:
    got = classify_command(command)
    assert got.risk == "read_only", (command, got.reason)


def _scratch(tmp_path: Path) -> Path:
    (tmp_path / "f").write_text("a\nb\nc\n")
    (tmp_path / "in.json").write_text('{"a": 1}')
    (tmp_path / "script.sed").write_text("1e touch PWNED\n")
    (tmp_path / "evil.py").write_text("open('PWNED', 'w')\n")
    (tmp_path / "evil.sh").write_text("#!/bin/sh\ntouch PWNED\n")
    (tmp_path / "evil.sh").chmod(0o755)
    (tmp_path / "a$(touch PWNED).md").write_text("x\n")
    return tmp_path


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}


@pytest.mark.parametrize(("command", "effect"), WRITERS)
def test_writer_really_writes(tmp_path: Path, command: str, effect: str) -> None:
    """Run the attack for real (GNU tools): it changes or creates `effect`, so a `read_only`
    verdict for it would have let a read-only review write."""
    words = command.replace("|", " ").split()
    for tool in ("sed", "sort", "shuf", "xargs", "find", "python3", "timeout", "stdbuf", "nohup"):
        if tool in words and shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    if "time" in command and not Path("/usr/bin/time").exists():
        pytest.skip("/usr/bin/time is not installed")
    if "sed" in words:
        version = subprocess.run(["sed", "--version"], capture_output=True, text=True, check=False).stdout
        if "GNU" not in version:
            pytest.skip("the e/w/W commands and --in-place abbreviations are GNU sed")
    root = _scratch(tmp_path)
    before = _snapshot(root)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "LC_ALL": "C"}
    subprocess.run(["bash", "-c", command], cwd=root, env=env, capture_output=True, timeout=30, check=False)
    after = _snapshot(root)
    assert before.get(effect) != after.get(effect), f"{command} did not write {effect}"


@settings(max_examples=150, deadline=None)
@given(
    wrapper=st.sampled_from(WRAPPERS),
    program=st.sampled_from(["sort", "shuf"]),
    cut=st.integers(min_value=3, max_value=len("--output")),
    form=st.sampled_from(["{opt}=OUT", "{opt} OUT", "-oOUT", "-o OUT"]),
    before=st.booleans(),
)
def test_output_option_any_spelling(wrapper: str, program: str, cut: int, form: str, before: bool) -> None:
    option = form.format(opt="--output"[:cut])
    args = f"{option} f" if before else f"f {option}"
    command = f"{wrapper}{program} {args}"
    got = classify_command(command)
    assert got.risk != "read_only", command
    assert "OUT" in got.reason, command


@settings(max_examples=150, deadline=None)
@given(
    wrapper=st.sampled_from(WRAPPERS),
    cut=st.integers(min_value=3, max_value=len("--in-place")),
    suffix=st.sampled_from(["", "=.bak"]),
    flags=st.sampled_from(["", "-n ", "-E ", "-s "]),
)
def test_sed_in_place_any_spelling(wrapper: str, cut: int, suffix: str, flags: str) -> None:
    command = f"{wrapper}sed {flags}{'--in-place'[:cut]}{suffix} s/a/b/ f"
    assert classify_command(command).risk != "read_only", command


@settings(max_examples=200, deadline=None)
@given(
    address=st.sampled_from(["", "1", "$", "/x/", "1,3", "2~2", "\\%x%", "/a/,/b/", "1!"]),
    command=st.sampled_from(
        ["e", "e touch P", "w P", "W P", "s/a/b/w P", "s/a/b/e", "s|a|b|gw P", "s/a/b/2e"]
    ),
    prefix=st.sampled_from(["", "p;", "s/x/y/;", "{", "h;G;"]),
    spelling=st.sampled_from(["'{s}'", "-e '{s}'", "--expression='{s}'", "-n '{s}'", "--exp '{s}'"]),
)
def test_sed_running_or_writing_scripts(address: str, command: str, prefix: str, spelling: str) -> None:
    script = f"{prefix}{address}{command}" + ("\n}" if prefix == "{" else "")
    cmd = f"sed {spelling.format(s=script)} f"
    assert classify_command(cmd).risk in ("shell_mutation", "process"), cmd


def test_program_table_has_no_shadowed_pattern() -> None:
    """A pattern rule (`mkfs.*`, `pip3`, `python3.12`) only decides for names no table has, so no
    table key may match a pattern (it would silently take a python interpreter's rule away)."""
    for name in rules.PROGRAM_RULES:
        assert not any(p.match(name) for p, _ in rules.ALL_PATTERN_RULES), name
    assert rules.PROGRAM_RULES["composer"] is dev_rules._lang_pm  # not the build-tool catch-all
    assert rules.PROGRAM_RULES["nc"] is rules._netcat  # not the plain network list


def test_rules_do_not_import_the_classifier() -> None:
    """The dependency is one-way: the classifier walks, the rules only see the `Walker` protocol."""
    modules = [p for p in sorted(PKG.glob("*.py")) if p.stem != "classifier"]
    assert {"risk", "rules", "file_rules", "git_rules", "dev_rules"} <= {p.stem for p in modules}
    for path in modules:
        module = path.stem
        tree = ast.parse(path.read_text())
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module is not None
        }
        assert "mermaid_cli.policy.shell.classifier" not in imported, module


@pytest.mark.parametrize(
    "command",
    [
        "wget --output-doc=/opt/x http://example.test",
        "wget --output-doc /opt/x http://example.test",
        "wget -o /opt/log http://example.test",
        "cp --target=/opt a",
        "cp -t/opt a",
        "sort --outp=/opt/x f",
        "shuf -o/opt/x f",
        "sed -n 'w /opt/x' f",
        "sed 's/a/b/w /opt/x' f",
        "python3 -m json.tool in.json /opt/x",
        "/usr/bin/time -o /opt/x true",
    ],
)
def test_abbreviated_outputs_outside_the_project(command: str) -> None:
    """The write target behind an abbreviated or glued option is still judged as a path."""
    got = classify_command(command, project_root=Path("/work/proj"), home=Path("/home/dev"))
    assert got.risk == "external_access", (command, got.reason)


def test_date_set_abbreviated() -> None:
    assert classify_command("date --s=2020-01-01").risk == "system_mutation"
    assert classify_command("date +%s").risk == "read_only"
