"""The version of this package, sent in every call's User-Agent."""

__version__ = "0.1.0"
