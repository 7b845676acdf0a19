"""`[sandbox]`: whether the kernel sandbox of DESIGN.md §4.1 is required, and extra writable roots.

Owns only the settings; building and applying the sandbox lives in `mermaid_cli.security.sandbox`
and is wired by the runner. `mode`:

- `auto` (default): every mode but `full_access` runs its commands in the sandbox; a kernel that
  cannot provide it stops the run with exit 2 before the first model call (fail closed).
- `on` (`--sandbox`): as `auto`, and `full_access` gets the `auto` policy too.
- `best-effort` (`--sandbox best-effort`): as `auto`, but a missing kernel feature is a warning
  (stderr and an `error` event `sandbox_degraded`) and commands run unconfined.
- `off` (`--sandbox off`): no sandbox; only the gate decides.

A project config may only tighten: `off` / `best-effort` and `writable_roots` from a project file
are ignored with a warning (config/loader.py).
"""

from typing import Literal

from pydantic import Field

from mermaid_cli.config.sections.base import Section
from mermaid_cli.core.defaults import empty_list

SandboxMode = Literal["auto", "on", "best-effort", "off"]


class SandboxSection(Section):
    mode: SandboxMode = Field(
        "auto",
        description="auto | on (also in full_access) | best-effort (warn when the kernel lacks it) | off.",
    )
    writable_roots: list[str] = Field(
        default_factory=empty_list,
        description="Extra directories sandboxed commands may write in ask/auto (absolute or ~).",
    )
    readable_roots: list[str] = Field(
        default_factory=empty_list,
        description="Extra directories sandboxed commands may read (toolchains outside system dirs).",
    )
