"""The shell command classifier: a parser for POSIX shell (`parse`), the per-program rules
(`rules`) and the classifier that walks a command line segment by segment (`classifier`).
"""
