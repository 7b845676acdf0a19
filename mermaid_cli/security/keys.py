"""API keys: the environment first, then the OS keyring (`mermaid login PROVIDER`).

A `[providers.NAME] api_key_env` is authoritative: that variable or nothing (no default variable,
no keyring). `MERMAID_NO_KEYRING=1` turns the keyring off (CI runners usually have none; probing
a missing Secret Service can be slow). `keyring` is imported only when it is consulted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

SERVICE = "mermaid"
KeySource = Literal["env", "keyring", "none"]


def keyring_enabled(env: Mapping[str, str]) -> bool:
    return env.get("MERMAID_NO_KEYRING", "").strip().lower() not in ("1", "true", "yes")


def _keyring():  # noqa: ANN202 - the keyring module
    try:
        import keyring
    except ImportError:
        return None
    return keyring


def keyring_get(provider: str, env: Mapping[str, str]) -> str | None:
    if not keyring_enabled(env):
        return None
    kr = _keyring()
    if kr is None:
        return None
    try:
        value = kr.get_password(SERVICE, provider)
    except Exception:  # noqa: BLE001 - no backend, locked store, dbus down: treat as absent
        return None
    return value or None


def env_key_name(env_vars: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The first of `env_vars` that holds a key (not blank): where `lookup_key` takes it from."""
    return next((name for name in env_vars if env.get(name, "").strip()), None)


def lookup_key(
    provider: str, env_vars: Sequence[str], env: Mapping[str, str], *, authoritative: bool = False
) -> tuple[str | None, KeySource]:
    """(key, source). `authoritative`: only `env_vars` count (a configured api_key_env)."""
    name = env_key_name(env_vars, env)
    if name is not None:
        return env[name].strip(), "env"
    if authoritative:
        return None, "none"
    stored = keyring_get(provider, env)
    return (stored, "keyring") if stored else (None, "none")


class KeyringUnavailable(Exception):
    pass


def login(provider: str, key: str, env: Mapping[str, str]) -> None:
    """Store `key` for `provider` in the OS keyring."""
    if not keyring_enabled(env):
        raise KeyringUnavailable("the keyring is disabled (MERMAID_NO_KEYRING=1)")
    kr = _keyring()
    if kr is None:
        raise KeyringUnavailable("the keyring package is not installed (pip install keyring)")
    try:
        kr.set_password(SERVICE, provider, key)
    except Exception as exc:  # noqa: BLE001
        raise KeyringUnavailable(f"cannot store the key in the OS keyring: {type(exc).__name__}") from None


def logout(provider: str, env: Mapping[str, str]) -> bool:
    """Remove the stored key; False when there was none."""
    if not keyring_enabled(env):
        raise KeyringUnavailable("the keyring is disabled (MERMAID_NO_KEYRING=1)")
    kr = _keyring()
    if kr is None:
        raise KeyringUnavailable("the keyring package is not installed (pip install keyring)")
    try:
        if kr.get_password(SERVICE, provider) is None:
            return False
        kr.delete_password(SERVICE, provider)
    except Exception as exc:  # noqa: BLE001
        raise KeyringUnavailable(f"cannot remove the key from the OS keyring: {type(exc).__name__}") from None
    return True
