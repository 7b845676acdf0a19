"""The policy engine (pure): mode matrix, rules, floors, headless resolution, presets, digest."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mermaid_cli.config.sections.safety import Override, SafetySettings, policy_digest
from mermaid_cli.core.errors import ConfigError
from mermaid_cli.policy import list_presets, load_preset, preset_description
from mermaid_cli.policy.actions import ActionRequest, PathRef
from mermaid_cli.policy.engine import evaluate
from mermaid_cli.policy.resolution import resolve_review
from mermaid_cli.policy.shell.classifier import classify_command

ROOT = Path("/work/proj")
HOME = Path("/home/dev")
MODES = ["read_only", "ask", "auto", "full_access"]


def sh(command: str) -> ActionRequest:
    return ActionRequest(tool="execute_command", category="shell", command=command, summary=command)


def ev(
    request: ActionRequest,
    mode: str = "auto",
    *,
    interactive: bool = False,
    allow_untrusted: bool = False,
    **kw,
):
    hook = kw.pop("hook", None)
    untrusted_content = kw.pop("untrusted_content", False)
    policy = SafetySettings(mode=mode, **kw)
    return evaluate(
        request,
        policy,
        interactive=interactive,
        allow_untrusted=allow_untrusted,
        untrusted_content=untrusted_content,
        hook=hook,
        project_root=ROOT,
        home=HOME,
    )


READ = ActionRequest(tool="read_file", category="read", paths=(PathRef("src/a.py"),))
OUTSIDE_READ = ActionRequest(
    tool="read_file", category="read", paths=(PathRef("/opt/x", outside_project=True),)
)
EDIT = ActionRequest(tool="write_file", category="edit", paths=(PathRef("src/a.py"),))
OUTSIDE_EDIT = ActionRequest(
    tool="write_file", category="edit", paths=(PathRef("/opt/x", outside_project=True),)
)
WEB = ActionRequest(
    tool="web_fetch", category="web", host="docs.python.org", summary="web_fetch https://docs.python.org"
)
MCP_WRITE = ActionRequest(tool="mcp__gh__create_issue", category="mcp", summary="mcp gh create_issue")
MCP_READ = ActionRequest(tool="mcp__gh__get_issue", category="mcp", mcp_read_only_hint=True)
SUBAGENT = ActionRequest(tool="agent", category="subagent", summary="agent: look around")
MEMORY = ActionRequest(tool="memory", category="memory")
TASKS = ActionRequest(tool="task_create", category="session")


# --- the mode matrix ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (READ, {"read_only": "allow", "ask": "allow", "auto": "allow", "full_access": "allow"}),
        (sh("ls -la"), {"read_only": "allow", "ask": "ask", "auto": "allow", "full_access": "allow"}),
        (EDIT, {"read_only": "deny", "ask": "ask", "auto": "allow", "full_access": "allow"}),
        (
            sh("echo x > out.txt"),
            {"read_only": "deny", "ask": "ask", "auto": "classify", "full_access": "allow"},
        ),
        (sh("rm build/x"), {"read_only": "deny", "ask": "ask", "auto": "classify", "full_access": "allow"}),
        (sh("pytest -q"), {"read_only": "deny", "ask": "ask", "auto": "classify", "full_access": "allow"}),
        (
            sh("curl https://x"),
            {"read_only": "deny", "ask": "ask", "auto": "classify", "full_access": "allow"},
        ),
        (
            sh("pip install x"),
            {"read_only": "deny", "ask": "ask", "auto": "classify", "full_access": "classify"},
        ),
        (OUTSIDE_EDIT, {"read_only": "deny", "ask": "ask", "auto": "classify", "full_access": "allow"}),
        (OUTSIDE_READ, {"read_only": "deny", "ask": "ask", "auto": "classify", "full_access": "allow"}),
        (WEB, {"read_only": "ask", "ask": "ask", "auto": "classify", "full_access": "allow"}),
        (MCP_WRITE, {"read_only": "deny", "ask": "ask", "auto": "classify", "full_access": "classify"}),
        (MCP_READ, {"read_only": "deny", "ask": "ask", "auto": "classify", "full_access": "allow"}),
        (SUBAGENT, {"read_only": "allow", "ask": "ask", "auto": "classify", "full_access": "allow"}),
        (MEMORY, {"read_only": "deny", "ask": "allow", "auto": "allow", "full_access": "allow"}),
        (TASKS, {"read_only": "allow", "ask": "allow", "auto": "allow", "full_access": "allow"}),
    ],
    ids=lambda x: getattr(x, "summary", "") or getattr(x, "tool", "") if isinstance(x, ActionRequest) else "",
)
def test_mode_matrix_interactive(request_: ActionRequest, expected: dict[str, str]) -> None:
    for mode in MODES:
        out = ev(request_, mode, interactive=True)
        assert out.verdict == expected[mode], (mode, out)
        assert not out.blocked


def test_read_only_deny_reasons_name_what() -> None:
    assert ev(sh("curl x"), "read_only").reason == "read-only safety mode blocks network access"
    assert ev(sh("pytest"), "read_only").reason == "read-only safety mode blocks running programs"
    assert (
        ev(sh("pip install x"), "read_only").reason == "read-only safety mode blocks machine-scoped changes"
    )
    assert ev(EDIT, "read_only").reason == "read-only safety mode blocks mutations and control actions"
    out = ev(EDIT, "read_only")
    assert out.by == "mode" and not out.blocked


def test_read_only_web_switch() -> None:
    assert ev(WEB, "read_only", allow_readonly_web=True).verdict == "allow"
    blocked = ev(WEB, "read_only")
    assert blocked.verdict == "deny" and blocked.blocked and blocked.by == "headless"
    assert "allow_readonly_web" in blocked.reason


# --- hard deny --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_hard_deny_in_every_mode_even_with_allow_rules(mode: str) -> None:
    rules = [
        Override(tool="execute_command", pattern="git", decision="allow"),
        Override(category="shell", decision="allow"),
        Override(tool="*", decision="allow"),
    ]
    out = ev(sh("git reset --hard"), mode, interactive=True, overrides=rules, allow_untrusted=True)
    assert out.verdict == "deny" and out.by == "hard_deny" and not out.blocked
    assert out.reason == "git reset --hard is hard-denied and cannot be approved"
    assert out.risk == "destructive"


def test_edit_of_sensitive_path_is_hard_denied() -> None:
    req = ActionRequest(
        tool="write_file", category="edit", paths=(PathRef("/etc/passwd", outside_project=True),)
    )
    out = ev(req, "full_access")
    assert out.verdict == "deny" and out.by == "hard_deny" and "/etc" in out.reason
    ssh = ActionRequest(
        tool="edit_file", category="edit", paths=(PathRef(str(HOME / ".ssh/authorized_keys"), True),)
    )
    assert ev(ssh, "full_access").by == "hard_deny"


# --- network kill switch -------------------------------------------------------------------------


def test_network_kill_switch_first() -> None:
    rules = [Override(category="web", decision="allow")]
    out = ev(WEB, "full_access", network="deny", overrides=rules)
    assert out.verdict == "deny" and out.by == "network" and "--no-network" in out.reason
    out = ev(sh("curl https://x"), "full_access", network="deny")
    assert out.verdict == "deny" and out.by == "network"
    assert ev(sh("ls"), "full_access", network="deny").verdict == "allow"


# --- rules ----------------------------------------------------------------------------------------


def test_allow_rule_is_anchored_to_a_single_simple_command() -> None:
    rules = [Override(tool="execute_command", pattern="git", decision="allow")]
    assert ev(sh("git status"), "ask", overrides=rules).verdict == "allow"
    assert ev(sh("git commit -m x"), "ask", overrides=rules).by == "rule"
    for cmd in [
        "git status; rm -rf x",
        "git status && curl x",
        "git status | sh",
        "git log $(rm x)",
        "git log `id`",
        "FOO=1 git status",
        "git log > out.txt",
        "(git status)",
        "git status &",
        "gitx status",
        "./git status",
        "git log <<EOF\nx\nEOF",
        "sudo git status",
    ]:
        out = ev(sh(cmd), "ask", overrides=rules)
        assert out.verdict != "allow", cmd
        assert out.by != "rule", cmd


def test_multiword_allow_pattern() -> None:
    rules = [Override(tool="execute_command", pattern="npm test", decision="allow")]
    assert ev(sh("npm test -- --watch=false"), "ask", overrides=rules).verdict == "allow"
    assert ev(sh("npm install"), "ask", overrides=rules).verdict == "deny"  # headless ask → blocked
    assert ev(sh("/usr/bin/npm test"), "ask", overrides=rules).verdict == "allow"


def test_deny_and_ask_rules_are_substring_matches_and_first_match_wins() -> None:
    rules = [
        Override(tool="execute_command", pattern="push", decision="deny", reason="no pushing from CI"),
        Override(tool="execute_command", pattern="git", decision="allow"),
    ]
    out = ev(sh("git push origin x"), "full_access", overrides=rules)
    assert (out.verdict, out.by, out.reason) == ("deny", "rule", "no pushing from CI")
    assert out.rule is rules[0] and not out.blocked
    ask_rule = [Override(category="shell", pattern="docker", decision="ask")]
    out = ev(sh("docker ps"), "full_access", overrides=ask_rule)
    assert out.verdict == "deny" and out.blocked and out.by == "headless"
    assert ev(sh("docker ps"), "full_access", overrides=ask_rule, interactive=True).verdict == "ask"


def test_rule_for_paths_hosts_and_categories() -> None:
    deny_secrets = [Override(tool="read_file", pattern="secrets/", decision="deny")]
    req = ActionRequest(tool="read_file", category="read", paths=(PathRef("config/secrets/prod.env"),))
    assert ev(req, "full_access", overrides=deny_secrets).verdict == "deny"
    allow_host = [Override(tool="web_fetch", pattern="docs.python.org", decision="allow")]
    assert ev(WEB, "ask", overrides=allow_host).verdict == "allow"
    evil = ActionRequest(tool="web_fetch", category="web", host="docs.python.org.evil.com")
    assert ev(evil, "ask", overrides=allow_host).verdict == "deny"
    web_deny = [Override(category="web", decision="deny", reason="no egress")]
    assert ev(WEB, "full_access", overrides=web_deny).reason == "no egress"
    outside_deny = [Override(category="external_directory", decision="deny")]
    assert ev(OUTSIDE_READ, "full_access", overrides=outside_deny).verdict == "deny"
    glob_rule = [Override(tool="mcp__gh__*", decision="allow")]
    assert ev(MCP_WRITE, "ask", overrides=glob_rule).verdict == "allow"


def test_read_only_is_a_ceiling_for_allow_rules() -> None:
    rules = [Override(tool="execute_command", pattern="rm", decision="allow")]
    out = ev(sh("rm x"), "read_only", overrides=rules)
    assert out.verdict == "deny" and "cannot lift read_only" in out.reason
    ask_rule = [Override(category="read", decision="ask")]
    assert ev(OUTSIDE_READ, "read_only", overrides=ask_rule, allow_untrusted=True).verdict == "deny"


def test_override_needs_a_selector_and_rejects_unknown_keys() -> None:
    with pytest.raises(ValidationError):
        Override(decision="allow")
    with pytest.raises(ValidationError):
        SafetySettings(mode="auto_review")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        SafetySettings.model_validate({"mode": "auto", "bogus": 1})


# --- floors ---------------------------------------------------------------------------------------


def test_floors() -> None:
    assert ev(sh("pip install x"), "full_access", system_installs="allow").verdict == "allow"
    out = ev(sh("pip install x"), "full_access", system_installs="deny")
    assert out.verdict == "deny" and out.reason == "system-installs policy blocks machine-scoped installs"
    out = ev(MCP_WRITE, "full_access", external_writes="deny")
    assert out.reason == "external-writes policy blocks write-shaped MCP tools" and not out.blocked
    assert ev(MCP_WRITE, "full_access", external_writes="ask", interactive=True).verdict == "ask"
    assert ev(MCP_READ, "full_access", external_writes="deny").verdict == "allow"
    assert ev(sh("apt-get install jq"), "auto", system_installs="ask", interactive=True).verdict == "ask"


def test_untrusted_content_makes_full_access_vet() -> None:
    assert ev(sh("curl x"), "full_access", untrusted_content=True).verdict == "classify"
    assert ev(EDIT, "full_access", untrusted_content=True).verdict == "allow"


# --- headless resolution ----------------------------------------------------------------------------


def test_headless_ask_is_blocked_with_guidance() -> None:
    out = ev(sh("make build"), "ask")
    assert out.verdict == "deny" and out.by == "headless" and out.blocked
    assert (
        "--safety" in out.reason and "[[safety.overrides]]" in out.reason and 'pattern = "make"' in out.reason
    )
    assert "--allow-untrusted-tools" not in out.reason
    assert out.decision().verdict == "deny"


@pytest.mark.parametrize(
    "req", [WEB, MCP_WRITE, SUBAGENT, OUTSIDE_READ], ids=["web", "mcp", "subagent", "outside_read"]
)
def test_allow_untrusted_lets_untrusted_kinds_through(req: ActionRequest) -> None:
    blocked = ev(req, "ask")
    assert blocked.blocked and "--allow-untrusted-tools" in blocked.reason
    out = ev(req, "ask", allow_untrusted=True)
    assert out.verdict == "allow" and out.by == "headless" and not out.blocked
    assert ev(req, "ask", allow_untrusted_headless_tools=True).verdict == "allow"


@pytest.mark.parametrize("req", [sh("ls"), EDIT, OUTSIDE_EDIT], ids=["shell", "edit", "outside_edit"])
def test_allow_untrusted_does_not_cover_shell_or_edits(req: ActionRequest) -> None:
    out = ev(req, "ask", allow_untrusted=True)
    assert out.verdict == "deny" and out.blocked


def test_review_resolution() -> None:
    out = ev(sh("rm x"), "auto")
    assert out.verdict == "classify"
    ok = resolve_review(out, sh("rm x"), allow=True, reason="", interactive=False)
    assert ok.verdict == "allow" and ok.by == "classifier"
    esc = resolve_review(out, sh("rm x"), allow=False, reason="deletes files", interactive=False)
    assert esc.verdict == "deny" and esc.blocked and "deletes files" in esc.reason
    tty = resolve_review(out, sh("rm x"), allow=False, reason="deletes files", interactive=True)
    assert tty.verdict == "ask" and tty.by == "classifier"


# --- hooks ----------------------------------------------------------------------------------------


@dataclass
class Hook:
    decision: str | None
    reason: str | None = None


def test_hook_opinions() -> None:
    out = ev(sh("ls"), "full_access", hook=Hook("deny", "not today"))
    assert (out.verdict, out.by) == ("deny", "hook") and "not today" in out.reason and not out.blocked
    # a hook cannot override a hard deny's reason
    assert ev(sh("rm -rf /"), "full_access", hook=Hook("deny", "x")).by == "hard_deny"
    out = ev(sh("ls"), "full_access", hook=Hook("ask"), interactive=True)
    assert (out.verdict, out.by) == ("ask", "hook")
    assert ev(sh("ls"), "full_access", hook=Hook("ask")).blocked
    # a hook allow does not lift the mode
    assert ev(EDIT, "read_only", hook=Hook("allow")).verdict == "deny"
    assert ev(sh("pytest"), "auto", hook=Hook("allow")).verdict == "classify"


# --- checkpoints and decisions --------------------------------------------------------------------


def test_checkpoint_flag_and_decision() -> None:
    assert ev(EDIT, "auto").checkpoint
    assert not ev(sh("ls"), "auto").checkpoint
    assert not ev(EDIT, "auto", checkpoint_on_mutation=False).checkpoint
    d = ev(sh("ls"), "auto").decision()
    assert d.verdict == "allow" and d.by == "mode" and d.risk == "read_only"


# --- digest and presets ---------------------------------------------------------------------------


def test_policy_digest_is_canonical() -> None:
    a = SafetySettings(mode="auto", overrides=[Override(tool="x", decision="deny")])
    b = SafetySettings.model_validate({"overrides": [{"decision": "deny", "tool": "x"}], "mode": "auto"})
    assert policy_digest(a) == policy_digest(b)
    assert len(policy_digest(a)) == 64
    assert policy_digest(a) != policy_digest(SafetySettings(mode="ask"))


@pytest.mark.parametrize("name", ["read-only-review", "ci-fix", "untrusted-input"])
def test_presets_load_validate_and_are_documented(name: str) -> None:
    assert name in list_presets()
    data = load_preset(name)
    SafetySettings.model_validate(data["safety"])
    assert set(data) == {"safety"}
    assert len(preset_description(name).splitlines()) >= 3


def test_preset_behaviour() -> None:
    ro = SafetySettings.model_validate(load_preset("read-only-review")["safety"])
    assert evaluate(sh("git diff"), ro, interactive=False, allow_untrusted=False).verdict == "allow"
    assert evaluate(EDIT, ro, interactive=False, allow_untrusted=False).verdict == "deny"
    ci = SafetySettings.model_validate(load_preset("ci-fix")["safety"])
    assert evaluate(sh("pytest -q tests"), ci, interactive=False, allow_untrusted=False).verdict == "allow"
    assert evaluate(sh("pytest; curl x | sh"), ci, interactive=False, allow_untrusted=False).verdict == "deny"
    assert evaluate(sh("git push origin fix"), ci, interactive=False, allow_untrusted=False).by == "rule"
    assert evaluate(sh("pip install x"), ci, interactive=False, allow_untrusted=False).verdict == "deny"
    ut = SafetySettings.model_validate(load_preset("untrusted-input")["safety"])
    assert evaluate(WEB, ut, interactive=False, allow_untrusted=True).by == "network"
    assert evaluate(sh("curl x"), ut, interactive=False, allow_untrusted=False).by == "network"
    assert evaluate(OUTSIDE_READ, ut, interactive=False, allow_untrusted=True).verdict == "deny"
    assert evaluate(EDIT, ut, interactive=False, allow_untrusted=False).verdict == "allow"


def test_preset_by_path_and_unknown(tmp_path: Path) -> None:
    p = tmp_path / "mine.toml"
    p.write_text('[safety]\nmode = "ask"\n')
    assert load_preset(str(p)) == {"safety": {"mode": "ask"}}
    with pytest.raises(ConfigError, match="unknown policy preset"):
        load_preset("no-such-preset")
    with pytest.raises(ConfigError):
        load_preset(str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("[safety\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_preset(str(bad))


# --- properties -----------------------------------------------------------------------------------

HARD_DENIED = [
    "rm -rf /",
    "git reset --hard",
    "curl x | sh",
    "git push -f origin main",
    "echo x > /etc/hosts",
    "mkfs.ext4 /dev/sda",
    ":(){ :|:& };:",
    "dd if=/dev/zero of=/dev/sda",
    "rm -rf ~",
    "nc -l 9000",
]
PROGRAMS = ["git", "rm", "curl", "sh", "echo", "ls", "mkfs.ext4", "dd", "nc", ":", "pytest", "make"]
CATEGORIES = [
    "read",
    "edit",
    "shell",
    "process",
    "web",
    "mcp",
    "subagent",
    "memory",
    "session",
    "external_directory",
]


def _override(tool, category, pattern, decision):
    try:
        return Override(tool=tool, category=category, pattern=pattern, decision=decision)
    except ValidationError:
        return Override(tool="execute_command", pattern=pattern, decision=decision)


rules_st = st.lists(
    st.builds(
        _override,
        st.sampled_from([None, "execute_command", "*"]),
        st.sampled_from([None, "shell"]),
        st.sampled_from([None, *PROGRAMS]),
        st.sampled_from(["allow", "ask", "deny"]),
    ),
    max_size=4,
)
PROP = settings(
    max_examples=int(os.environ.get("MERMAID_PROPERTY_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@PROP
@given(
    st.sampled_from(HARD_DENIED),
    st.sampled_from(["", "true && ", "ls; ", "sudo ", "env A=1 "]),
    st.sampled_from(MODES),
    rules_st,
    st.booleans(),
    st.booleans(),
)
def test_hard_denied_is_denied_everywhere(cmd, prefix, mode, rules, interactive, allow_untrusted) -> None:
    policy = SafetySettings(mode=mode, overrides=rules, system_installs="allow", external_writes="allow")
    out = evaluate(sh(prefix + cmd), policy, interactive=interactive, allow_untrusted=allow_untrusted)
    assert out.verdict == "deny" and out.by == "hard_deny" and out.hard_deny_rule


COMMANDS = [
    "ls -la",
    "cat x",
    "git status",
    "git log | head",
    "echo hi > f",
    "rm -rf build",
    "pytest",
    "curl https://x",
    "pip install x",
    "cp a ~/b",
    "rm -rf /",
    "grep x y; touch z",
    "find . -delete",
    "$(ls)",
    "python -c 1",
    "echo 'unterminated",
    "cat <<EOF\n$(id)\nEOF",
    "sudo ls",
    "ls # comment",
    "mkdir -p out",
]


@PROP
@given(
    st.sampled_from(COMMANDS),
    st.sampled_from(CATEGORIES),
    st.booleans(),
    st.booleans(),
    rules_st,
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_read_only_never_allows_non_read_only(
    cmd, category, outside, hint, rules, interactive, allow_untrusted, web_ok
):
    is_shell = category in ("shell", "process")
    req = ActionRequest(
        tool="execute_command" if is_shell else f"tool_{category}",
        category=category,
        command=cmd if is_shell else None,
        paths=() if is_shell else (PathRef("/opt/x" if outside else "x", outside),),
        mcp_read_only_hint=hint,
        host="example.com" if category == "web" else None,
    )
    policy = SafetySettings(mode="read_only", overrides=rules, allow_readonly_web=web_ok)
    out = evaluate(
        req, policy, interactive=interactive, allow_untrusted=allow_untrusted, project_root=ROOT, home=HOME
    )
    if out.verdict == "allow":
        # the documented exceptions: web reads (allow_readonly_web / --allow-untrusted-tools) and
        # subagents, which inherit read_only
        assert out.risk == "read_only" or category in ("web", "subagent"), (req, out)
    if is_shell and out.verdict == "allow":
        assert classify_command(cmd, project_root=ROOT, home=HOME).risk == "read_only"


@PROP
@given(
    st.sampled_from(PROGRAMS),
    st.sampled_from(COMMANDS),
    st.sampled_from(["; ", " && ", " || ", " | ", " & ", "\n", " $(", " `"]),
    st.sampled_from(MODES),
    st.booleans(),
)
def test_allow_rule_never_allows_compound(program, tail, sep, mode, interactive) -> None:
    cmd = f"{program} x{sep}{tail}" + (")" if sep == " $(" else "`" if sep == " `" else "")
    policy = SafetySettings(
        mode=mode, overrides=[Override(tool="execute_command", pattern=program, decision="allow")]
    )
    out = evaluate(sh(cmd), policy, interactive=interactive, allow_untrusted=True)
    assert out.by != "rule", (cmd, out)


# --- session "don't ask again" --------------------------------------------------------------------


def test_session_allow_keys() -> None:
    first = ev(sh("make build"), "ask", interactive=True)
    assert first.verdict == "ask" and first.allow_key == "execute_command:program:make"
    again = evaluate(
        sh("make test"),
        SafetySettings(mode="ask"),
        interactive=True,
        allow_untrusted=False,
        session_allow={first.allow_key},
    )
    assert (again.verdict, again.by) == ("allow", "user")
    # never for compound commands, substitutions or MCP; never past a deny
    assert ev(sh("make; rm x"), "ask").allow_key is None
    assert ev(sh("make $(x)"), "ask").allow_key is None
    assert ev(MCP_WRITE, "ask").allow_key is None
    denied = evaluate(
        sh("rm x"),
        SafetySettings(mode="read_only"),
        interactive=True,
        allow_untrusted=False,
        session_allow={"execute_command:program:rm"},
    )
    assert denied.verdict == "deny"
    assert ev(WEB, "ask").allow_key == "web_fetch:host:docs.python.org"
    assert ev(OUTSIDE_EDIT, "ask").allow_key == "write_file:dir:/opt"


# --- building requests from tool calls --------------------------------------------------------------


def test_request_for_call(tmp_path: Path) -> None:
    from mermaid_cli.policy.requests import request_for_call

    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "escape").symlink_to(tmp_path)
    r = request_for_call("read_file", "read", {"path": "src/a.py"}, project_root=root)
    assert r.paths == (PathRef("src/a.py", False),) and not r.outside and r.summary == "read_file src/a.py"
    r = request_for_call("read_file", "read", {"path": "escape/x"}, project_root=root)
    assert r.outside  # the symlink leads out
    r = request_for_call("execute_command", "shell", {"command": "ls", "working_dir": "/"}, project_root=root)
    assert r.command == "ls" and r.cwd_outside_project and r.summary == "ls"
    r = request_for_call("web_fetch", "web", {"url": "https://Docs.Python.org/3/"}, project_root=root)
    assert r.host == "docs.python.org" and r.summary == "web_fetch https://Docs.Python.org/3/"
    r = request_for_call("web_search", "web", {"queries": ["a", "b"]}, project_root=root)
    assert r.summary == "web_search a | b"
    r = request_for_call(
        "mcp__gh__create_issue", "mcp", {"title": "x", "command": "rm -rf /"}, project_root=root
    )
    assert r.command is None and r.summary.startswith("mcp gh__create_issue(")
    r = request_for_call("agent", "subagent", {"prompt": "look around"}, project_root=root)
    assert r.summary == "agent: look around"
    out = evaluate(
        request_for_call("write_file", "edit", {"path": "/etc/cron.d/x"}, project_root=root),
        SafetySettings(mode="full_access"),
        interactive=False,
        allow_untrusted=False,
        project_root=root,
    )
    assert out.by == "hard_deny"


def test_before_hooks_shortcut() -> None:
    from mermaid_cli.policy.screening import before_hooks

    policy = SafetySettings(mode="full_access", network="deny")
    assert before_hooks(sh("git reset --hard"), policy).by == "hard_deny"
    assert before_hooks(WEB, policy).by == "network"
    assert before_hooks(sh("curl x"), policy).by == "network"
    assert before_hooks(sh("ls"), policy) is None


def test_resolve_user() -> None:
    from mermaid_cli.policy.resolution import resolve_user

    asked = ev(sh("make"), "ask", interactive=True)
    yes = resolve_user(asked, approved=True)
    no = resolve_user(asked, approved=False)
    assert (yes.verdict, yes.by) == ("allow", "user")
    assert (no.verdict, no.by, no.blocked) == ("deny", "user", False)
