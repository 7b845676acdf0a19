"""The shell command classifier. `parse` is a parser for POSIX shell; `risk` the risk order, the
verdict a rule raises and the `Walker` interface; `words` argv helpers and the wrappers the walker
looks through; `rules` and `dev_rules` the per-program rules as a table (program → rule); and
`classifier` the walker that applies them segment by segment (the public API). Imports flow one
way: classifier → rules → dev_rules → words → risk/parse.
"""
