"""A real countersign for the tests: the binary built from this repository,
serving on the embedded store with a configuration of its own, a provider
its dispatches reach, a provider agents write to themselves with receipts,
and countersign approve and reject (countersign.testing) to decide with."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from countersign import SignatureError, testing, verify_signature
from countersign.receipt import ReceiptError, fetch_verifier

from .shared import REPO

TOKEN = "sdk-python-agent-token"
DISPATCH_SECRET = "sdk-python-dispatch-secret"
#: The token of an agent whose requests' news is posted back to it.
CALLBACK_TOKEN = "sdk-python-callback-agent-token"
CALLBACK_SECRET = "sdk-python-callback-secret"
REVIEWER = "local:reviewer"


@dataclass
class Callback:
    """A callback the agent's endpoint received, and whether its signature held."""

    delivery: str
    event: str
    body: bytes
    verified: bool


@dataclass
class Dispatch:
    """A write the provider received, and whether its signature held."""

    key: str
    path: str
    body: bytes
    signature: str
    verified: bool


class Provider:
    """The tools' provider: it checks each dispatch's v2 signature, records
    it and answers 201. On /callbacks it is the callback agent's endpoint:
    it checks the callback's v2 signature, records it and answers 204."""

    def __init__(self) -> None:
        self.dispatches: list[Dispatch] = []
        self.callbacks: list[Callback] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/callbacks":
                    self.callback(body)
                    return
                key, header = self.headers.get("Idempotency-Key", ""), self.headers.get("Countersign-Signature", "")
                try:
                    verify_signature(DISPATCH_SECRET, header, body, method=self.command, path=self.path.split("?")[0],
                                     idempotency_key=key)
                    verified = True
                except SignatureError:
                    verified = False
                provider.dispatches.append(Dispatch(key, self.path, body, header, verified))
                answer = json.dumps({"id": f"credit_{len(provider.dispatches)}"}).encode()
                self.send_response(201 if verified else 401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def callback(self, body: bytes) -> None:
                delivery = self.headers.get("Countersign-Delivery", "")
                try:
                    verify_signature(CALLBACK_SECRET, self.headers.get("Countersign-Signature", ""), body,
                                     method=self.command, path=self.path, delivery_id=delivery)
                    verified = True
                except SignatureError:
                    verified = False
                provider.callbacks.append(Callback(delivery, self.headers.get("Countersign-Event", ""), body, verified))
                self.send_response(204 if verified else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@dataclass
class AgentWrite:
    """A write an agent made itself, what the receipt check answered ("" for
    a receipt that approves it, else the refusal's code), and the id the
    provider answered."""

    key: str
    body: bytes
    receipt: str
    refusal: str
    id: str


class AgentProvider:
    """The provider of the agent-executed tool: it checks each write's
    Countersign-Receipt with the receipt verifier, against the JWKS of the
    countersign at jwks_url, records it, and answers 201 with an id, or 403
    with the refusal's code."""

    def __init__(self, jwks_url: str, tool: str) -> None:
        self.writes: list[AgentWrite] = []
        self.lock = threading.Lock()
        self.verifier = fetch_verifier(jwks_url)
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    provider.verifier.verify_request(self.headers, body, tool)
                    refusal = ""
                except ReceiptError as e:
                    refusal = e.code
                with provider.lock:
                    write = AgentWrite(self.headers.get("Idempotency-Key", ""), body,
                                       self.headers.get("Countersign-Receipt", ""), refusal,
                                       f"payout_{len(provider.writes) + 1}")
                    provider.writes.append(write)
                answer = json.dumps({"id": write.id, "refusal": refusal}).encode()
                self.send_response(403 if refusal else 201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def binary(workdir: Path) -> Path:
    """The countersign binary: COUNTERSIGN_BIN when the caller built it
    (make test's Go test does), else built here."""
    given = os.environ.get("COUNTERSIGN_BIN")
    if given:
        return Path(given)
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("building countersign needs go on PATH (or set COUNTERSIGN_BIN to a built binary)")
    out = workdir / "countersign"
    subprocess.run([go, "build", "-o", str(out), "./cmd/countersign"], cwd=REPO, check=True)
    return out


CONFIG = """\
agents:
  - name: sdk-agent
    token_sha256: {token_sha256}
  - name: sdk-callback-agent
    token_sha256: {callback_token_sha256}
    callback: {{url: "{provider}/callbacks", secret: "{callback_secret}"}}
callbacks: {{poll: 100ms, retry_base: 100ms}}
tools:
  sdk.credit:
    approvers: [{reviewer}]
    description: Credit an invoice, in cents.
    dispatch: {{method: POST, url: "{provider}/credits", timeout: 5s, secret: "{secret}"}}
    effect_schema:
      type: object
      required: [invoice, amount_cents, currency]
      additionalProperties: false
      properties:
        invoice: {{type: string, pattern: "^inv_[A-Za-z0-9]+$"}}
        amount_cents: {{type: integer, minimum: 1}}
        currency: {{enum: [USD, EUR]}}
    tiers:
      - {{name: frozen-invoice, when: {{field: invoice, eq: inv_frozen}}, deny: "Credits to a frozen invoice are never sent."}}
      - {{name: small, when: {{field: amount_cents, lte: 100}}, approvals: 0}}
  sdk.note:
    approvers: [{reviewer}]
    dispatch: {{method: POST, url: "{provider}/notes", timeout: 5s, secret: "{secret}"}}
  sdk.payout:
    approvers: [{reviewer}]
    description: Pay out to a vendor; the agent makes the write itself.
    execute: agent
    effect_schema:
      type: object
      required: [vendor, amount_cents]
      properties:
        vendor: {{type: string}}
        amount_cents: {{type: integer, minimum: 1}}
"""


class Server:
    """countersign serve, started for the tests and stopped after them."""

    def __init__(self) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="countersign-sdk-python-")
        self.workdir = Path(self.dir.name)
        self.provider = Provider()
        config = self.workdir / "countersign.yml"
        config.write_text(CONFIG.format(token_sha256=_sha256(TOKEN), callback_token_sha256=_sha256(CALLBACK_TOKEN),
                                        reviewer=REVIEWER, provider=self.provider.url, secret=DISPATCH_SECRET,
                                        callback_secret=CALLBACK_SECRET))
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("COUNTERSIGN_", "SLACK_"))}
        self.env.update(COUNTERSIGN_CONFIG=str(config), COUNTERSIGN_DATA_DIR=str(self.workdir / "data"),
                        COUNTERSIGN_LISTEN="127.0.0.1:0", COUNTERSIGN_LOG_FORMAT="json",
                        # No load balancer to drain from: stop at once.
                        COUNTERSIGN_DRAIN_DELAY="0s")
        self.binary = binary(self.workdir)
        self.starts = 0
        self.process: subprocess.Popen[bytes] | None = None
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        """Start serve on the data directory, with a log of its own."""
        self.starts += 1
        self.log_path = self.workdir / f"serve-{self.starts}.log"
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen([str(self.binary), "serve"], env=self.env, stdin=subprocess.DEVNULL,
                                        stdout=self.log, stderr=subprocess.STDOUT)
        self.url = self._wait_for_start()

    def kill_and_restart(self) -> None:
        """kill -9 serve, then start it again on the same data: what a crash
        and a supervisor's restart do. Its address changes."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        self.log.close()
        self._start()

    def _wait_for_start(self) -> str:
        """serve's address, from its log, once it listens."""
        assert self.process is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for line in self.log_path.read_text(errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if entry.get("msg") == "listening":
                    return "http://" + entry["addr"]
            if self.process.poll() is not None:
                raise RuntimeError(f"countersign serve exited {self.process.returncode}:\n{self.logs()}")
            time.sleep(0.02)  # polling serve's log, not waiting for an event
        raise RuntimeError(f"countersign serve did not start:\n{self.logs()}")

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")

    def approve(self, request: Any, as_: str | None = None) -> str:
        """Approve request as the reviewer, with countersign approve."""
        return testing.approve(request, as_, **self._local())

    def reject(self, request: Any, reason: str | None = None) -> str:
        """Reject request as the reviewer, with countersign reject."""
        return testing.reject(request, reason, **self._local())

    def edit(self, request: Any, effect: Any) -> str:
        """Approve request with its effect changed, as the reviewer, with
        countersign edit."""
        return testing.edit(request, effect, **self._local())

    def _local(self) -> dict[str, Any]:
        return {"binary": self.binary, "env": self.env}

    def close(self) -> None:
        if self.process is None:
            self.provider.close()
            self.dir.cleanup()
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        self.provider.close()
        self.dir.cleanup()


def _sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Relay:
    """An HTTP relay in front of a Server, so a test can crash the server
    between storing a request and answering it: after serve answers, the
    relay kills and restarts it, then drops the client's connection
    unanswered. Every body it relays is kept, to show a retry sent the same
    bytes."""

    def __init__(self, server: Server) -> None:
        self.bodies: list[tuple[str, bytes]] = []
        self.crash_before_next_answer = False
        #: "before": hold each POST .../outcome unsent, unanswered; "after":
        #: send it to serve, then hold its answer. held is set once one is
        #: held; close() releases them, answering none.
        self.hold_outcomes: str | None = None
        self.held = threading.Event()
        self.released = threading.Event()
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self.relay()

            def do_POST(self) -> None:
                self.relay()

            def relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                relay.bodies.append((f"{self.command} {self.path}", body))
                hold = relay.hold_outcomes if self.command == "POST" and self.path.endswith("/outcome") else None
                if hold == "before":
                    self.hold()
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream = urllib.request.Request(server.url + self.path, data=body if self.command == "POST" else None,
                                                  headers=headers, method=self.command)
                try:
                    with urllib.request.urlopen(upstream, timeout=90) as resp:
                        status, answer, answer_headers = resp.status, resp.read(), resp.headers
                except urllib.error.HTTPError as e:
                    with e:
                        status, answer, answer_headers = e.code, e.read(), e.headers
                if hold == "after":
                    self.hold()
                    return
                if relay.crash_before_next_answer:
                    relay.crash_before_next_answer = False
                    server.kill_and_restart()
                    self.close_connection = True
                    return
                self.send_response(status)
                for name, value in answer_headers.items():
                    if name.lower() not in ("content-length", "connection", "date", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def hold(self) -> None:
                relay.held.set()
                relay.released.wait()
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
