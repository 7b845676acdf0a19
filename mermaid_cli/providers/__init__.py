"""Model providers. Concrete clients are imported lazily by `create_provider`."""
