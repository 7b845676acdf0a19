"""The terminal view: a run's progress, approvals and transcripts rendered with `rich` on stderr
for a person at a TTY (docs/terminal.md). Only `output.py` and `cli/sessions.py` import it, and
only once they know a TTY view is wanted: `rich` stays out of CI runs, `--help` and `--version`.
This package file itself imports nothing.
"""
