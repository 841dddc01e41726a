"""The version of fastgt (one definition; pyproject.toml states it for packaging)."""

__version__ = "0.1.0"
