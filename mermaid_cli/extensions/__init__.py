"""Extensions: skills, plugin bundles, prompt commands and lifecycle hook events (the coming
issue). May import every layer below `run`.
"""
