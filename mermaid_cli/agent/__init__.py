"""The agent loop: provider turn -> policy gate -> tools -> results (`loop`), and context
compaction (`compaction`). Never prints, never imports click, rich or a vendor SDK. May import
`providers`, `tools`, `store`, `policy`, `config`, `security` and `core`.
"""
