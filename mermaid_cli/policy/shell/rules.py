"""The per-program rules of the shell classifier, as data: `PROGRAM_RULES` maps a program's name
to the rule that judges its arguments, grouped by concern (files, network, system, and from
`dev_rules` git, packages and interpreters); `PATTERN_RULES` covers families named by a pattern
(`mkfs.*`, `python3.12`, `pip3`). A program no table names is `shell_mutation` (unknown), or
`process` when it is a local path (`./build.sh`).

A rule gets a `Call` and raises its verdict (`Call.v`); it asks the walker (`Call.walker`) to judge
write targets and nested commands. Rules import nothing from the classifier.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mermaid_cli.policy.shell.dev_rules import DEV_RULES, PATTERN_RULES, RUNS_PROGRAMS
from mermaid_cli.policy.shell.risk import _RAW_DEVICE, _SAFE_DEVICES, MUTATION, Call, Walker, _Verdict
from mermaid_cli.policy.shell.words import (
    _operands,
    _short_flags,
    getopt,
    long_option,
    splices_into_code,
)

Rule = Callable[[Call], None]

READ_ONLY = frozenset(
    """
    ls ll la dir vdir cat head tail wc grep egrep fgrep rg ag ack locate which whereis type whoami
    id groups uname pwd echo printf stat file du df jq diff cmp comm cut tr nl fold fmt column
    paste join expand unexpand rev tac less more most md5sum sha1sum sha224sum sha256sum sha384sum
    sha512sum shasum cksum b2sum sum base64 base32 basenc xxd od hexdump strings realpath readlink
    basename dirname cal printenv true false test [ [[ (( : cd pushd popd dirs ps pgrep pidof
    uptime free lscpu lsblk lsusb lspci nproc arch sleep seq yes expr bc unalias
    help man info whatis apropos export set unset shopt local declare readonly typeset read wait
    jobs hash umask exit return break continue shift let getopts zcat bzcat xzcat zgrep zless
    lz4cat zstdcat bat batcat exa eza lsd w who last lastlog tty locale getconf lsb_release env
    numfmt shuf factor tsort look logname users uname
    ulimit times disown bg fg complete compgen type
    tput clear reset nm objdump readelf size pstree top htop vmstat iostat mpstat lsof
    ss netstat free sensors
    """.split()
)

NETWORK = frozenset(
    """
    curl wget ssh scp sftp ftp lftp telnet nc ncat netcat socat ping ping6 traceroute tracepath
    mtr dig nslookup host whois http https httpie xh aria2c axel gh hub glab aws gcloud gsutil az
    kubectl helm oc doctl heroku flyctl vercel netlify firebase ssh-copy-id ssh-keyscan nmap
    s3cmd rclone ngrok tailscale
    """.split()
)

SYSTEM_PROGRAMS = frozenset(
    """
    systemctl service useradd userdel usermod groupadd groupdel passwd chpasswd mount umount
    sysctl crontab shutdown reboot halt poweroff init telinit iptables ip6tables nft ufw firewall-cmd
    modprobe insmod rmmod chsh update-alternatives ldconfig visudo swapon swapoff hostnamectl-set
    timedatectl-set update-grub grub-install launchctl defaults sc reg dpkg-reconfigure
    update-ca-certificates locale-gen setcap chroot
    """.split()
)

OS_PACKAGE_MANAGERS = frozenset(
    "apt apt-get aptitude dnf yum microdnf zypper apk snap flatpak brew port choco scoop winget "
    "emerge pkg pkgin xbps-install conda mamba micromamba nix-env opkg".split()
)
_PKG_READ_SUBCOMMANDS = frozenset(
    "list search show info policy madison depends rdepends help --help -h --version -v -V "
    "check-update repolist provides whatprovides outdated doctor config deps uses leaves "
    "home desc cat env".split()
)

FILE_MUTATION = frozenset(
    "cp mv ln install rsync tee truncate patch unzip gunzip gzip bzip2 bunzip2 xz unxz zstd "
    "split csplit mktemp mkfifo rename".split()
)
# mutations that are not checkpointed or lose data: the reviewer sees them in `auto`
# mutations that are not checkpointed or lose data: the reviewer sees them in `auto`
SHELL_MUTATION = frozenset("rm rmdir unlink shred chmod chown chgrp chattr setfacl".split())


def _nothing(x: Call) -> None:
    """A read-only program: nothing to raise."""


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
        if a in ("-t", "--target-directory") and i + 1 < len(args):
            target = args[i + 1]
        elif a.startswith("--target-directory="):
            target = a.split("=", 1)[1]
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
            if inner:
                sub = _Verdict()
                c.judge_argv(inner, sub, cwd)
                if sub.hard:
                    v.deny(sub.hard)
                    return
                v.raise_to(sub.risk, sub.reason)
        elif a == "-delete":
            filters = [
                b
                for b in args[len(starts) :]
                if b
                not in (
                    "-delete",
                    "-depth",
                    "-xdev",
                    "-mount",
                    "-noleaf",
                    "-ignore_readdir_race",
                    "-L",
                    "-P",
                    "-H",
                )
                and not b.isdigit()
                and b not in ("-mindepth", "-maxdepth")
            ]
            for s in (starts or ["."]) if not filters else []:
                why = c.root_like(s if s not in (".", "./") else ".", cwd)
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


# sed commands without arguments, or with a number (q, Q, l, L) or a label/version (v) we skip
_SED_SIMPLE = frozenset("=dDgGhHnNpPxzFqQlLv")


def sed_commands(script: str) -> list[tuple[str, str | None]]:
    """The commands of a sed script that write (`w`/`W`, `s///w FILE`) or run (`e`, `s///e`),
    with the file name, plus `("?", None)` for text this reading does not understand."""
    found: list[tuple[str, str | None]] = []
    i, n = 0, len(script)
    while i < n:
        i = _sed_address(script, i)
        if i >= n:
            break
        ch = script[i]
        i += 1
        if ch in "{};\n \t!":
            continue
        if ch in "#aic:btT":
            # a comment, text (`a hello`) or a label: data up to the end of the line (or `;` for labels)
            i = _sed_line_end(script, i, semicolon=ch in "btT")
        elif ch in "rRwWe":
            end = _sed_line_end(script, i, semicolon=False)
            if ch in "wWe":
                found.append((ch, script[i:end].strip() or None))
            i = end
        elif ch in "sy":
            i = _sed_subst(script, i, ch, found)
        elif ch in _SED_SIMPLE:
            while i < n and (script[i].isdigit() or (ch == "v" and script[i] not in ";\n}")):
                i += 1
        else:
            found.append(("?", None))
            break
    return found


def _sed_address(s: str, i: int) -> int:
    """Skip spaces and the address part (`1`, `$`, `1~2`, `/re/I`, `\\%re%`, `a,b`, `+3`, `!`)."""
    while i < len(s):
        ch = s[i]
        if ch.isspace() or ch.isdigit() or ch in "$,~+!":
            i += 1
        elif ch == "/" or (ch == "\\" and i + 1 < len(s)):
            delim = s[i] if ch == "/" else s[i + 1]
            i = _sed_delimited(s, i + (1 if ch == "/" else 2), delim)
            while i < len(s) and s[i] in "IM":
                i += 1
        else:
            return i
    return i


def _sed_delimited(s: str, i: int, delim: str) -> int:
    """The index after the unescaped `delim` that ends the part starting at `i`."""
    while i < len(s) and s[i] != delim:
        i += 2 if s[i] == "\\" else 1
    return i + 1


def _sed_subst(s: str, i: int, command: str, found: list[tuple[str, str | None]]) -> int:
    if i >= len(s):
        found.append(("?", None))
        return i
    delim = s[i]
    i = _sed_delimited(s, _sed_delimited(s, i + 1, delim), delim)
    if i > len(s):
        found.append(("?", None))
        return i
    if command == "y":
        return i
    while i < len(s) and s[i] not in ";}\n \t#":
        flag = s[i]
        i += 1
        if flag == "e":
            found.append(("e", None))
        elif flag == "w":
            end = _sed_line_end(s, i, semicolon=False)
            found.append(("w", s[i:end].strip() or None))
            return end
        elif not (flag.isdigit() or flag in "gpiImM"):
            found.append(("?", None))
    return i


def _sed_line_end(s: str, i: int, *, semicolon: bool) -> int:
    while i < len(s) and s[i] != "\n" and not (semicolon and s[i] in ";}"):
        i += 2 if s[i] == "\\" else 1
    return i


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

# -- network --------------------------------------------------------------------------------


def _downloader(x: Call) -> None:
    x.v.raise_to("network", f"{x.prog} reaches the network")
    _download_outputs(x.prog, x.args, x.v, x.walker, x.cwd)


def _download_outputs(prog: str, args: list[str], v: _Verdict, c: Walker, cwd: str | None) -> None:
    flags = {"curl": ("-o", "--output"), "wget": ("-O", "--output-document", "-P", "--directory-prefix")}[
        prog
    ]
    for i, a in enumerate(args):
        if a in flags and i + 1 < len(args) and args[i + 1] != "-":
            c.write_target(args[i + 1], v, cwd, prog)
        for f in flags:
            if f.startswith("--") and a.startswith(f + "="):
                c.write_target(a.split("=", 1)[1], v, cwd, prog)


def _remote_copy(x: Call) -> None:
    ops = _operands(x.args)
    if x.prog == "scp" or any(re.match(r"^[^/]*:|^rsync://", a) for a in ops):
        x.v.raise_to("network", f"{x.prog} copies over the network")
    if ops:
        x.write(ops[-1], x.prog)


def _netcat(x: Call) -> None:
    if "l" in _short_flags(x.args) or "--listen" in x.args:
        x.v.deny(f"{x.prog} -l (a listening socket) is hard-denied and cannot be approved")
        return
    _network(x)


def _socat(x: Call) -> None:
    if any("LISTEN" in a.upper() for a in x.args):
        x.v.deny("socat LISTEN (a listening socket) is hard-denied and cannot be approved")
        return
    _network(x)


def _network(x: Call) -> None:
    x.v.raise_to("network", f"{x.prog} reaches the network")


NETWORK_RULES: dict[str, Rule] = {
    **dict.fromkeys(NETWORK, _network),  # first, so the specific rules below replace it
    **dict.fromkeys(("curl", "wget"), _downloader),
    **dict.fromkeys(("rsync", "scp"), _remote_copy),
    **dict.fromkeys(("nc", "ncat", "netcat"), _netcat),
    "socat": _socat,
}

# -- the machine: OS packages, services, clock, name ----------------------------------------


def _os_package_manager(x: Call) -> None:
    args = x.args
    sub = next((a for a in args if not a.startswith("-")), None)
    if (
        (sub is None and not args)
        or sub in _PKG_READ_SUBCOMMANDS
        or (sub is None and args[0] in _PKG_READ_SUBCOMMANDS)
    ):
        return
    x.v.raise_to("system_mutation", f"{x.prog} {sub or ''} changes the system's packages".replace("  ", " "))


_DPKG_QUERIES = frozenset("-l -L -s -S -q -qa -qi -ql -qf --list --status --search --query".split())


def _dpkg_rpm(x: Call) -> None:
    if any(a in _DPKG_QUERIES or a.startswith("-q") for a in x.args):
        return
    x.v.raise_to("system_mutation", f"{x.prog} changes the system's packages")


def _pacman(x: Call) -> None:
    ops = [a for a in x.args if a.startswith("-") and not a.startswith("--")]

    def query(o: str) -> bool:
        return o.startswith("-Q") or (
            o.startswith("-S") and ("s" in o[2:] or "i" in o[2:]) and "y" not in o and "u" not in o
        )

    if ops and all(query(o) for o in ops):
        return
    x.v.raise_to("system_mutation", "pacman changes the system's packages")


_SERVICE_QUERIES = frozenset("status is-active is-enabled list-units show cat --version".split())


def _system(x: Call) -> None:
    prog, args = x.prog, x.args
    if prog in ("systemctl", "service") and args and args[0] in _SERVICE_QUERIES:
        return
    if prog == "crontab" and args == ["-l"]:
        return
    if prog in ("iptables", "ip6tables", "nft") and any(a in ("-L", "-S", "--list", "list") for a in args):
        return
    x.v.raise_to("system_mutation", f"{prog} changes the machine")


def _hostname(x: Call) -> None:
    if _operands(x.args):
        x.v.raise_to("system_mutation", "hostname NAME changes the machine's name")


def _date(x: Call) -> None:
    if any(a in ("-s", "--set") or a.startswith("--set=") for a in x.args):
        x.v.raise_to("system_mutation", "date -s changes the clock")


SYSTEM_RULES: dict[str, Rule] = {
    **dict.fromkeys(OS_PACKAGE_MANAGERS, _os_package_manager),
    **dict.fromkeys(("apt-cache", "apt-file", "dpkg-query", "rpm-query"), _nothing),
    **dict.fromkeys(("dpkg", "rpm"), _dpkg_rpm),
    "pacman": _pacman,
    **dict.fromkeys(SYSTEM_PROGRAMS, _system),
    "hostname": _hostname,
    "date": _date,
}

# -- the table ------------------------------------------------------------------------------


def _first_wins(*tables: dict[str, Rule]) -> dict[str, Rule]:
    merged: dict[str, Rule] = {}
    for table in tables:
        for name, rule in table.items():
            merged.setdefault(name, rule)
    return merged


#: program → rule; where two tables name a program, the earlier one decides (network before
#: system before files, the specific rules before the plain read-only / mutation lists)
PROGRAM_RULES: dict[str, Rule] = _first_wins(
    NETWORK_RULES,
    DEV_RULES,
    SYSTEM_RULES,
    FILE_RULES,
    dict.fromkeys(READ_ONLY, _nothing),
    dict.fromkeys(FILE_MUTATION, _file_mutation),
    dict.fromkeys(SHELL_MUTATION, _deletes_or_chmods),
    RUNS_PROGRAMS,
)

#: program families named by a pattern (checked when no table names the program)
ALL_PATTERN_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = ((re.compile(r"^mkfs"), _mkfs), *PATTERN_RULES)


def classify_program(x: Call) -> None:
    """Raise `x.v` for running `x.prog` with `x.args`."""
    rule = PROGRAM_RULES.get(x.prog) or next((r for p, r in ALL_PATTERN_RULES if p.match(x.prog)), None)
    if rule is not None:
        rule(x)
    elif "/" in x.argv0:
        x.v.raise_to("process", f"{x.argv0} runs a local program")
    else:
        x.v.raise_to("shell_mutation", f"unknown program {x.prog}")


__all__ = ["PROGRAM_RULES", "Rule", "classify_program", "sed_commands"]
