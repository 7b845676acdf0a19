"""The shell command classifier. `parse` is a parser for POSIX shell, building the `syntax` tree
from the `lexer` facts; `risk` the risk order, the verdict a rule raises and the `Walker`
interface rules see; `words` argv helpers and GNU-style option parsing; `wrappers` the wrappers
the walker looks through (`sudo`, `env`, `xargs`…); `rules` the program table (program → rule),
assembled from `file_rules` (with the `sed` script reader), `git_rules` and `dev_rules`;
`builtins` what bash does with words before a program runs; `walker` the walk that applies the
rules segment by segment; `result` its answer; and `classifier` the public API
(`classify_command`). Imports flow one way: classifier → walker → rules → *_rules → wrappers →
words → syntax, parse → lexer, syntax, and everything → risk; nothing imports the classifier.
"""
