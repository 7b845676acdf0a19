"""Print the README's newcomer command number N (1: install and run the demo, 2: run the tests).

CI runs them exactly as written, so the README cannot drift from what a fresh machine can do.
They are the first two ```sh blocks of the README's "Quick start" section.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

text = Path(__file__).resolve().parents[1].joinpath("README.md").read_text(encoding="utf-8")
section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
blocks = re.findall(r"^```sh\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
index = int(sys.argv[1]) - 1
if len(blocks) < 2:
    sys.exit("ci: the README's Quick start must hold two ```sh blocks (install+demo, tests)")
print(blocks[index].strip())
