"""Risk classes and the per-program rules of the shell classifier (see `policy.shell`)."""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from mermaid_cli.policy.shell.parse import _Cmd

if TYPE_CHECKING:
    from mermaid_cli.policy.shell.classifier import _Classifier

Risk = Literal[
    "read_only",
    "low_mutation",
    "file_mutation",
    "shell_mutation",
    "process",
    "network",
    "system_mutation",
    "external_access",
    "destructive",
]

RISK_ORDER: tuple[Risk, ...] = (
    "read_only",
    "low_mutation",
    "file_mutation",
    "shell_mutation",
    "process",
    "network",
    "system_mutation",
    "external_access",
    "destructive",
)
RANK: dict[str, int] = {r: i for i, r in enumerate(RISK_ORDER)}

#: The class of every shell command that changes files, whatever the tool: the shell is not
#: checkpointed like the edit tools, so `auto` sends it to the reviewer. (`low_mutation` and
#: `file_mutation` belong to the edit and memory tools.)
MUTATION: Risk = "shell_mutation"


def worst(*risks: str) -> Risk:
    return cast(Risk, max(risks, key=lambda r: RANK[r]))


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

DOWNLOADERS = frozenset("curl wget fetch http https httpie xh aria2c nc ncat netcat socat lftp".split())

SHELLS = frozenset("sh bash zsh dash ksh mksh fish csh tcsh ash busybox-sh".split())

INTERPRETERS = frozenset(
    """
    node nodejs deno ruby perl php lua luajit Rscript R julia jshell irb ghci runghc osascript pwsh
    powershell tclsh wish guile racket sbcl ts-node tsx groovy scala kotlin elixir erl escript
    """.split()
)

BUILD_TOOLS = frozenset(
    """
    make gmake cmake ctest ninja meson bazel bazelisk buck pytest py.test tox nox mvn mvnw gradle
    gradlew ant sbt swift swiftc rustc rustup gcc g++ cc c++ clang clang++ ld javac java tsc eslint
    prettier ruff black mypy pyright flake8 pylint isort jest vitest mocha karma rspec rake
    bundle bundler composer mix dotnet-test npx bunx pnpx corepack poetry pipenv hatch pdm uv uvx
    flit twine maturin nix-build nix-shell nix docker-compose podman-compose air watchexec
    cargo-nextest go-task task just pre-commit coverage nosetests phpunit rebar3 stack cabal zig
    deno-task yarnpkg lerna nx turbo webpack vite rollup esbuild parcel babel sass tailwindcss
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

SYSTEM_PROGRAMS = frozenset(
    """
    systemctl service useradd userdel usermod groupadd groupdel passwd chpasswd mount umount
    sysctl crontab shutdown reboot halt poweroff init telinit iptables ip6tables nft ufw firewall-cmd
    modprobe insmod rmmod chsh update-alternatives ldconfig visudo swapon swapoff hostnamectl-set
    timedatectl-set update-grub grub-install launchctl defaults sc reg dpkg-reconfigure
    update-ca-certificates locale-gen setcap chroot
    """.split()
)

FILE_MUTATION = frozenset(
    "cp mv ln install rsync tee truncate patch unzip gunzip gzip bzip2 bunzip2 xz unxz zstd "
    "split csplit mktemp mkfifo rename".split()
)
# mutations that are not checkpointed or lose data: the reviewer sees them in `auto`
SHELL_MUTATION = frozenset("rm rmdir unlink shred chmod chown chgrp chattr setfacl".split())

PROCESS = frozenset(
    "kill pkill killall xkill source . docker podman nerdctl parallel tmux screen expect "
    "xdg-open open".split()
)

WRAPPERS = frozenset(
    "sudo doas env timeout nice ionice nohup xargs command time exec stdbuf setsid builtin "
    "busybox unbuffer chronic caffeinate taskset chrt".split()
)
PRIVILEGED = frozenset({"sudo", "doas", "su", "pkexec", "run0"})

PROTECTED_BRANCH = re.compile(r"^(?:refs/heads/)?(?:main|master|production|prod|release/.*|release)$")

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_RESERVED = frozenset("{ } ! if then else elif fi do done while until time function in esac".split())
_SAFE_DEVICES = re.compile(
    r"^/dev/(?:null|zero|full|stdout|stderr|stdin|tty|random|urandom|fd/\d+|shm(?:/.*)?)$"
)
_RAW_DEVICE = re.compile(
    r"^/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|loop|md|dm-|mapper/|mem$|kmem$|port$|sr|fd\d|nbd)"
)
_PYTHON = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?(?:[mdu])?$")
_PIP = re.compile(r"^pip(?:\d+(?:\.\d+)*)?$")
_FORK_BOMB = re.compile(r"([A-Za-z_:.][\w:.]*)\(\)\{\1\|\1&?\}?;?\1?")

# assignments that change what later programs run (`LD_PRELOAD=x.so ls`, `PAGER='sh -c …' man ls`)
_DANGEROUS_ASSIGNMENT = re.compile(
    r"^(?:LD_\w+|DYLD_\w+|BASH_ENV|ENV|PROMPT_COMMAND|PATH|SHELLOPTS|BASHOPTS|PS4|\w*PAGER|\w*EDITOR|VISUAL"
    r"|BROWSER|LESSOPEN|LESSCLOSE|NODE_OPTIONS|RUBYOPT|PERL5OPT|JAVA_TOOL_OPTIONS"
    r"|GIT_(?:EXTERNAL_DIFF|SSH|SSH_COMMAND|ASKPASS|EXEC_PATH|CONFIG\w*|PROXY_COMMAND))\+?="
)
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly", "env"})

_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


@dataclass
class _Verdict:
    risk: Risk = "read_only"
    reason: str = ""
    hard: str | None = None

    def raise_to(self, risk: Risk, reason: str) -> None:
        if RANK[risk] > RANK[self.risk]:
            self.risk, self.reason = risk, reason

    def deny(self, rule: str) -> None:
        if self.hard is None:
            self.hard = rule
        self.risk, self.reason = "destructive", rule


def sensitive_write_rule(path: str, home: str | None = None) -> str | None:
    """The hard-deny rule for writing the absolute, normalised `path`, or None when it is fine."""
    path = _norm(path)
    home = _norm(home or _default_home())
    if path == "/etc" or path.startswith("/etc/"):
        return f"writing to {path} (/etc) is hard-denied and cannot be approved"
    if path == "/boot" or path.startswith("/boot/"):
        return f"writing to {path} (/boot) is hard-denied and cannot be approved"
    ssh = home + "/.ssh"
    if path == ssh or path.startswith(ssh + "/") or re.match(r"^(?:/root|/home/[^/]+)/\.ssh(?:/|$)", path):
        return f"writing to {path} (~/.ssh) is hard-denied and cannot be approved"
    if _RAW_DEVICE.match(path):
        return f"writing to the raw device {path} is hard-denied and cannot be approved"
    return None


def _default_home() -> str:
    return os.environ.get("HOME") or str(Path("~").expanduser())


def _norm(path: str) -> str:
    p = posixpath.normpath(path)
    if p.startswith("//"):
        p = "/" + p.lstrip("/")
    return p


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1] if "/" in word and not word.endswith("/") else word


def _argv_of(cmd: _Cmd) -> list[str]:
    words = [w.text for w in cmd.words]
    k = 0
    while k < len(words) and (words[k] in _RESERVED or _ASSIGNMENT.match(words[k])):
        k += 1
    return words[k:]


def _unwrap_all(argv: list[str]) -> list[str]:
    for _ in range(8):
        if not argv:
            return argv
        prog = _base(argv[0])
        if prog not in WRAPPERS:
            return argv
        inner, _ = _unwrap(prog, argv[1:])
        if not inner:
            return argv
        argv = inner
    return argv


def _reads_stdin(prog: str, args: list[str]) -> bool:
    """Would `prog ARGS` execute code from stdin (as in `curl … | sh`)?"""
    if prog in SHELLS:
        if _shell_dash_c(args) is not None:
            return False
        operands = [a for a in args if not a.startswith("-") and not a.startswith("+")]
        return "-s" in args or not operands or operands[0] == "-"
    # interpreters: no script operand, or `-`
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-c", "-e", "-m", "--eval", "-E", "-r"):
            return False
        if a == "-":
            return True
        if not a.startswith("-"):
            return False
        i += 1
    return True


def _shell_dash_c(args: list[str]) -> str | None:
    """The command string of `sh [opts] -c STRING …`, or None."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return None
        if a.startswith("-") and len(a) > 1 and not a.startswith("--") and "c" in a[1:]:
            return args[i + 1] if i + 1 < len(args) else ""
        if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if not a.startswith(("-", "+")):
            return None
        i += 1
    return None


def _skip_options(args: list[str], *, with_arg: set[str]) -> list[str]:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[i + 1 :]
        if not a.startswith("-") or a == "-":
            return args[i:]
        i += 2 if a in with_arg else 1
    return []


def _unwrap(prog: str, args: list[str]) -> tuple[list[str] | None, str | None]:
    """(the wrapped argv, or None when there is none; a string to re-parse, for `env -S`/`su -c`)."""
    if prog in ("sudo", "doas", "pkexec", "run0"):
        with_arg = {
            "-u",
            "-g",
            "-h",
            "-p",
            "-C",
            "-D",
            "-r",
            "-t",
            "-U",
            "-T",
            "--user",
            "--group",
            "--chdir",
            "--prompt",
        }
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                i += 1
                break
            if a in ("-s", "-i", "--shell", "--login") and i + 1 >= len(args):
                return None, None
            if not a.startswith("-"):
                break
            i += 2 if a in with_arg else 1
        rest = args[i:]
        return (rest or None), None
    if prog == "su":
        for j, a in enumerate(args):
            if a in ("-c", "--command") and j + 1 < len(args):
                return None, args[j + 1]
            if a.startswith("--command="):
                return None, a.split("=", 1)[1]
        return None, None
    if prog == "env":
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-S", "--split-string") and i + 1 < len(args):
                return None, " ".join(args[i + 1 :])
            if a.startswith("--split-string="):
                return None, " ".join([a.split("=", 1)[1], *args[i + 1 :]])
            if a in ("-u", "--unset", "-C", "--chdir"):
                i += 2
                continue
            if a == "--":
                i += 1
                continue
            if a.startswith("-") and a != "-":
                i += 1
                continue
            if _ASSIGNMENT.match(a):
                i += 1
                continue
            break
        return (args[i:] or None), None
    if prog == "timeout":
        rest = _skip_options(args, with_arg={"-s", "--signal", "-k", "--kill-after"})
        return (rest[1:] or None), None  # first operand is the duration
    if prog == "nice":
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-n", "--adjustment"):
                i += 2
            elif a.startswith("-") and (a[1:].lstrip("-").isdigit() or a.startswith("--adjustment=")):
                i += 1
            elif a == "--":
                i += 1
                break
            else:
                break
        return (args[i:] or None), None
    if prog == "ionice":
        return (
            _skip_options(args, with_arg={"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}) or None
        ), None
    if prog == "stdbuf":
        return (_skip_options(args, with_arg={"-i", "-o", "-e"}) or None), None
    if prog == "xargs":
        with_arg = {
            "-I",
            "-n",
            "-L",
            "-P",
            "-d",
            "-E",
            "-s",
            "-a",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
        }
        rest = _skip_options(args, with_arg=with_arg)
        return (rest or ["echo"]), None
    if prog == "command":
        if args and args[0] in ("-v", "-V"):
            return None, None
        rest = _skip_options(args, with_arg=set())
        return (rest or None), None
    if prog == "exec":
        return (_skip_options(args, with_arg={"-a"}) or None), None
    if prog == "time":
        return (_skip_options(args, with_arg={"-f", "--format", "-o", "--output"}) or None), None
    if prog == "setsid":
        return (_skip_options(args, with_arg=set()) or None), None
    if prog == "taskset":
        rest = _skip_options(args, with_arg=set())
        return (rest[1:] or None), None
    if prog == "chrt":
        rest = _skip_options(args, with_arg=set())
        return (rest[1:] or None), None
    # nohup, builtin, busybox, unbuffer, chronic, caffeinate
    return (_skip_options(args, with_arg={"-w"} if prog == "caffeinate" else set()) or None), None


GLOB_SUSPECTS = frozenset(
    "rm rmdir chmod chown chgrp dd mkfs shred mv cp tee git curl wget nc ncat netcat sh bash zsh dash "
    "ksh su sudo eval python python3 perl ruby node find xargs env".split()
)
_EXPANSION = re.compile(r"\$\([^()]*\)|`[^`]*`|\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]")
_BRACE = re.compile(r"\{([^{}\s]*,[^{}\s]*)\}")


def _strip_expansions(word: str) -> str:
    for _ in range(10):
        new = _EXPANSION.sub("", word)
        if new == word:
            break
        word = new
    return word


def _brace_expand(argv: list[str], limit: int = 64) -> list[str] | None:
    """Words after bash brace expansion, or None when no word has `{a,b}`."""
    if not any(_BRACE.search(w) for w in argv):
        return None
    out: list[str] = []
    for w in argv:
        todo: list[str] = [w]
        done: list[str] = []
        while todo and len(done) + len(todo) <= limit:
            cur = todo.pop(0)
            m = _BRACE.search(cur)
            if m is None:
                done.append(cur)
                continue
            todo.extend(cur[: m.start()] + alt + cur[m.end() :] for alt in m.group(1).split(","))
        done.extend(todo)
        out.extend(x for x in done if x != "")
    return out


def _lenient(text: str) -> str:
    return re.sub(r"[\"'`\\#]", " ", text)


def _short_flags(args: list[str]) -> set[str]:
    out: set[str] = set()
    for a in args:
        if a.startswith("-") and not a.startswith("--") and len(a) > 1:
            out.update(a[1:])
    return out


def _operands(args: list[str]) -> list[str]:
    out, after = [], False
    for a in args:
        if after or not a.startswith("-") or a == "-":
            out.append(a)
        elif a == "--":
            after = True
    return out


def _classify_program(
    prog: str, args: list[str], v: _Verdict, c: _Classifier, cwd: str | None, argv0: str
) -> None:
    if prog in ("rm", "rmdir", "unlink", "shred"):
        _rm(prog, args, v, c, cwd)
    elif prog in ("chmod", "chown", "chgrp", "chattr", "setfacl"):
        _chmod(prog, args, v, c, cwd)
    elif prog.startswith("mkfs") or prog in ("mke2fs", "mkswap", "wipefs", "mkdosfs", "mkntfs"):
        v.deny(f"{prog} (formatting a filesystem) is hard-denied and cannot be approved")
    elif prog == "dd":
        _dd(args, v, c, cwd)
    elif prog == "git":
        _git(args, v, c, cwd)
    elif prog in ("nc", "ncat", "netcat") and ("l" in _short_flags(args) or "--listen" in args):
        v.deny(f"{prog} -l (a listening socket) is hard-denied and cannot be approved")
    elif prog == "socat" and any("LISTEN" in a.upper() for a in args):
        v.deny("socat LISTEN (a listening socket) is hard-denied and cannot be approved")
    elif prog in ("curl", "wget"):
        v.raise_to("network", f"{prog} reaches the network")
        _download_outputs(prog, args, v, c, cwd)
    elif prog == "rsync" or prog == "scp":
        ops = _operands(args)
        if prog == "scp" or any(re.match(r"^[^/]*:|^rsync://", a) for a in ops):
            v.raise_to("network", f"{prog} copies over the network")
        if ops:
            c.write_target(ops[-1], v, cwd, prog)
    elif prog in NETWORK:
        v.raise_to("network", f"{prog} reaches the network")
    elif _PIP.match(prog):
        _pip(args, v)
    elif _PYTHON.match(prog):
        _python(prog, args, v)
    elif prog in ("npm", "pnpm", "yarn", "bun", "cnpm"):
        _js_pm(prog, args, v)
    elif prog in ("cargo", "go", "gem", "pipx", "dotnet", "uv", "poetry", "composer", "rustup", "deno"):
        _lang_pm(prog, args, v)
    elif prog in OS_PACKAGE_MANAGERS:
        sub = next((a for a in args if not a.startswith("-")), None)
        if (
            (sub is None and not args)
            or (sub in _PKG_READ_SUBCOMMANDS)
            or (sub is None and args[0] in _PKG_READ_SUBCOMMANDS)
        ):
            return
        v.raise_to("system_mutation", f"{prog} {sub or ''} changes the system's packages".replace("  ", " "))
    elif prog in ("apt-cache", "apt-file", "dpkg-query", "rpm-query"):
        return
    elif prog in ("dpkg", "rpm"):
        if any(
            a
            in (
                "-l",
                "-L",
                "-s",
                "-S",
                "-q",
                "-qa",
                "-qi",
                "-ql",
                "-qf",
                "--list",
                "--status",
                "--search",
                "--query",
            )
            or a.startswith("-q")
            for a in args
        ):
            return
        v.raise_to("system_mutation", f"{prog} changes the system's packages")
    elif prog == "pacman":
        ops = [a for a in args if a.startswith("-") and not a.startswith("--")]
        if (
            all(
                o.startswith("-Q")
                or (o.startswith("-S") and ("s" in o[2:] or "i" in o[2:]) and "y" not in o and "u" not in o)
                for o in ops
            )
            and ops
        ):
            return
        v.raise_to("system_mutation", "pacman changes the system's packages")
    elif prog in SYSTEM_PROGRAMS:
        if (
            prog in ("systemctl", "service")
            and args
            and args[0] in ("status", "is-active", "is-enabled", "list-units", "show", "cat", "--version")
        ):
            return
        if prog == "crontab" and args == ["-l"]:
            return
        if prog in ("iptables", "ip6tables", "nft") and any(
            a in ("-L", "-S", "--list", "list") for a in args
        ):
            return
        v.raise_to("system_mutation", f"{prog} changes the machine")
    elif prog == "hostname":
        if _operands(args):
            v.raise_to("system_mutation", "hostname NAME changes the machine's name")
    elif prog == "date":
        if any(a in ("-s", "--set") or a.startswith("--set=") for a in args):
            v.raise_to("system_mutation", "date -s changes the clock")
    elif prog in ("find",):
        _find(args, v, c, cwd)
    elif prog in ("fd", "fdfind"):
        if any(a in ("-x", "--exec", "-X", "--exec-batch") for a in args):
            v.raise_to("process", "fd --exec runs a command per file")
    elif prog in ("sed", "gsed"):
        _sed(args, v, c, cwd)
    elif prog in ("awk", "gawk", "mawk", "nawk"):
        _awk(args, v)
    elif prog == "sort":
        if any(a.startswith("--compress-program") for a in args):
            v.raise_to("process", "sort --compress-program runs a program")
        for i, a in enumerate(args):
            if a == "-o" and i + 1 < len(args):
                c.write_target(args[i + 1], v, cwd, "sort -o")
            elif a.startswith("--output="):
                c.write_target(a.split("=", 1)[1], v, cwd, "sort -o")
            elif a.startswith("-o") and len(a) > 2:
                c.write_target(a[2:], v, cwd, "sort -o")
    elif prog == "tree":
        for i, a in enumerate(args):
            if a == "-o" and i + 1 < len(args):
                c.write_target(args[i + 1], v, cwd, "tree -o")
    elif prog in ("yq",):
        if any(a in ("-i", "--inplace") for a in args):
            for f in _operands(args)[1:]:
                c.write_target(f, v, cwd, "yq -i")
            v.raise_to(MUTATION, "yq -i edits files in place")
    elif prog == "rg":
        if any(a == "--pre" or a.startswith("--pre=") for a in args):
            v.raise_to("process", "rg --pre runs a command per file")
    elif prog == "uniq":
        ops = _operands(args)
        if len(ops) >= 2:
            c.write_target(ops[1], v, cwd, "uniq IN OUT")
    elif prog in ("less", "more"):
        if any(a in ("-o", "-O") or a.startswith(("-o", "-O", "--log-file")) for a in args):
            v.raise_to(MUTATION, f"{prog} -o writes a log file")
    elif prog == "tee":
        for f in _operands(args):
            c.write_target(f, v, cwd, "tee")
    elif prog in ("cp", "mv", "ln", "install"):
        _copy_like(prog, args, v, c, cwd)
    elif prog in ("tar", "bsdtar"):
        _tar(args, v, c, cwd)
    elif prog in ("touch", "mkdir", "truncate"):
        ops = [a for a in _operands(args) if not (prog == "truncate" and re.match(r"^[-+<>/%]?\d", a))]
        for f in ops:
            c.write_target(f, v, cwd, prog, base=MUTATION)
        v.raise_to(MUTATION, f"{prog} changes files")
    elif prog in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd"):
        if not (
            {"c", "l", "t"} & _short_flags(args) or "--stdout" in args or "--list" in args or "--test" in args
        ):
            v.raise_to(MUTATION, f"{prog} replaces files")
    elif prog in ("unzip",):
        if not ({"l", "t", "p", "v", "Z"} & _short_flags(args)):
            for i, a in enumerate(args):
                if a == "-d" and i + 1 < len(args):
                    c.write_target(args[i + 1], v, cwd, "unzip -d")
            v.raise_to(MUTATION, "unzip extracts files")
    elif prog in ("fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk", "blkdiscard", "badblocks"):
        listing = {"l", "s"} & _short_flags(args) or "--list" in args or "print" in args
        if listing:
            return
        if any(_RAW_DEVICE.match(a) for a in args):
            v.deny(f"{prog} on a disk device is hard-denied and cannot be approved")
            return
        v.raise_to("system_mutation", f"{prog} changes disk partitions")
    elif prog == "xxd":
        ops = _operands(args)
        if len(ops) >= 2:
            c.write_target(ops[1], v, cwd, "xxd IN OUT")
    elif prog == "shuf":
        for i, a in enumerate(args):
            if a in ("-o", "--output") and i + 1 < len(args):
                c.write_target(args[i + 1], v, cwd, "shuf -o")
            elif a.startswith("--output="):
                c.write_target(a.split("=", 1)[1], v, cwd, "shuf -o")
    elif prog == "file":
        if "-C" in args or "--compile" in args:
            v.raise_to(MUTATION, "file -C writes a magic file")
    elif prog == "man":
        if any(
            a in ("-P", "--pager", "-H", "--html") or a.startswith(("--pager=", "--html=", "-P", "-H"))
            for a in args
        ):
            v.raise_to("process", "man -P/-H runs a program")
    elif prog in READ_ONLY:
        return
    elif prog in FILE_MUTATION:
        for f in _operands(args)[-1:]:
            c.write_target(f, v, cwd, prog)
        v.raise_to(MUTATION, f"{prog} changes files")
    elif prog in SHELL_MUTATION:
        v.raise_to("shell_mutation", f"{prog} changes files")
    elif prog in BUILD_TOOLS or prog in PROCESS or prog in INTERPRETERS:
        if args and args[0] in ("--version", "-V", "--help") and len(args) == 1:
            return
        v.raise_to("process", f"{prog} runs programs")
    elif "/" in argv0:
        v.raise_to("process", f"{argv0} runs a local program")
    else:
        v.raise_to("shell_mutation", f"unknown program {prog}")


def _rm(prog: str, args: list[str], v: _Verdict, c: _Classifier, cwd: str | None) -> None:
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


def _chmod(prog: str, args: list[str], v: _Verdict, c: _Classifier, cwd: str | None) -> None:
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


def _dd(args: list[str], v: _Verdict, c: _Classifier, cwd: str | None) -> None:
    for a in args:
        if a.startswith("of="):
            target = a[3:]
            path = c._resolve(target, cwd)
            if path is not None and path.startswith("/dev/") and not _SAFE_DEVICES.match(path):
                v.deny(f"dd of={target} (writing to a device) is hard-denied and cannot be approved")
                return
            c.write_target(target, v, cwd, "dd")
    v.raise_to(MUTATION, "dd copies raw data")


def _download_outputs(prog: str, args: list[str], v: _Verdict, c: _Classifier, cwd: str | None) -> None:
    flags = {"curl": ("-o", "--output"), "wget": ("-O", "--output-document", "-P", "--directory-prefix")}[
        prog
    ]
    for i, a in enumerate(args):
        if a in flags and i + 1 < len(args) and args[i + 1] != "-":
            c.write_target(args[i + 1], v, cwd, prog)
        for f in flags:
            if f.startswith("--") and a.startswith(f + "="):
                c.write_target(a.split("=", 1)[1], v, cwd, prog)


def _copy_like(prog: str, args: list[str], v: _Verdict, c: _Classifier, cwd: str | None) -> None:
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


def _tar(args: list[str], v: _Verdict, c: _Classifier, cwd: str | None) -> None:
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


def _sed(args: list[str], v: _Verdict, c: _Classifier, cwd: str | None) -> None:
    in_place = any(
        a == "--in-place"
        or a.startswith("--in-place=")
        or (a.startswith("-") and not a.startswith("--") and "i" in a[1:])
        for a in args
        if a not in ("-e", "-f")
    )
    ops = _operands(args)
    has_script_flag = any(
        a in ("-e", "--expression", "-f", "--file") or a.startswith("--expression=") for a in args
    )
    scripts = [args[i + 1] for i, a in enumerate(args) if a in ("-e", "--expression") and i + 1 < len(args)]
    if not has_script_flag and ops:
        scripts.append(ops[0])
        files = ops[1:]
    else:
        files = [o for o in ops if o not in scripts]
    for s in scripts:
        if re.search(r"(?:^|[/;}\s])[wW]\s+\S", s):
            v.raise_to(MUTATION, "sed w writes a file")
        if re.search(r"(?:^|[;}\s])e(?:\s|$|;)|/e\b", s):
            v.raise_to("process", "sed e runs a command")
    if in_place:
        for f in files:
            c.write_target(f, v, cwd, "sed -i")
        v.raise_to(MUTATION, "sed -i edits files in place")


def _awk(args: list[str], v: _Verdict) -> None:
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


def _find(args: list[str], v: _Verdict, c: _Classifier, cwd: str | None) -> None:
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
            if inner:
                sub = _Verdict()
                c._argv(inner, [False] * len(inner), sub, cwd, 0, False, _Cmd())
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


_GIT_READ = frozenset(
    """
    status log diff show rev-parse rev-list merge-base show-ref for-each-ref name-rev show-branch
    count-objects version blame annotate ls-files ls-tree cat-file describe shortlog grep whatchanged
    cherry check-ignore check-attr check-ref-format var help diff-tree diff-index diff-files
    fsck verify-commit verify-tag range-diff get-tar-commit-id help
    """.split()
)
_GIT_NETWORK = frozenset("push fetch pull clone ls-remote request-pull send-email".split())


def _git(args: list[str], v: _Verdict, c: _Classifier, cwd: str | None) -> None:
    i = 0
    config_override = False
    while i < len(args):
        a = args[i]
        if a in ("-C", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--super-prefix"):
            i += 2
            if a == "--exec-path":
                config_override = True
            continue
        if a == "-c" or a.startswith("--config-env") or a.startswith("--exec-path="):
            config_override = True
            i += 2 if a in ("-c", "--config-env") else 1
            continue
        if a in ("--version", "--help", "-h"):
            return
        if a.startswith("-"):
            i += 1
            continue
        break
    if i >= len(args):
        return
    sub, rest = args[i], args[i + 1 :]
    if config_override:
        v.raise_to("shell_mutation", "git -c can run configured commands")
    if sub == "reset" and any(len(a) >= 4 and "--hard".startswith(a) for a in rest):
        v.deny("git reset --hard is hard-denied and cannot be approved")
        return
    if sub == "push":
        _git_push(rest, v)
        return
    if sub in _GIT_NETWORK or (sub == "remote" and rest[:1] in (["show"], ["update"], ["prune"])):
        v.raise_to("network", f"git {sub} reaches the network")
        return
    if (
        sub in ("submodule", "lfs")
        and rest[:1]
        and rest[0] in ("update", "sync", "fetch", "pull", "push", "foreach", "add")
    ):
        v.raise_to("network", f"git {sub} {rest[0]} reaches the network")
        return
    if sub in _GIT_READ:
        for a in rest:
            if a.startswith("--output"):
                v.raise_to(MUTATION, f"git {sub} {a} writes a file")
            elif a == "--ext-diff" or a.startswith(("--open-files-in-pager", "-O", "--textconv")):
                v.raise_to("process", f"git {sub} {a} runs a program")
        return
    positional = [a for a in rest if not a.startswith("-")]
    listing = {
        "branch": not positional or any(a in ("-l", "--list") for a in rest),
        "tag": not positional or any(a in ("-l", "--list", "-v", "--verify") for a in rest),
        "stash": rest[:1] in (["list"], ["show"]),
        "remote": not rest or rest[:1] in (["-v"], ["get-url"], ["--verbose"]),
        "config": any(a.startswith("--get") or a in ("--list", "-l", "get", "list") for a in rest),
        "worktree": rest[:1] == ["list"],
        "notes": rest[:1] in (["list"], ["show"], []),
        "reflog": not rest or rest[0] in ("show",) or rest[0].startswith("-"),
        "submodule": not rest or rest[:1] in (["status"], ["summary"]),
        "lfs": rest[:1] in (["ls-files"], ["status"], ["env"], ["version"]),
        "clean": any(a in ("-n", "--dry-run") for a in rest),
        "archive": not any(a.startswith(("-o", "--output", "--remote")) for a in rest),
    }
    if sub in ("branch", "tag") and any(
        a
        in (
            "-d",
            "-D",
            "-m",
            "-M",
            "-c",
            "-C",
            "--delete",
            "--move",
            "--copy",
            "-u",
            "--set-upstream-to",
            "--unset-upstream",
            "-f",
            "--force",
            "-a",
            "-s",
            "--edit-description",
        )
        and not (sub == "branch" and a == "-a")
        for a in rest
    ):
        v.raise_to("shell_mutation", f"git {sub} changes refs")
        return
    if listing.get(sub):
        return
    if sub == "format-patch" and "--stdout" in rest:
        return
    v.raise_to("shell_mutation", f"git {sub} changes the repository")


def _git_push(rest: list[str], v: _Verdict) -> None:
    force = any(
        a.startswith(("--forc", "--mir")) or (a.startswith("-") and not a.startswith("--") and "f" in a[1:])
        for a in rest
    )
    delete = any(a in ("--delete", "-d") for a in rest)
    with_arg = {"--repo", "-o", "--push-option", "--receive-pack", "--exec"}
    positional: list[str] = []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in with_arg:
            i += 2
            continue
        if not a.startswith("-"):
            positional.append(a)
        i += 1
    refspecs = positional[1:]
    if any(r.startswith("+") for r in refspecs):
        force = True
    if "--all" in rest or "--mirror" in rest or "--branches" in rest:
        refspecs = refspecs or ["main"]

    def dst(ref: str) -> str:
        ref = ref.lstrip("+")
        return ref.split(":", 1)[1] if ":" in ref else ref

    def risky(ref: str) -> bool:
        d = dst(ref)
        return bool(PROTECTED_BRANCH.match(d)) or d in ("HEAD", "@", "") or "$" in d or "*" in d

    if force and (not refspecs or any(risky(r) for r in refspecs)):
        target = next((dst(r) for r in refspecs if risky(r)), None) or "the current branch"
        v.deny(f"git push --force to a protected branch ({target}) is hard-denied and cannot be approved")
        return
    for r in refspecs:
        if (delete and PROTECTED_BRANCH.match(r.lstrip("+"))) or (
            r.startswith(":") and PROTECTED_BRANCH.match(r[1:])
        ):
            v.deny(f"deleting the protected branch {r.lstrip(':')} is hard-denied and cannot be approved")
            return
    v.raise_to("network", "git push reaches the network")


def _pip(args: list[str], v: _Verdict) -> None:
    ops = _skip_options(args, with_arg={"--python", "--log", "--proxy", "--cache-dir"})
    sub = ops[0] if ops else None
    if sub in ("install", "uninstall"):
        if "--dry-run" in args:
            v.raise_to("network", f"pip {sub} --dry-run resolves packages over the network")
            return
        v.raise_to("system_mutation", f"pip {sub} changes installed packages")
    elif sub in ("download", "wheel", "index", "search"):
        v.raise_to("network", f"pip {sub} reaches the network")
    elif sub in (
        None,
        "list",
        "show",
        "freeze",
        "check",
        "help",
        "debug",
        "inspect",
        "config",
        "cache",
        "hash",
    ):
        if sub == "cache" and ops[1:2] in (["purge"], ["remove"]):
            v.raise_to(MUTATION, "pip cache purge deletes files")
        if sub == "config" and ops[1:2] in (["set"], ["unset"], ["edit"]):
            v.raise_to("shell_mutation", "pip config changes configuration")
        return
    else:
        v.raise_to("process", f"pip {sub}")


def _python(prog: str, args: list[str], v: _Verdict) -> None:
    if not args:
        v.raise_to("process", f"{prog} runs code from stdin")
        return
    if args[0] in ("--version", "-V", "--help", "-h"):
        return
    for i, a in enumerate(args):
        if a == "-m" and i + 1 < len(args):
            mod, rest = args[i + 1], args[i + 2 :]
            if mod in ("pip", "pip3"):
                _pip(rest, v)
                return
            if mod == "json.tool":
                return
            if mod == "http.server":
                v.raise_to("network", "python -m http.server listens on a socket")
                return
            if mod in ("venv", "virtualenv", "ensurepip"):
                v.raise_to("process", f"python -m {mod} creates an environment")
                return
            v.raise_to("process", f"python -m {mod} runs code")
            return
        if a.startswith("-m") and len(a) > 2:
            v.raise_to("process", f"python {a} runs code")
            return
    v.raise_to("process", f"{prog} runs code")


def _js_pm(prog: str, args: list[str], v: _Verdict) -> None:
    ops = [a for a in args if not a.startswith("-")]
    sub = ops[0] if ops else None
    global_flag = any(a in ("-g", "--global", "--location=global") for a in args)
    if prog == "yarn" and sub == "global":
        v.raise_to("system_mutation", "yarn global changes machine-wide packages")
        return
    installs = {
        "install",
        "i",
        "add",
        "ci",
        "uninstall",
        "remove",
        "rm",
        "un",
        "update",
        "up",
        "upgrade",
        "link",
        "unlink",
        "r",
    }
    if global_flag and (sub in installs or sub is None):
        v.raise_to("system_mutation", f"{prog} {sub or ''} -g changes machine-wide packages")
        return
    if sub in (
        "publish",
        "unpublish",
        "deprecate",
        "login",
        "logout",
        "adduser",
        "owner",
        "dist-tag",
        "access",
        "view",
        "info",
        "show",
        "search",
        "whoami",
        "ping",
    ):
        v.raise_to("network", f"{prog} {sub} talks to the registry")
        return
    if sub in ("ls", "list", "ll", "la", "root", "prefix", "bin", "help", "why", "explain", "config") and (
        sub != "config" or ops[1:2] in (["get"], ["list"])
    ):
        return
    if not args or args[0] in ("--version", "-v", "--help", "-h"):
        if not args and prog in ("yarn", "bun"):
            v.raise_to("process", f"{prog} installs project dependencies")
        return
    v.raise_to("process", f"{prog} {sub or ''} runs project scripts".replace("  ", " "))


def _lang_pm(prog: str, args: list[str], v: _Verdict) -> None:
    ops = [a for a in args if not a.startswith("-")]
    sub = ops[0] if ops else None
    if not args or args[0] in ("--version", "-V", "version", "--help", "-h", "help"):
        return
    system = {
        "cargo": {"install", "uninstall"},
        "go": {"install"},
        "gem": {"install", "uninstall", "update", "cleanup"},
        "dotnet": set(),
        "uv": set(),
        "poetry": set(),
        "composer": set(),
        "rustup": {"toolchain", "default", "update", "component", "target", "self", "install", "uninstall"},
        "deno": {"install", "uninstall", "upgrade"},
    }
    if prog == "pipx":
        if sub in ("list", "environment", "--version"):
            return
        v.raise_to("system_mutation", f"pipx {sub} changes machine-wide tools")
        return
    if sub in system.get(prog, set()):
        v.raise_to("system_mutation", f"{prog} {sub} changes machine-wide tools")
        return
    if (
        prog == "dotnet"
        and sub == "tool"
        and ops[1:2]
        and ops[1] in ("install", "update", "uninstall", "restore")
    ):
        if "-g" in args or "--global" in args or ops[1] != "restore":
            v.raise_to("system_mutation", "dotnet tool changes machine-wide tools")
            return
    if prog == "uv" and (
        (sub == "pip" and ops[1:2] and ops[1] in ("install", "uninstall", "sync"))
        or (sub == "tool" and ops[1:2] and ops[1] in ("install", "uninstall", "upgrade"))
        or (sub == "python" and ops[1:2] in (["install"], ["uninstall"]))
    ):
        if sub == "pip" and "--system" not in args:
            # into the active venv, usually the project's; still a package change the reviewer sees
            v.raise_to("system_mutation", "uv pip install changes installed packages")
            return
        v.raise_to("system_mutation", f"uv {sub} {ops[1]} changes machine-wide tools")
        return
    if prog == "poetry" and sub == "self":
        v.raise_to("system_mutation", "poetry self changes the machine-wide tool")
        return
    if prog == "composer" and sub == "global":
        v.raise_to("system_mutation", "composer global changes machine-wide packages")
        return
    if prog == "cargo" and sub in ("publish", "login", "owner", "yank", "search"):
        v.raise_to("network", f"cargo {sub} talks to the registry")
        return
    if prog == "go" and sub in ("env", "list", "doc", "vet", "fmt") and sub in ("env", "doc"):
        return
    v.raise_to("process", f"{prog} {sub or ''} builds or runs code".replace("  ", " "))
