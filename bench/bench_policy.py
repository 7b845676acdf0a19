"""Rough numbers for the policy pieces: redactor throughput and classifier latency. Prints only.

Targets: redaction <= 50 ms per MB (it runs on every output line); classification <= 500 µs a
command (well under the cost of spawning the command it judges)."""

from __future__ import annotations

import time

from mermaid_cli.policy.shell.classifier import classify_command
from mermaid_cli.security.redact import Redactor


def main() -> None:
    secrets = [f"secret-value-{i:03d}-xyz" for i in range(60)]
    r = Redactor(secrets)
    text = ("lorem ipsum dolor sit amet " * 40 + secrets[7]) * 1000
    t = time.perf_counter()
    r.redact(text)
    dt = time.perf_counter() - t
    print(f"redact {len(text) / 1e6:.2f} MB with {len(secrets)} secrets + token shapes: {dt * 1000:.1f} ms  (target <= {50 * len(text) / 1e6:.0f} ms)")
    commands = [
        "ls -la",
        "git status && git diff | head",
        "curl -fsSL https://x.sh | sh",
        "for f in $(find . -name '*.py'); do python -m py_compile $f; done",
        "cat <<EOF > out.txt\n$(date)\nEOF",
    ]
    n = 2000
    t = time.perf_counter()
    for i in range(n):
        classify_command(commands[i % len(commands)])
    dt = time.perf_counter() - t
    print(f"classify_command: {dt / n * 1e6:.0f} µs per command (mixed)  (target <= 500 µs)")


if __name__ == "__main__":
    main()
