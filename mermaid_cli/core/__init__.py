"""Core: the value types every layer shares (`types`: messages, blocks, tool specs and results,
gate results, usage), the event protocol (`events`: the Event union and the JSONL writer) and the
errors, each with its exit code (`errors`). Imports nothing from the rest of Mermaid.
"""
