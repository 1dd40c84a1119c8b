"""A real countersign for the tests: the binary built from this repository,
serving on the embedded store with a configuration of its own, a provider
its dispatches reach, and the review inbox to approve through."""

from __future__ import annotations

import hashlib
import http.cookiejar
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from countersign import SignatureError, verify_signature

from .shared import REPO

TOKEN = "sdk-python-agent-token"
DISPATCH_SECRET = "sdk-python-dispatch-secret"
REVIEWER = "local:reviewer"


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
    it and answers 201."""

    def __init__(self) -> None:
        self.dispatches: list[Dispatch] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
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
  sdk.note:
    approvers: [{reviewer}]
    dispatch: {{method: POST, url: "{provider}/notes", timeout: 5s, secret: "{secret}"}}
"""


class Server:
    """countersign serve, started for the tests and stopped after them."""

    def __init__(self) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="countersign-sdk-python-")
        workdir = Path(self.dir.name)
        self.provider = Provider()
        config = workdir / "countersign.yml"
        config.write_text(CONFIG.format(token_sha256=hashlib.sha256(TOKEN.encode()).hexdigest(), reviewer=REVIEWER,
                                        provider=self.provider.url, secret=DISPATCH_SECRET))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COUNTERSIGN_", "SLACK_"))}
        env.update(COUNTERSIGN_CONFIG=str(config), COUNTERSIGN_DATA_DIR=str(workdir / "data"),
                   COUNTERSIGN_LISTEN="127.0.0.1:0", COUNTERSIGN_LOG_FORMAT="json")
        self.log_path = workdir / "serve.log"
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen([str(binary(workdir)), "serve"], env=env, stdin=subprocess.DEVNULL,
                                        stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.url, entry = self._wait_for_start()
            self.browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
                                                       _NoRedirect)
            status, location = self._browse(entry)
            if status != 303:
                raise RuntimeError(f"the inbox's entry link answered {status}")
        except BaseException:
            self.close()
            raise

    def _wait_for_start(self) -> tuple[str, str]:
        """serve's address and the inbox's entry link, from its log."""
        deadline = time.monotonic() + 30
        url = entry = None
        while time.monotonic() < deadline:
            for line in self.log_path.read_text(errors="replace").splitlines():
                try:
                    entry_line = json.loads(line)
                except ValueError:
                    continue
                if entry_line.get("msg") == "listening":
                    url = "http://" + entry_line["addr"]
                elif "url" in entry_line and "/inbox/?token=" in entry_line["url"]:
                    entry = entry_line["url"]
            if url and entry:
                return url, entry
            if self.process.poll() is not None:
                raise RuntimeError(f"countersign serve exited {self.process.returncode}:\n{self.logs()}")
            time.sleep(0.02)  # polling serve's log, not waiting for an event
        raise RuntimeError(f"countersign serve did not start:\n{self.logs()}")

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")

    def _browse(self, url: str, form: dict[str, str] | None = None) -> tuple[int, str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        try:
            with self.browser.open(urllib.request.Request(url, data=data), timeout=10) as resp:
                return resp.status, ""
        except urllib.error.HTTPError as e:
            with e:
                return e.code, e.headers.get("Location", "")

    def approve(self, request: Any) -> None:
        """Approve request in the review inbox, as the reviewer would."""
        status, location = self._browse(self.url + "/inbox/decide", {
            "request_id": request.id, "round": str(request.round), "payload_hash": request.payload_hash,
            "verdict": "approve", "confirm": "yes"})
        if status != 303 or "notice=decided" not in location:
            raise AssertionError(f"the inbox's decision answered {status}, {location}")

    def close(self) -> None:
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


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None
