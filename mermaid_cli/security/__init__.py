"""Security: secret redaction (`redact`), the environment child processes get (`childenv`),
provider keys from the environment and the OS keyring (`keys`), and the kernel sandbox
(`sandbox/`). May import `core` and `config` only.
"""
