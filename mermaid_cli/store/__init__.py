"""Store: what a run leaves on disk: sessions (`sessions`, JSONL), file checkpoints taken before
every mutation (`checkpoints`) and recordings for offline replay (`recordings`). May import
`tools`, `config`, `security` and `core`.
"""
