"""What the package ships so that the first run after an install does not build it (issue 23):

- `tools/tool_specs.json`: the default tool sets' spec entries (`run/shipped_specs.py`);
- `cli/generated_code.<python>.marshal`: the code `dataclasses`, `collections.namedtuple`, `typing`
  and `re` compile while every module of the package is imported and its pydantic models are
  built (`cli/generated_code.py`), for the Python that runs this.

    python -m mermaid_cli.cli.shipped          # rewrite both

`tests/test_spec_cache.py` and `tests/test_generated_code.py` fail until the files match the
sources: run this after changing a tool, its schema or its settings, or a dataclass, named tuple,
string annotation or regular expression of the package.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

#: the key under which the shipped generated code says what built it (never a real key: no
#: compile mode or regex flags are called this)
BUILT_WITH = "_built_with"

#: run in a fresh interpreter (nothing of the package imported yet): with the generated code
#: kept in argv[1], import every module of the package and build every deferred pydantic model
COLLECT = """
import importlib, pkgutil, sys
from pathlib import Path
from mermaid_cli.cli import generated_code
code = generated_code.install(Path(sys.argv[1]), shipped=None)
import mermaid_cli
for module in pkgutil.walk_packages(mermaid_cli.__path__, "mermaid_cli."):
    if not module.name.endswith("__main__"):
        importlib.import_module(module.name)
from pydantic import BaseModel
models, seen = [BaseModel], set()
while models:
    for model in models.pop().__subclasses__():
        if model not in seen:
            seen.add(model)
            models.append(model)
            if not model.__pydantic_complete__:
                model.model_rebuild()
code.save()
"""


def collect_generated_code() -> dict[tuple[str, str | bytes], bytes]:
    """The generated code entries (key -> marshalled code) importing the package compiles."""
    from mermaid_cli.cli.generated_code import _load

    with tempfile.TemporaryDirectory(prefix="mermaid-shipped-") as tmp:
        kept = Path(tmp) / "generated.marshal"
        subprocess.run([sys.executable, "-c", COLLECT, str(kept)], check=True, timeout=300)
        return _load(kept)


def render_generated_code() -> bytes:
    """The shipped generated code file's bytes (with what built it under BUILT_WITH)."""
    from pydantic.version import VERSION

    from mermaid_cli.cli.generated_code import dump

    entries = {(BUILT_WITH, built_by(VERSION)): b"", **collect_generated_code()}
    return dump(entries)


def built_by(pydantic_version: str) -> str:
    """What a shipped generated code file records of what built it: the code of pydantic's and
    the standard library's own dataclasses and named tuples is in it too."""
    return f"pydantic {pydantic_version}, python {sys.version.split()[0]}"


def built_with(path: Path) -> str | None:
    """What built a shipped generated code file (`built_by`), None when there is none."""
    from mermaid_cli.cli.generated_code import _load

    for kind, text in _load(path):
        if kind == BUILT_WITH:
            return str(text)
    return None


def main() -> int:
    from mermaid_cli.cli.generated_code import SHIPPED
    from mermaid_cli.run import shipped_specs
    from mermaid_cli.tools import spec_cache

    spec_cache.SHIPPED.write_bytes(shipped_specs.render())
    print(f"wrote {spec_cache.SHIPPED}", file=sys.stderr)
    SHIPPED.write_bytes(render_generated_code())
    print(f"wrote {SHIPPED}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
