"""Gated functions against a real countersign (tests/local_server.py): the
agent-executed tool sdk.payout, decided with countersign approve and
reject, its writes made to a provider that checks their receipts, and a
process killed between its write and the write's report."""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
import uuid
from pathlib import Path

from countersign import (
    AsyncClient, Client, CountersignError, GatedResult, Journal, NotApprovedError, NotFoundError, Outcome,
    RejectedError, WaitTimeout, WriteFailedError, intent_key,
)
from countersign.canonical import dumps
from countersign.gated import MAX_OUTCOME_FIELD, failed, succeeded
from countersign.receipt import EffectError, OtherKeyError, fetch_verifier
from countersign.testing import LocalReviewError, approve

from .gated_child import PAYOUT
from .local_server import TOKEN, AgentProvider, Relay, Server

server: Server
provider: AgentProvider
SDK = Path(__file__).resolve().parents[1]


def setUpModule():
    global server, provider
    server = Server()
    try:
        provider = AgentProvider(server.url + "/.well-known/jwks.json", "sdk.payout")
    except BaseException:
        server.close()
        raise


def tearDownModule():
    provider.close()
    server.close()


def run_id():
    return f"run-{uuid.uuid4()}"


def pay(effect, receipt, key):
    """The write an agent makes itself: the effect to the provider, with the
    key and the receipt."""
    write = urllib.request.Request(provider.url + "/payouts", data=dumps(effect).encode(), method="POST", headers={
        "Content-Type": "application/json", "Idempotency-Key": key, "Countersign-Receipt": receipt})
    with urllib.request.urlopen(write, timeout=10) as resp:
        return json.loads(resp.read())["id"]


def writes_of(key):
    return [w for w in provider.writes if w.key == key]


class GatedTest(unittest.TestCase):
    def setUp(self):
        self.client = Client(server.url, TOKEN, timeout=10)
        self.journal = tempfile.TemporaryDirectory(prefix="countersign-journal-")
        self.addCleanup(self.journal.cleanup)
        self.calls = []

    def gate(self, fn=None, tool="sdk.payout"):
        def counted(effect, receipt, key):
            self.calls.append((effect, receipt, key))
            return (fn or (lambda e, r, k: {"provider_ref": pay(e, r, k), "detail": "paid"}))(effect, receipt, key)

        return self.client.gated(tool, journal_dir=self.journal.name, timeout=30)(counted)

    def approved(self, run, effect=PAYOUT, tool="sdk.payout"):
        req = self.client.request(tool=tool, run_id=run, step=1, effect=effect)
        server.approve(req)
        return req

    def test_runs_once_after_approval_with_a_receipt_the_provider_verifies(self):
        run = run_id()
        payout = self.gate()
        key = intent_key(run, 1, "sdk.payout", PAYOUT)

        def approve_once_asked():
            # The reviewer, once the gated call has asked.
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                try:
                    server.approve(self.client.get(key))
                    return
                except NotFoundError:
                    time.sleep(0.02)  # polling for the request, not waiting for an event

        reviewer = threading.Thread(target=approve_once_asked)
        reviewer.start()
        self.addCleanup(reviewer.join)
        result = payout(run, 1, PAYOUT, summary="Pay v_12 42.00")
        self.assertIsInstance(result, GatedResult)
        self.assertTrue(result.called)
        self.assertEqual(len(self.calls), 1)
        effect, receipt, got_key = self.calls[0]
        self.assertEqual((effect, got_key), (PAYOUT, key))
        # The provider took the write: its receipt approves this body, key and tool.
        [write] = writes_of(key)
        self.assertEqual(write.refusal, "")
        self.assertEqual(result.value, {"provider_ref": write.id, "detail": "paid"})
        self.assertEqual(result.outcome, Outcome("succeeded", result.value["provider_ref"], "paid"))
        req = result.request
        self.assertEqual((req.status, req.summary, req.settled), ("approved", "Pay v_12 42.00", True))
        self.assertEqual((req.execution.state, req.execution.provider_ref), ("succeeded", result.value["provider_ref"]))
        self.assertEqual(req.receipt, receipt)
        # Checked apart from the provider, with the JWKS countersign serves.
        verifier = fetch_verifier(server.url + "/.well-known/jwks.json")
        claims = verifier.verify(receipt, key=key, tool="sdk.payout", body=write.body)
        self.assertEqual((claims.agent, claims.decided_by, claims.via), ("sdk-agent", "local:reviewer", "human"))
        self.assertEqual(claims.effect_sha256, req.payload_hash.removeprefix("sha256:"))
        changed = write.body.replace(b"4200", b"4201")
        self.assertEqual(len(changed), len(write.body))
        with self.assertRaises(EffectError):
            verifier.verify(receipt, key=key, tool="sdk.payout", body=changed)
        with self.assertRaises(OtherKeyError):
            verifier.verify(receipt, key=intent_key(run, 2, "sdk.payout", PAYOUT), tool="sdk.payout", body=write.body)
        self.assertEqual(os.listdir(self.journal.name), [], "the reported outcome was not forgotten")

        # Called again, the recorded outcome: the function is not.
        again = payout(run, 1, PAYOUT)
        self.assertFalse(again.called)
        self.assertIsNone(again.value)
        self.assertEqual(again.outcome, Outcome("succeeded", result.value["provider_ref"]))
        self.assertEqual((len(self.calls), len(writes_of(key))), (1, 1))

    def test_an_edit_is_written_with_the_edited_effect_and_the_original_never(self):
        run = run_id()
        payout = self.gate()
        key = intent_key(run, 1, "sdk.payout", PAYOUT)
        edited = dict(PAYOUT, amount_cents=3100)
        edit_key = intent_key(run, 1, "sdk.payout", edited)

        def edit_once_asked():
            # The reviewer edits the amount, once the gated call has asked.
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                try:
                    server.edit(self.client.get(key), edited)
                    return
                except NotFoundError:
                    time.sleep(0.02)  # polling for the request, not waiting for an event

        reviewer = threading.Thread(target=edit_once_asked)
        reviewer.start()
        self.addCleanup(reviewer.join)
        result = payout(run, 1, PAYOUT)
        self.assertTrue(result.called)
        # The function got the approved edit: its effect, its key, its receipt.
        [(effect, receipt, got_key)] = self.calls
        self.assertEqual((effect, got_key), (edited, edit_key))
        [write] = writes_of(edit_key)
        self.assertEqual(write.refusal, "", "the provider refused the edit's receipt")
        self.assertEqual(writes_of(key), [], "the original was written")
        verifier = fetch_verifier(server.url + "/.well-known/jwks.json")
        self.assertEqual(verifier.verify(receipt, key=edit_key, tool="sdk.payout", body=write.body).decided_by,
                         "local:reviewer")
        with self.assertRaises(OtherKeyError):
            verifier.verify(receipt, key=key, tool="sdk.payout", body=write.body)
        # The outcome is the edit's; the original stays edited, unwritten.
        req = result.request
        self.assertEqual((req.key, req.supersedes, req.edited_from), (edit_key, key, (key,)))
        self.assertEqual((req.execution.state, req.execution.provider_ref), ("succeeded", write.id))
        original = self.client.get(key)
        self.assertEqual((original.status, original.superseded_by, original.receipt), ("edited", edit_key, None))
        # Called again with the agent's effect: the edit's recorded outcome.
        again = payout(run, 1, PAYOUT)
        self.assertFalse(again.called)
        self.assertEqual((again.request.key, again.outcome.provider_ref), (edit_key, write.id))
        self.assertEqual((len(self.calls), len(writes_of(edit_key))), (1, 1))

    def test_a_rejection_raises_its_reason_and_calls_nothing(self):
        run = run_id()
        req = self.client.request(tool="sdk.payout", run_id=run, step=1, effect=PAYOUT)
        server.reject(req, "Vendor v_12 is not onboarded yet")
        with self.assertRaises(RejectedError) as caught:
            self.gate()(run, 1, PAYOUT)
        e = caught.exception
        self.assertEqual((e.reason, e.by, e.status, e.request.key), ("Vendor v_12 is not onboarded yet", "local:reviewer",
                                                                    "rejected", req.key))
        self.assertIn("new step", e.retry)
        self.assertIn("Vendor v_12 is not onboarded yet", str(e))
        self.assertIsInstance(e, NotApprovedError)
        self.assertEqual(self.calls, [])

    def test_a_cancelled_request_is_not_approved(self):
        run = run_id()
        req = self.client.request(tool="sdk.payout", run_id=run, step=1, effect=PAYOUT)
        self.client.cancel(req.id)
        with self.assertRaises(NotApprovedError) as caught:
            self.gate()(run, 1, PAYOUT)
        self.assertNotIsInstance(caught.exception, RejectedError)
        self.assertEqual(caught.exception.status, "cancelled")
        self.assertEqual(self.calls, [])

    def test_an_exception_is_reported_failed_and_raised_once(self):
        run = run_id()
        req = self.approved(run)

        def broken(effect, receipt, key):
            raise RuntimeError("the bank is down")

        payout = self.gate(broken)
        with self.assertRaisesRegex(RuntimeError, "the bank is down"):
            payout(run, 1, PAYOUT)
        self.assertEqual(self.client.get(req.id).execution.state, "failed")
        self.assertEqual(os.listdir(self.journal.name), [])
        with self.assertRaises(WriteFailedError) as caught:
            payout(run, 1, PAYOUT)
        self.assertEqual(caught.exception.request.key, req.key)
        self.assertEqual(len(self.calls), 1, "the failed write was made again")

    def test_a_journal_entry_is_reported_without_calling(self):
        # What a process that crashed after the function returned left.
        run = run_id()
        req = self.approved(run)
        Journal(self.journal.name).write(req.key, req.id, Outcome("succeeded", "payout_from_journal", "kept"))
        result = self.gate()(run, 1, PAYOUT)
        self.assertEqual((result.called, result.outcome.provider_ref), (False, "payout_from_journal"))
        self.assertEqual(self.calls, [])
        self.assertEqual(self.client.get(req.id).execution.provider_ref, "payout_from_journal")
        self.assertEqual(os.listdir(self.journal.name), [])

    def test_a_dispatched_tool_is_refused_before_calling(self):
        run = run_id()
        self.approved(run, {"text": "hello"}, "sdk.note")
        with self.assertRaisesRegex(CountersignError, "not an agent-executed tool"):
            self.gate(tool="sdk.note")(run, 1, {"text": "hello"})
        self.assertEqual(self.calls, [])

    def test_wait_for_decision(self):
        req = self.client.request(tool="sdk.payout", run_id=run_id(), step=1, effect=PAYOUT)
        with self.assertRaises(WaitTimeout) as caught:
            self.client.wait_for_decision(req.id, timeout=0.3)
        self.assertEqual(caught.exception.request.status, "pending")
        server.approve(req)
        decided = self.client.wait_for_decision(req.key, timeout=10)
        self.assertEqual((decided.status, decided.decided, decided.settled), ("approved", True, False))
        self.assertTrue(decided.receipt)
        reported = self.client.report_outcome(req.id, "succeeded", provider_ref="payout_by_hand")
        self.assertEqual((reported.settled, reported.execution.provider_ref), (True, "payout_by_hand"))
        # The same report again records nothing new.
        self.assertEqual(self.client.report_outcome(req.id, "succeeded", provider_ref="payout_by_hand").version,
                         reported.version)

    def test_approve_refusals_name_their_code(self):
        req = self.approved(run_id())
        with self.assertRaises(LocalReviewError) as caught:
            approve(req.key, binary=server.binary, env=server.env)
        self.assertEqual(caught.exception.code, "already_decided")
        with self.assertRaises(LocalReviewError) as caught:
            approve(req.id, as_="local:stranger", binary=server.binary, env=server.env)
        self.assertEqual(caught.exception.code, "not_approver")


class CrashTest(unittest.TestCase):
    """A real process, killed (SIGKILL) after its function returned and
    before countersign recorded the outcome, then run again."""

    def setUp(self):
        self.client = Client(server.url, TOKEN, timeout=10)
        self.relay = Relay(server)
        self.addCleanup(self.relay.close)
        self.journal = tempfile.TemporaryDirectory(prefix="countersign-journal-")
        self.addCleanup(self.journal.cleanup)

    def child(self, run):
        return [sys.executable, "-W", "error", "-m", "tests.gated_child", self.relay.url, run, self.journal.name,
                provider.url]

    def kill_once_held(self, run, key):
        """Run the child until the relay holds its report, then kill it."""
        child = subprocess.Popen(self.child(run), cwd=SDK, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            self.assertTrue(self.relay.held.wait(30), "the child reported no outcome")
            self.assertEqual(len(writes_of(key)), 1, "the provider did not see the write")
        finally:
            child.kill()
            out, err = child.communicate()
        self.assertEqual(child.returncode, -9, err)
        self.assertEqual(out, b"", "the child finished before it was killed")

    def rerun(self, run):
        done = subprocess.run(self.child(run), cwd=SDK, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        return json.loads(done.stdout)

    def test_killed_before_the_report_reports_on_the_next_run(self):
        run = run_id()
        req = self.client.request(tool="sdk.payout", run_id=run, step=1, effect=PAYOUT)
        server.approve(req)
        self.relay.hold_outcomes = "before"
        self.kill_once_held(run, req.key)
        self.assertEqual(len(os.listdir(self.journal.name)), 1, "the outcome was not in the journal before its report")
        self.assertEqual(self.client.get(req.id).execution.state, "ready", "an outcome was recorded")

        self.relay.hold_outcomes = None
        again = self.rerun(run)
        [write] = writes_of(req.key)
        provider_ref = write.id
        self.assertEqual(again, {"called": False, "status": "succeeded", "provider_ref": provider_ref, "value": None})
        self.assertEqual(len(writes_of(req.key)), 1, "the provider was called again")
        recorded = self.client.get(req.id)
        self.assertEqual((recorded.settled, recorded.execution.state, recorded.execution.provider_ref),
                         (True, "succeeded", provider_ref))
        self.assertEqual(os.listdir(self.journal.name), [])

    def test_killed_after_the_report_landed_with_the_journal_gone(self):
        run = run_id()
        req = self.client.request(tool="sdk.payout", run_id=run, step=1, effect=PAYOUT)
        server.approve(req)
        self.relay.hold_outcomes = "after"
        self.kill_once_held(run, req.key)
        for name in os.listdir(self.journal.name):
            os.unlink(os.path.join(self.journal.name, name))
        self.assertEqual(self.client.get(req.id).execution.state, "succeeded")

        self.relay.hold_outcomes = None
        again = self.rerun(run)
        self.assertEqual((again["called"], again["status"]), (False, "succeeded"))
        self.assertEqual(len(writes_of(req.key)), 1, "the provider was called again")


class AsyncGatedTest(unittest.IsolatedAsyncioTestCase):
    async def test_an_async_function_runs_once_after_approval(self):
        client = AsyncClient(server.url, TOKEN, timeout=10)
        journal = tempfile.TemporaryDirectory(prefix="countersign-journal-")
        self.addCleanup(journal.cleanup)
        calls = []

        @client.gated("sdk.payout", journal_dir=journal.name)
        async def payout(effect, receipt, key):
            calls.append(key)
            return await asyncio.to_thread(pay, effect, receipt, key)

        run = run_id()
        req = await client.request(tool="sdk.payout", run_id=run, step=1, effect=PAYOUT)
        await asyncio.to_thread(server.approve, req)
        result = await payout(run, 1, PAYOUT)
        self.assertTrue(result.called)
        self.assertEqual(result.outcome.provider_ref, result.value)
        self.assertEqual([w.refusal for w in writes_of(req.key)], [""])
        self.assertEqual((await payout(run, 1, PAYOUT)).called, False)
        self.assertEqual(calls, [req.key])
        self.assertEqual((await client.get(req.id)).execution.state, "succeeded")

        other = await client.request(tool="sdk.payout", run_id=run, step=2, effect=PAYOUT)
        await asyncio.to_thread(server.reject, other, "Twice in one run")
        with self.assertRaises(RejectedError) as caught:
            await payout(run, 2, PAYOUT)
        self.assertEqual(caught.exception.reason, "Twice in one run")
        self.assertEqual(calls, [req.key])


class OutcomeTest(unittest.TestCase):
    def test_what_a_return_value_reports(self):
        self.assertEqual(succeeded("pay_1"), Outcome("succeeded", "pay_1"))
        self.assertEqual(succeeded({"provider_ref": 7, "detail": "ok", "other": 1}), Outcome("succeeded", "7", "ok"))
        self.assertEqual(succeeded(None), Outcome("succeeded"))
        self.assertEqual(succeeded(42), Outcome("succeeded"))
        self.assertEqual(failed(ValueError("bad")), Outcome("failed", None, "bad"))
        self.assertEqual(failed(KeyError()), Outcome("failed", None, "KeyError"))
        long = failed(RuntimeError("é" * MAX_OUTCOME_FIELD)).detail
        self.assertEqual((len(long.encode()), long[-1]), (MAX_OUTCOME_FIELD, "é"))

    def test_the_journal(self):
        with tempfile.TemporaryDirectory() as d:
            journal = Journal(Path(d, "nested"))
            key = "client/key:1"
            self.assertIsNone(journal.read(key))
            journal.write(key, "ref-1", Outcome("failed", None, "down"))
            self.assertEqual(journal.read(key), Outcome("failed", None, "down"))
            [name] = os.listdir(journal.directory)
            self.assertRegex(name, r"^[0-9a-f]{64}\.json$")
            journal.write(key, "ref-1", Outcome("succeeded", "p"))
            self.assertEqual(journal.read(key), Outcome("succeeded", "p"))
            self.assertEqual(os.listdir(journal.directory), [name], "a temporary file was left")
            self.assertIsNone(journal.read("another-key"))
            journal.delete(key)
            journal.delete(key)
            self.assertIsNone(journal.read(key))
            # An entry that cannot be read stops the call: the function is not run again.
            journal.path(key).write_text(json.dumps({"key": "another", "status": "succeeded"}))
            with self.assertRaises(ValueError):
                journal.read(key)
            journal.path(key).write_text("{")
            with self.assertRaises(ValueError):
                journal.read(key)


if __name__ == "__main__":
    unittest.main()
