"""Decide requests from an agent's tests, in a local run.

``approve`` and ``reject`` run ``countersign approve`` and ``countersign
reject`` (docs: ``countersign approve --help``), which decide as a
``local:`` reviewer through the ``countersign serve`` running on the same
data directory, over a Unix socket there: never the network, and never a
PostgreSQL deployment whose configuration names no local reviewer::

    from countersign.testing import approve, reject

    req = client.request(tool="billing.credit", run_id=run, step=1, effect=effect)
    approve(req)                                  # or approve(req.key), as_="local:alice"
    reject(other, reason="Wrong invoice")
    edit(third, {"invoice": "inv_7", "amount_cents": 900, "currency": "EUR"})

The binary is ``binary``, else $COUNTERSIGN_BIN, else ``countersign`` on
PATH. It reads the configuration and the data directory as serve does,
from the environment ($COUNTERSIGN_CONFIG, $COUNTERSIGN_DATA_DIR), or from
``config`` and ``data_dir`` when given; ``env`` replaces the environment
whole.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

from .canonical import dumps
from .errors import CountersignError

__all__ = ["LocalReviewError", "approve", "edit", "reject"]

#: The longest a decision may take, in seconds (the command's own bound is 30 s).
TIMEOUT = 60.0


class LocalReviewError(CountersignError):
    """countersign approve or reject refused, or could not run: ``code`` is
    the refusal's code when it gave one (already_decided, not_approver,
    not_found, ...), else ""; ``output`` is what it wrote on stderr."""

    def __init__(self, message: str, code: str = "", output: str = "") -> None:
        self.code = code
        self.output = output
        super().__init__(message)


def approve(ref: Any, as_: str | None = None, *, data_dir: str | os.PathLike[str] | None = None,
            config: str | os.PathLike[str] | None = None, binary: str | os.PathLike[str] | None = None,
            env: Mapping[str, str] | None = None) -> str:
    """Approve the request ref names (its id, its key, a prefix of its key,
    or a Request) as the local reviewer ``as_`` (by default the only one the
    configuration names). Returns the line the command printed; raises
    LocalReviewError when it refused."""
    args = ["approve"]
    if as_ is not None:
        args += ["--as", as_]
    return _run(args, ref, data_dir, config, binary, env)


def reject(ref: Any, reason: str | None = None, *, as_: str | None = None,
           data_dir: str | os.PathLike[str] | None = None, config: str | os.PathLike[str] | None = None,
           binary: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> str:
    """Reject the request ref names, with ``reason`` told to the agent, as
    approve() approves one."""
    args = ["reject"]
    if as_ is not None:
        args += ["--as", as_]
    if reason is not None:
        args += ["--reason", reason]
    return _run(args, ref, data_dir, config, binary, env)


def edit(ref: Any, effect: Mapping[str, Any], as_: str | None = None, *,
         data_dir: str | os.PathLike[str] | None = None, config: str | os.PathLike[str] | None = None,
         binary: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> str:
    """Approve the request ref names with its effect replaced by ``effect``
    (the whole edited effect), as a reviewer editing it in the console
    would, with ``countersign edit``: the edit becomes a new request with
    its own key, and the original settles as edited. Otherwise as
    approve()."""
    args = ["edit", "--effect", dumps(effect)]
    if as_ is not None:
        args += ["--as", as_]
    return _run(args, ref, data_dir, config, binary, env)


def find_binary(binary: str | os.PathLike[str] | None = None) -> str:
    """The countersign binary: binary, else $COUNTERSIGN_BIN, else
    countersign on PATH."""
    if binary is not None:
        return os.fspath(binary)
    given = os.environ.get("COUNTERSIGN_BIN")
    if given:
        return given
    found = shutil.which("countersign")
    if found is None:
        raise LocalReviewError("countersign.testing: no countersign binary: pass binary=, set COUNTERSIGN_BIN, "
                               "or put countersign on PATH")
    return found


_CODE = re.compile(r"countersign (?:approve|reject|edit): ([a-z_]+): ")


def _run(args: list[str], ref: Any, data_dir: str | os.PathLike[str] | None, config: str | os.PathLike[str] | None,
         binary: str | os.PathLike[str] | None, env: Mapping[str, str] | None) -> str:
    ref_text = ref if isinstance(ref, str) else getattr(ref, "id", None)
    if not isinstance(ref_text, str) or not ref_text:
        raise TypeError(f"ref must be a request's id or key, or a Request, not {ref!r}")
    environment = dict(os.environ if env is None else env)
    if data_dir is not None:
        environment["COUNTERSIGN_DATA_DIR"] = os.fspath(data_dir)
    if config is not None:
        environment["COUNTERSIGN_CONFIG"] = os.fspath(config)
    # "--" ends the flags: a ref is never read as one.
    command = [find_binary(binary), *args, "--", ref_text]
    try:
        done = subprocess.run(command, env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LocalReviewError(f"countersign.testing: {' '.join(command[:2])}: {e}") from e
    if done.returncode != 0:
        output = done.stderr.strip()
        m = _CODE.match(output)
        raise LocalReviewError(output or f"countersign {args[0]} exited {done.returncode}", m.group(1) if m else "",
                               done.stderr)
    return done.stdout.strip()
