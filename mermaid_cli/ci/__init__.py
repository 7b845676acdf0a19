"""The GitHub Action's runtime (action.yml): the permission gate and the sticky PR/issue comment.

Owned here: a small GitHub REST client (`github`), who may start a run (`gate`), and the one
comment a run keeps up to date (`comment`); `python -m mermaid_cli.ci` is the steps' entry point.

Stdlib only and importing nothing else from `mermaid_cli`: the gate runs before Mermaid is
installed (action.yml puts the action's checkout on PYTHONPATH for it), and nothing here may
reach the agent's code or its provider keys. It is the top of the layers, beside `cli`.
"""
