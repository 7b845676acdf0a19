"""Mermaid: a headless coding agent for CI."""

__version__ = "0.1.0"
