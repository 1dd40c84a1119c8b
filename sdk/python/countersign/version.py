"""The version of this package, sent in every call's User-Agent."""

__version__ = "0.2.0.dev0"
