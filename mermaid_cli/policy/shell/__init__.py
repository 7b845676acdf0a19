"""The shell command classifier. `parse` is a parser for POSIX shell; `risk` the risk order, the
verdict a rule raises and the `Walker` interface rules see; `words` argv helpers and GNU-style
option parsing; `wrappers` the wrappers the walker looks through (`sudo`, `env`, `xargs`…);
`rules` the program table (program → rule), assembled from `file_rules` (with the `sed` script
reader), `git_rules` and `dev_rules`; and `classifier` the walker that applies them segment by
segment (the public API). Imports flow one way: classifier → rules → *_rules → wrappers → words →
parse, and everything → risk; nothing imports the classifier.
"""
