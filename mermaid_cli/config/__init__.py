"""Config: the layered TOML loader with provenance (`loader`: defaults < user < profile < project
(tighten only) < --policy < -c < flags), one section model per `[table]` (`sections/`), and the
generated reference (`docs`). May import `core` only.
"""
