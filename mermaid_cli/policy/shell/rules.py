"""The per-program rules of the shell classifier, as data: `PROGRAM_RULES` maps a program's name
to the rule that judges its arguments, grouped by concern: network and the machine here, files in
`file_rules`, git in `git_rules`, packages and interpreters in `dev_rules`; `ALL_PATTERN_RULES` covers families
named by a pattern
(`mkfs.*`, `python3.12`, `pip3`). A program no table names is `shell_mutation` (unknown), or
`process` when it is a local path (`./build.sh`).

A rule gets a `Call` and raises its verdict (`Call.v`); it asks the walker (`Call.walker`) to judge
write targets and nested commands. Rules import nothing from the classifier.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mermaid_cli.policy.shell.dev_rules import DEV_RULES, PATTERN_RULES, RUNS_PROGRAMS
from mermaid_cli.policy.shell.file_rules import FILE_RULES, _deletes_or_chmods, _file_mutation, _mkfs
from mermaid_cli.policy.shell.git_rules import GIT_RULES
from mermaid_cli.policy.shell.risk import Call, Walker, _Verdict
from mermaid_cli.policy.shell.words import _operands, _short_flags, long_option

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


# -- network --------------------------------------------------------------------------------


def _downloader(x: Call) -> None:
    x.v.raise_to("network", f"{x.prog} reaches the network")
    _download_outputs(x.prog, x.args, x.v, x.walker, x.cwd)


def _download_outputs(prog: str, args: list[str], v: _Verdict, c: Walker, cwd: str | None) -> None:
    flags = {
        "curl": ("-o", "--output"),
        "wget": (
            "-O",
            "--output-document",
            "-o",
            "--output-file",
            "-a",
            "--append-output",
            "-P",
            "--directory-prefix",
        ),
    }[prog]
    # wget (getopt_long) takes abbreviations (`--output-doc=f`); curl does not
    long_flags = [f for f in flags if f.startswith("--")]
    for i, a in enumerate(args):
        if a in flags and i + 1 < len(args) and args[i + 1] != "-":
            c.write_target(args[i + 1], v, cwd, prog)
        elif prog == "wget" and "=" not in a and any(long_option(a, f, min_len=5) for f in long_flags):
            if i + 1 < len(args) and args[i + 1] != "-":
                c.write_target(args[i + 1], v, cwd, prog)
        for f in long_flags:
            if a.startswith(f + "=") or (prog == "wget" and "=" in a and long_option(a, f, min_len=5)):
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
    if any(a == "-s" or long_option(a, "--set") for a in x.args):
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
    GIT_RULES,
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


__all__ = ["PROGRAM_RULES", "Rule", "classify_program"]
