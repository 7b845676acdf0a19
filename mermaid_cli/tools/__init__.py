"""Tools the model calls. Each tool is a small module with a pydantic argument model."""
