"""A scripted countersign, for what a real one will not do on demand: fail
and then answer."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Call:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


def representation(version: int = 1, status: str = "pending", settled: bool = False, **overrides: Any) -> dict[str, Any]:
    """A request as GET /v1/requests/{ref} answers it."""
    r = {
        "id": "0c5b3a9e-5d1f-4f0e-8a43-9b2f1d7c6e10",
        "key": "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c",
        "key_short": "wa_d0290121a…634c", "status": status, "round": 1, "run_id": "r-7f3a", "step": 6,
        "tool": "billing.credit", "effect": {"amount_cents": 4200, "currency": "USD", "invoice": "inv_8841"},
        "summary": "Credit 42.00 USD", "reason": "", "requested_by": "billing-agent",
        "payload_hash": "sha256:" + "0" * 64, "created_at": "2026-01-02T03:04:05.123456789Z",
        "expires_at": "2026-01-05T03:04:05Z", "decision": None, "execution": None, "settled": settled,
        "version": version, "callback": None, "policy": {"verdict": "ask", "approvals": 1, "approvers": ["U1"], "tier": None,
                                                      "tier_name": "default", "version": "sha256:" + "1" * 64},
        "votes": [],
    }
    r.update(overrides)
    return r


Answer = Callable[[BaseHTTPRequestHandler], None]


def reply(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Answer:
    """An answer with a JSON body."""

    def answer(h: BaseHTTPRequestHandler) -> None:
        raw = json.dumps(body).encode() if body is not None else b""
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(raw)

    return answer


def refusal(status: int, code: str, **fields: Any) -> Answer:
    """countersign's error envelope."""
    return reply(status, {"error": {"code": code, "message": f"refused: {code}", "request_id": "req_" + "a" * 24, **fields}},
                 fields.pop("headers", None))


def hang_up(h: BaseHTTPRequestHandler) -> None:
    """Close the connection without an answer."""
    h.close_connection = True


class Fake:
    """An HTTP server that answers each call with the next scripted answer
    (the last one again once the script runs out) and records the calls."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.calls: list[Call] = []
        self.released = threading.Event()  # ends any answer that waits
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fake.calls.append(Call(self.command, self.path, dict(self.headers.items()), body))
                answer = fake.answers.pop(0) if len(fake.answers) > 1 else fake.answers[0]
                answer(self)

            do_GET = do_POST = handle_one

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stall(self, seconds: float) -> Answer:
        """An answer that comes only after seconds (or when released)."""

        def answer(h: BaseHTTPRequestHandler) -> None:
            self.released.wait(seconds)
            h.close_connection = True

        return answer

    def hold_for_wait(self, body: Any) -> Answer:
        """A long-poll's answer as countersign gives it when nothing
        changes: body, once the call's ?wait= has passed (or when released)."""

        def answer(h: BaseHTTPRequestHandler) -> None:
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(h.path).query)
            wait = query.get("wait", ["0s"])[0]
            seconds = int(wait[:-2]) / 1000 if wait.endswith("ms") else int(wait[:-1])
            self.released.wait(seconds)
            reply(200, body)(h)

        return answer

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
