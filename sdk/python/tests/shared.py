"""What several tests read: the repository's shared files."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

#: The repository's root (this file is sdk/python/tests/shared.py).
REPO = Path(__file__).resolve().parents[3]


class Literal(Decimal):
    """A JSON number with a fraction or an exponent, kept as written: the
    package sends a Decimal as str() writes it, and this one's str() is the
    literal, so the server's rules apply to the very text of the vector."""

    _literal: str

    def __new__(cls, literal: str) -> "Literal":
        number = super().__new__(cls, literal)
        number._literal = literal
        return number

    def __str__(self) -> str:
        return self._literal


def load_json(relative: str) -> Any:
    """Read a repository file, its integers as int and its other numbers as
    Literal, so nothing is rounded on the way in."""
    with open(REPO / relative, encoding="utf-8") as f:
        return json.load(f, parse_float=Literal)
