"""The `basic` server behind a line of junk on stdout that holds a key-shaped value: the SDK
logs a parse failure (with the offending input) before the real server answers."""

from __future__ import annotations

import os
import sys

sys.stdout.write('{"jsonrpc": "2.0", "leak": "sk-ant-JUNKJUNKJUNKJUNKJUNK0123", oops\n')
sys.stdout.flush()
here = os.path.dirname(os.path.abspath(__file__))
os.execv(sys.executable, [sys.executable, os.path.join(here, "basic.py")])
