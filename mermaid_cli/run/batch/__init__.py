"""Many tasks as one batch: `mermaid batch TASKS.jsonl` runs each task as a normal `mermaid exec`
in its own workspace (`workspace`), with a shared budget and a worst-exit-code verdict (`runner`);
`plan` splits a task list into shards for a CI matrix and `merge` joins the shards' results.

A batch never schedules across machines itself: the CI engine's matrix does (DESIGN.md §6). May
import `core`, `config` and `security`; runs each task as a child process, so it never imports the
agent loop.
"""
