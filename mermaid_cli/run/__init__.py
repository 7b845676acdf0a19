"""One run, assembled and driven: the runner (`runner`), output fan-out (`output`), the system
prompt (`prompt`, `instructions`), --output-schema (`structured`), the workspace diff
(`workspace_diff`) and `mermaid doctor`'s checks (`doctor`). Knows every concrete piece; imported
only by `cli`.
"""
