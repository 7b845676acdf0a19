"""Program rules for files: deleting, copying, permissions, archives, editors in place (`sed -i`),
writers with an output option (`sort -o`, `shuf -o`), disks and filesystems. `FILE_RULES` is
merged into `rules.PROGRAM_RULES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mermaid_cli.policy.shell.risk import _RAW_DEVICE, _SAFE_DEVICES, MUTATION, Call, _Verdict
from mermaid_cli.policy.shell.sed import sed_commands
from mermaid_cli.policy.shell.words import _operands, _short_flags, getopt, long_option
from mermaid_cli.policy.shell.wrappers import splices_into_code

Rule = Callable[[Call], None]


# -- files ----------------------------------------------------------------------------------


def _rm(x: Call) -> None:
    prog, args, v, c, cwd = x.prog, x.args, x.v, x.walker, x.cwd
    flags = _short_flags(args)
    recursive = prog == "rm" and ("r" in flags or "R" in flags or "--recursive" in args)
    if "--no-preserve-root" in args:
        v.deny("rm --no-preserve-root is hard-denied and cannot be approved")
        return
    for t in _operands(args):
        if recursive:
            why = c.root_like(t, cwd)
            if why:
                v.deny(f"recursive rm of {why} is hard-denied and cannot be approved")
                return
        c.write_target(t, v, cwd, prog, base="shell_mutation")
    v.raise_to("shell_mutation", f"{prog} deletes files")


def _chmod(x: Call) -> None:
    prog, args, v, c, cwd = x.prog, x.args, x.v, x.walker, x.cwd
    recursive = "R" in _short_flags(args) or "--recursive" in args
    ops = _operands(args)
    targets = ops[1:] if prog in ("chmod", "chown", "chgrp") else ops
    for t in targets:
        if recursive:
            why = c.root_like(t, cwd)
            if why:
                v.deny(f"recursive {prog} of {why} is hard-denied and cannot be approved")
                return
        c.write_target(t, v, cwd, prog, base="shell_mutation")
    v.raise_to("shell_mutation", f"{prog} changes permissions")


def _dd(x: Call) -> None:
    args, v, c, cwd = x.args, x.v, x.walker, x.cwd
    for a in args:
        if a.startswith("of="):
            target = a[3:]
            path = c.resolve(target, cwd)
            if path is not None and path.startswith("/dev/") and not _SAFE_DEVICES.match(path):
                v.deny(f"dd of={target} (writing to a device) is hard-denied and cannot be approved")
                return
            c.write_target(target, v, cwd, "dd")
    v.raise_to(MUTATION, "dd copies raw data")


def _copy_like(x: Call) -> None:
    prog, args, v, c, cwd = x.prog, x.args, x.v, x.walker, x.cwd
    ops = _operands(args)
    target = None
    for i, a in enumerate(args):
        if (a == "-t" or (long_option(a, "--target-directory") and "=" not in a)) and i + 1 < len(args):
            target = args[i + 1]
        elif long_option(a, "--target-directory") and "=" in a:
            target = a.split("=", 1)[1]
        elif a.startswith("-t") and not a.startswith("--") and len(a) > 2:
            target = a[2:]
    if target is None and prog == "install" and "d" in _short_flags(args):
        for t in ops:
            c.write_target(t, v, cwd, prog)
    if target is None and ops:
        target = ops[-1] if len(ops) > 1 or prog == "ln" else None
    if target is not None:
        c.write_target(target, v, cwd, prog)
    if prog == "mv":
        for t in ops[:-1]:
            c.write_target(t, v, cwd, "mv (source)")
    v.raise_to(MUTATION, f"{prog} changes files")


def _tar(x: Call) -> None:
    args, v, c, cwd = x.args, x.v, x.walker, x.cwd
    first = args[0] if args else ""
    modes = set(first if not first.startswith("-") else "") | _short_flags(args)
    long = set(args)
    if any(
        "exec=" in a
        or a.startswith(
            ("--to-command", "--use-compress-program", "--info-script", "--new-volume-script", "-I", "-F")
        )
        for a in args
    ):
        v.raise_to("process", "tar runs a program")
    if "t" in modes or "--list" in long:
        return
    if modes & {"x", "c", "r", "u", "A"} or long & {"--extract", "--get", "--create", "--append", "--update"}:
        for i, a in enumerate(args):
            if a in ("-C", "--directory") and i + 1 < len(args):
                c.write_target(args[i + 1], v, cwd, "tar -C")
        v.raise_to(MUTATION, "tar writes files")
        return
    v.raise_to(MUTATION, "tar writes files")


def _mkfs(x: Call) -> None:
    x.v.deny(f"{x.prog} (formatting a filesystem) is hard-denied and cannot be approved")


def _disk(x: Call) -> None:
    if {"l", "s"} & _short_flags(x.args) or "--list" in x.args or "print" in x.args:
        return
    if any(_RAW_DEVICE.match(a) for a in x.args):
        x.v.deny(f"{x.prog} on a disk device is hard-denied and cannot be approved")
        return
    x.v.raise_to("system_mutation", f"{x.prog} changes disk partitions")


#: find options that select no file: with only these before an action, it acts on the start paths
_FIND_GLOBAL = frozenset(
    "-depth -xdev -mount -noleaf -ignore_readdir_race -L -P -H -mindepth -maxdepth".split()
)


def _whole_starts(predicates: list[str], starts: list[str]) -> list[str]:
    """The start paths an action acts on whole (itself and everything below): all of them when
    nothing but `_FIND_GLOBAL` options (and their numbers) comes before the action, else none."""
    if any(b not in _FIND_GLOBAL and not b.isdigit() for b in predicates if b not in ("-delete",)):
        return []
    return [s if s not in (".", "./") else "." for s in (starts or ["."])]


def _find(x: Call) -> None:
    args, v, c, cwd = x.args, x.v, x.walker, x.cwd
    starts = []
    for a in args:
        if a.startswith("-") or a in ("(", ")", "!"):
            break
        starts.append(a)
    for i, a in enumerate(args):
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            inner = []
            for b in args[i + 1 :]:
                if b in (";", "+"):
                    break
                inner.append(b)
            v.raise_to("process", f"find {a} runs a command per file")
            spliced = splices_into_code(inner, "{}")
            if spliced:
                v.raise_to(MUTATION, spliced)
            # with no test before it, the command gets the start paths themselves too:
            # `find / -exec rm -rf {} +` runs `rm -rf / ...`
            roots = _whole_starts(args[len(starts) : i], starts) if any("{}" in b for b in inner) else []
            for argv in [inner, *([b.replace("{}", r) for b in inner] for r in roots)] if inner else []:
                sub = _Verdict()
                c.judge_argv(argv, sub, cwd)
                if sub.hard:
                    v.deny(sub.hard)
                    return
                if argv is inner:
                    v.raise_to(sub.risk, sub.reason)
        elif a == "-delete":
            for s in _whole_starts(args[len(starts) :], starts):
                why = c.root_like(s, cwd)
                if why:
                    v.deny(f"find -delete under {why} is hard-denied and cannot be approved")
                    return
            v.raise_to("shell_mutation", "find -delete deletes files")
        elif a in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
            c.write_target(args[i + 1], v, cwd, f"find {a}")


def _fd(x: Call) -> None:
    if any(a in ("-x", "--exec", "-X", "--exec-batch") for a in x.args):
        x.v.raise_to("process", "fd --exec runs a command per file")


_SED_LONG_ARG = ("--expression", "--file", "--line-length")


def _sed(x: Call) -> None:
    opts, ops = getopt(x.args, short_arg="efl", short_optional="i", long_arg=_SED_LONG_ARG)
    scripts = [val or "" for name, val in opts if name in ("e", "--expression")]
    if any(name in ("f", "--file") for name, _ in opts):
        x.v.raise_to("process", "sed -f runs a script file (it may write files or run commands)")
    if not scripts and not any(name in ("f", "--file") for name, _ in opts) and ops:
        scripts, ops = [ops[0]], ops[1:]
    for script in scripts:
        for command, arg in sed_commands(script):
            if command in "wW":
                x.write(arg or "", f"sed {command}")
            elif command == "e":
                x.v.raise_to("process", "sed e runs a command")
            else:
                x.v.raise_to(MUTATION, "sed script not understood (it may write files)")
    if any(name == "i" or long_option(name, "--in-place") for name, _ in opts):
        for f in ops:
            x.write(f, "sed -i")
        x.v.raise_to(MUTATION, "sed -i edits files in place")


def _awk(x: Call) -> None:
    args, v = x.args, x.v
    if any(a == "-f" or a.startswith("--file") for a in args):
        v.raise_to("process", "awk -f runs a script file")
        return
    if (
        any(
            a in ("-i", "--include") and i + 1 < len(args) and "inplace" in args[i + 1]
            for i, a in enumerate(args)
        )
        or "-iinplace" in args
    ):
        v.raise_to(MUTATION, "awk -i inplace edits files")
        return
    ops, i = [], 0
    while i < len(args):
        a = args[i]
        if a in ("-F", "-v", "--field-separator", "--assign"):
            i += 2
            continue
        if not a.startswith("-"):
            ops.append(a)
        i += 1
    script = ops[0] if ops else ""
    if "system" in script or "|" in script:
        v.raise_to("process", "awk script runs commands")
    elif ">" in script:
        v.raise_to(MUTATION, "awk script may write files")


def _output_option(x: Call, *, short_arg: str, long_arg: tuple[str, ...]) -> None:
    """`-o FILE`, `-oFILE`, `--output FILE`, `--output=FILE` and any abbreviation (`--outp=`)."""
    opts, _ = getopt(x.args, short_arg=short_arg, long_arg=long_arg)
    for name, val in opts:
        if name in ("o", "--output") and val is not None:
            x.write(val, f"{x.prog} -o")


def _sort(x: Call) -> None:
    if any(long_option(a, "--compress-program") for a in x.args):
        x.v.raise_to("process", "sort --compress-program runs a program")
    long_arg = ("--output", "--key", "--field-separator", "--buffer-size", "--temporary-directory",
                "--compress-program", "--files0-from", "--random-source", "--batch-size", "--parallel")  # fmt: skip
    _output_option(x, short_arg="oktST", long_arg=long_arg)


def _shuf(x: Call) -> None:
    long_arg = ("--output", "--input-range", "--head-count", "--random-source")
    _output_option(x, short_arg="oinh", long_arg=long_arg)


def _tree(x: Call) -> None:
    for i, a in enumerate(x.args):
        if a == "-o" and i + 1 < len(x.args):
            x.write(x.args[i + 1], "tree -o")


def _yq(x: Call) -> None:
    if any(a in ("-i", "--inplace") for a in x.args):
        for f in _operands(x.args)[1:]:
            x.write(f, "yq -i")
        x.v.raise_to(MUTATION, "yq -i edits files in place")


def _rg(x: Call) -> None:
    if any(a == "--pre" or a.startswith("--pre=") for a in x.args):
        x.v.raise_to("process", "rg --pre runs a command per file")


def _in_out(x: Call) -> None:
    """`uniq IN OUT`, `xxd IN OUT`: a second operand is written."""
    ops = _operands(x.args)
    if len(ops) >= 2:
        x.write(ops[1], f"{x.prog} IN OUT")


def _pager(x: Call) -> None:
    if any(a in ("-o", "-O") or a.startswith(("-o", "-O", "--log-file")) for a in x.args):
        x.v.raise_to(MUTATION, f"{x.prog} -o writes a log file")


def _tee(x: Call) -> None:
    for f in _operands(x.args):
        x.write(f, "tee")


def _touch_like(x: Call) -> None:
    ops = [a for a in _operands(x.args) if not (x.prog == "truncate" and re.match(r"^[-+<>/%]?\d", a))]
    for f in ops:
        x.write(f, x.prog, base=MUTATION)
    x.v.raise_to(MUTATION, f"{x.prog} changes files")


def _compressor(x: Call) -> None:
    args = x.args
    if not (
        {"c", "l", "t"} & _short_flags(args) or "--stdout" in args or "--list" in args or "--test" in args
    ):
        x.v.raise_to(MUTATION, f"{x.prog} replaces files")


def _unzip(x: Call) -> None:
    if {"l", "t", "p", "v", "Z"} & _short_flags(x.args):
        return
    for i, a in enumerate(x.args):
        if a == "-d" and i + 1 < len(x.args):
            x.write(x.args[i + 1], "unzip -d")
    x.v.raise_to(MUTATION, "unzip extracts files")


def _file(x: Call) -> None:
    if "-C" in x.args or "--compile" in x.args:
        x.v.raise_to(MUTATION, "file -C writes a magic file")


def _man(x: Call) -> None:
    if any(
        a in ("-P", "--pager", "-H", "--html") or a.startswith(("--pager=", "--html=", "-P", "-H"))
        for a in x.args
    ):
        x.v.raise_to("process", "man -P/-H runs a program")


def _hash(x: Call) -> None:
    opts, _ = getopt(x.args, short_arg="p")
    if any(name == "p" for name, _ in opts):
        x.v.raise_to("process", "hash -p changes which program a name runs")


def _file_mutation(x: Call) -> None:
    for f in _operands(x.args)[-1:]:
        x.write(f, x.prog)
    x.v.raise_to(MUTATION, f"{x.prog} changes files")


def _deletes_or_chmods(x: Call) -> None:
    x.v.raise_to("shell_mutation", f"{x.prog} changes files")


FILE_RULES: dict[str, Rule] = {
    **dict.fromkeys(("rm", "rmdir", "unlink", "shred"), _rm),
    **dict.fromkeys(("chmod", "chown", "chgrp", "chattr", "setfacl"), _chmod),
    **dict.fromkeys(("mke2fs", "mkswap", "wipefs", "mkdosfs", "mkntfs"), _mkfs),
    **dict.fromkeys(
        ("fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk", "blkdiscard", "badblocks"), _disk
    ),
    "dd": _dd,
    "find": _find,
    **dict.fromkeys(("fd", "fdfind"), _fd),
    **dict.fromkeys(("sed", "gsed"), _sed),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _awk),
    "sort": _sort,
    "shuf": _shuf,
    "tree": _tree,
    "yq": _yq,
    "rg": _rg,
    **dict.fromkeys(("uniq", "xxd"), _in_out),
    **dict.fromkeys(("less", "more"), _pager),
    "tee": _tee,
    **dict.fromkeys(("cp", "mv", "ln", "install"), _copy_like),
    **dict.fromkeys(("tar", "bsdtar"), _tar),
    **dict.fromkeys(("touch", "mkdir", "truncate"), _touch_like),
    **dict.fromkeys(("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd"), _compressor),
    "unzip": _unzip,
    "file": _file,
    "man": _man,
    "hash": _hash,
}
