"""The file, edit and search tools, by load group: each group imports only its own module, so a
run whose model calls `write_file` never imports the patch, edit or search code (~10 ms, issue 23).
`FILE_GROUPS` runs in this order; together they are the catalog, in the order the registry offers
it (`file_tools()`)."""

from __future__ import annotations

from collections.abc import Callable

from mermaid_cli.tools.base import Tool


def _read_write() -> list[Tool]:
    from mermaid_cli.tools.files import ReadFile, WriteFile

    return [ReadFile(), WriteFile()]


def _edit() -> list[Tool]:
    from mermaid_cli.tools.edit import EditFile

    return [EditFile()]


def _patch() -> list[Tool]:
    from mermaid_cli.tools.apply_patch import ApplyPatch

    return [ApplyPatch()]


def _delete_create() -> list[Tool]:
    from mermaid_cli.tools.files import CreateDirectory, DeleteFile

    return [DeleteFile(), CreateDirectory()]


def _search() -> list[Tool]:
    from mermaid_cli.tools.search import Glob, Grep

    return [Glob(), Grep()]


#: group name -> its tools (`run/assemble.tool_groups` and the spec cache load them one by one)
FILE_GROUPS: dict[str, Callable[[], list[Tool]]] = {
    "files": _read_write,
    "edit": _edit,
    "patch": _patch,
    "file_admin": _delete_create,
    "search": _search,
}


def file_tools() -> list[Tool]:
    return [tool for load in FILE_GROUPS.values() for tool in load()]
