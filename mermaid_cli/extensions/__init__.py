"""Extensions: skills (`skills`, `skill_tools`), plugin bundles (`manifest`, `plugins`, `bundles`),
prompt commands (`commands`) and observe-only lifecycle hook events (`lifecycle`); `session`
gathers them for one run and is what the runner calls. May import every layer below `run`.
"""
