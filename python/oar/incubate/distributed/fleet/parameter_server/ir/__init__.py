"""Parameter-server program helpers."""
