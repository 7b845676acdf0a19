"""A test server that crashes on start, before speaking MCP."""

import sys

sys.stderr.write("crash server: missing API token, giving up\n")
sys.stderr.flush()
sys.exit(3)
