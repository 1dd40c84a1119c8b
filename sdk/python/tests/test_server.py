"""The SDK against a real countersign (tests/local_server.py): nothing here
is scripted; the server answers as it answers agents."""

import asyncio
import dataclasses
import itertools
import json
import time
import unittest
import uuid
from decimal import Decimal

from countersign import (
    AlreadyDecidedError, AsyncClient, CallbackNotConfiguredError, Client, DeniedByPolicyError, InvalidEffectError, InvalidKeyError,
    InvalidRequestError, KeyReusedError, NotFoundError, NumberError, Request, SignatureError, UnauthorizedError,
    UnknownToolError, WaitTimeout, intent_key, verify_signature,
)
from countersign.calls import get
from countersign.canonical import canonical, dumps
from countersign.testing import LocalReviewError
from countersign.transport import Call

from .local_server import CALLBACK_SECRET, CALLBACK_TOKEN, DISPATCH_SECRET, TOKEN, Relay, Server
from .shared import load_json

server: Server
steps = itertools.count(1)


def setUpModule():
    global server
    server = Server()


def tearDownModule():
    server.close()


def run_id():
    return f"run-{uuid.uuid4()}"


CREDIT = {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}


class ServerTest(unittest.TestCase):
    def setUp(self):
        self.client = Client(server.url, TOKEN, timeout=10)

    def test_request_approve_wait_succeeded(self):
        run = run_id()
        req = self.client.request(tool="sdk.credit", run_id=run, step=6, effect=CREDIT, summary="Credit 42.00 USD")
        self.assertEqual((req.status, req.settled, req.replayed), ("pending", False, False))
        self.assertEqual(req.key, intent_key(run, 6, "sdk.credit", CREDIT))
        self.assertEqual(req.policy.approvers, ("local:reviewer",))
        server.approve(req)
        done = self.client.wait(req.key, timeout=30)
        self.assertTrue(done.settled)
        self.assertTrue(done.succeeded, done)
        self.assertEqual((done.status, done.decision.verdict, done.decision.via), ("approved", "approve", "cli"))
        self.assertGreater(done.version, req.version)
        # The provider got the write once, under the offline key, signed.
        dispatches = [d for d in server.provider.dispatches if d.key == req.key]
        self.assertEqual(len(dispatches), 1)
        d = dispatches[0]
        self.assertTrue(d.verified, "the dispatch's v2 signature did not verify")
        self.assertEqual(d.body, canonical(CREDIT).encode())
        with self.assertRaises(SignatureError):  # v2 covers the path
            verify_signature(DISPATCH_SECRET, d.signature, d.body, method="POST", path="/other", idempotency_key=d.key)

    def test_a_write_the_policy_denies_is_refused_on_every_post_and_never_sent(self):
        run = run_id()
        frozen = {**CREDIT, "invoice": "inv_frozen"}
        for post in (1, 2):
            with self.subTest(post=post), self.assertRaises(DeniedByPolicyError) as caught:
                self.client.request_and_wait(tool="sdk.credit", run_id=run, step=1, effect=frozen, timeout=30)
            e = caught.exception
            self.assertEqual((e.status, e.tier, e.key), (403, "frozen-invoice", intent_key(run, 1, "sdk.credit", frozen)))
            self.assertIn("Credits to a frozen invoice are never sent.", e.message)
        req = self.client.get(e.key)
        self.assertEqual((req.status, req.settled, req.decision.by, req.decision.via, req.decision.reason),
                         ("rejected", True, "policy:frozen-invoice", "policy", "Credits to a frozen invoice are never sent."))
        self.assertEqual((req.policy.verdict, req.policy.tier_name, req.policy.approvals), ("deny", "frozen-invoice", 0))
        self.assertEqual([d for d in server.provider.dispatches if d.key == e.key], [])

    def test_a_write_the_policy_allows_is_written_without_a_review(self):
        small = {**CREDIT, "amount_cents": 42}
        done = self.client.request_and_wait(tool="sdk.credit", run_id=run_id(), step=1, effect=small, timeout=30)
        self.assertTrue(done.succeeded, done)
        self.assertEqual((done.status, done.decision.by, done.decision.via), ("approved", "policy:small", "policy"))
        p = done.policy
        self.assertEqual((p.verdict, p.tier_name, p.approvals), ("allow", "small", 0))
        self.assertTrue(p.version.startswith("sha256:"), p.version)
        self.assertEqual(len([d for d in server.provider.dispatches if d.key == done.key]), 1)

    def test_the_same_intent_replays(self):
        run = run_id()
        first = self.client.request(tool="sdk.credit", run_id=run, step=1, effect=CREDIT, summary="one wording")
        again = self.client.request(tool="sdk.credit", run_id=run, step=1, effect=dict(reversed(CREDIT.items())),
                                    summary="another wording")
        self.assertFalse(first.replayed)
        self.assertTrue(again.replayed)
        self.assertEqual((again.id, again.key, again.summary), (first.id, first.key, "one wording"))

    def test_a_client_key_for_another_write_is_key_reused(self):
        own = f"sdk-own-key-{uuid.uuid4()}"
        run = run_id()
        self.client.request(tool="sdk.credit", run_id=run, step=1, effect=CREDIT, idempotency_key=own)
        with self.assertRaises(KeyReusedError) as caught:
            self.client.request(tool="sdk.credit", run_id=run, step=1, effect={**CREDIT, "amount_cents": 4300},
                                idempotency_key=own)
        e = caught.exception
        self.assertEqual((e.status, e.code), (409, "key_reused"))
        self.assertRegex(e.request_id, r"^req_[0-9a-f]{24}$")

    def test_an_invalid_effect_names_every_violation(self):
        with self.assertRaises(InvalidEffectError) as caught:
            self.client.request(tool="sdk.credit", run_id=run_id(), step=1,
                                effect={"invoice": "INV 1", "amount_cents": 0, "currency": "GBP"})
        e = caught.exception
        self.assertEqual(e.status, 422)
        fields = {v.field for v in e.errors}
        self.assertEqual(fields, {"/effect/invoice", "/effect/amount_cents", "/effect/currency"}, e.errors)
        self.assertEqual((e.field, e.message), (e.errors[0].field, e.errors[0].message))

    def test_an_inexact_number_is_refused_where_intent_key_refuses_it(self):
        effect = {"lines": [{"amount": 1}, {"amount": Decimal("9007199254740993.0")}]}
        with self.assertRaises(NumberError) as offline:
            intent_key("r", 1, "sdk.note", effect)
        with self.assertRaises(InvalidRequestError) as caught:
            self.client.request(tool="sdk.note", run_id=run_id(), step=1, effect=effect)
        self.assertEqual(caught.exception.field, "/effect/lines/1/amount")
        self.assertEqual(offline.exception.pointer, caught.exception.field)

    def test_the_offline_key_is_the_server_s(self):
        effects = [
            {"one": 1.0, "big": 1e20, "tenth": 0.1, "small": 2.5e-7, "minus_zero": -0.0, "decimal": Decimal("1E+2"),
             "exact": Decimal("9007199254740994.0"), "max": 2**53, "yes": True, "none": None},
            {"\ue000": 1, "😀": 2, "é": "e\u0301", "ctl": "\u0001\u2028\"\\", "nested": [[{}], {"a": []}]},
            {},
        ]
        for effect, step in zip(effects, (next(steps), str(next(steps)), -7)):
            with self.subTest(effect=effect):
                run = run_id()
                req = self.client.request(tool="sdk.note", run_id=run, step=step, effect=effect)
                self.assertEqual(req.key, intent_key(run, step, "sdk.note", effect))
                self.assertEqual(req.step, step)

    def test_the_server_refuses_every_client_key_the_sdk_refuses(self):
        # Sent around the SDK's own check, to the server's.
        vectors = load_json("internal/intentkey/testdata/key-vectors.json")["client_keys"]
        run = run_id()
        for step, v in enumerate(vectors["refused"]):
            intent = {"run_id": run, "step": step, "tool": "sdk.credit", "effect": CREDIT, "idempotency_key": v["key"]}
            with self.subTest(v["name"]):
                with self.assertRaises(InvalidKeyError):
                    self.client.request(tool="sdk.credit", run_id=run, step=step, effect=CREDIT, idempotency_key=v["key"])
                raw = Call("POST", "/v1/requests", dumps(intent).encode(), lambda answer: answer)
                with self.assertRaises(InvalidRequestError) as caught:
                    self.client._transport.run(raw, time.monotonic() + 10)
                self.assertEqual(caught.exception.field, "/idempotency_key")
                self.assertIn("Idempotency-Key", caught.exception.message)
        self.assertEqual(list(self.client.list(run_id=run)), [])
        # The key this intent derives, sent as the client's own, is the key.
        derived = intent_key(run, 1, "sdk.credit", CREDIT)
        req = self.client.request(tool="sdk.credit", run_id=run, step=1, effect=CREDIT, idempotency_key=derived)
        self.assertEqual(req.key, derived)

    def test_an_unknown_tool_names_the_tools_the_agent_may_use(self):
        with self.assertRaises(UnknownToolError) as caught:
            self.client.request(tool="sdk.debit", run_id=run_id(), step=1, effect=CREDIT)
        self.assertEqual(caught.exception.tools, ("sdk.credit", "sdk.note", "sdk.payout"))
        self.assertIn("sdk.credit, sdk.note, sdk.payout", caught.exception.message)

    def test_a_short_wait_ends_near_its_timeout(self):
        req = self.client.request(tool="sdk.credit", run_id=run_id(), step=1, effect=CREDIT)
        started = time.monotonic()
        with self.assertRaises(WaitTimeout) as caught:
            self.client.wait(req.key, timeout=0.5)
        self.assertLess(time.monotonic() - started, 0.9)
        self.assertEqual(caught.exception.request.status, "pending")

    def test_a_bad_token_is_unauthorized(self):
        stranger = Client(server.url, "not-a-token")
        with self.assertRaises(UnauthorizedError) as caught:
            stranger.tools()
        self.assertEqual(caught.exception.status, 401)
        with self.assertRaises(UnauthorizedError):
            stranger.request(tool="sdk.credit", run_id=run_id(), step=1, effect=CREDIT)

    def test_cancel(self):
        req = self.client.request(tool="sdk.credit", run_id=run_id(), step=1, effect=CREDIT)
        cancelled = self.client.cancel(req.id)
        self.assertEqual((cancelled.status, cancelled.settled), ("cancelled", True))
        self.assertEqual(self.client.wait(req.key, timeout=5).status, "cancelled")
        with self.assertRaises(AlreadyDecidedError) as caught:
            self.client.cancel(req.key)
        self.assertEqual(caught.exception.status, 409)

    def test_unknown_refs_and_redrives_without_a_callback(self):
        with self.assertRaises(NotFoundError):
            self.client.get("wa_" + "0" * 64)
        req = self.client.request(tool="sdk.credit", run_id=run_id(), step=1, effect=CREDIT)
        with self.assertRaises(CallbackNotConfiguredError):
            self.client.redrive(req.key)

    def test_tools(self):
        tools = {t.name: t for t in self.client.tools()}
        self.assertEqual(sorted(tools), ["sdk.credit", "sdk.note", "sdk.payout"])
        credit = tools["sdk.credit"]
        self.assertEqual((credit.description, credit.policy.approvals), ("Credit an invoice, in cents.", 1))
        self.assertEqual(credit.effect_schema["required"], ["invoice", "amount_cents", "currency"])
        self.assertIsNone(tools["sdk.note"].effect_schema)

    def test_list_reads_every_page(self):
        run = run_id()
        made = [self.client.request(tool="sdk.credit", run_id=run, step=i, effect=CREDIT) for i in range(5)]
        self.client.cancel(made[0].id)
        listed = [r.id for r in self.client.list(run_id=run, limit=2)]
        self.assertEqual(listed, [r.id for r in reversed(made)], "newest first, across three pages")
        page = self.client.list_page(run_id=run, limit=2)
        self.assertEqual((len(page.data), bool(page.next_cursor)), (2, True))
        self.assertEqual([r.id for r in self.client.list(run_id=run, settled=True)], [made[0].id])
        self.assertEqual(len(list(self.client.list(run_id=run, status="pending"))), 4)
        with self.assertRaises(InvalidRequestError) as caught:
            self.client.list_page(limit=0)
        self.assertEqual(caught.exception.field, "limit")

    def test_every_field_the_server_sends_is_read(self):
        req = self.client.request(tool="sdk.credit", run_id=run_id(), step=1, effect=CREDIT)
        server.approve(req)
        self.client.wait(req.id, timeout=30)
        raw = json.loads(self.client._transport.exchange(get(req.id)).body)
        known = {f.name for f in dataclasses.fields(Request)}
        self.assertLessEqual(set(raw), known, "fields the SDK does not read")
        self.assertEqual(Request.from_json(raw).execution.state, "succeeded")


class CallbackTest(unittest.TestCase):
    def test_a_settled_request_calls_back_signed(self):
        client = Client(server.url, CALLBACK_TOKEN, timeout=10)
        req = client.request(tool="sdk.credit", run_id=run_id(), step=1, effect=CREDIT)
        server.approve(req)
        self.assertTrue(client.wait(req.id, timeout=30).succeeded)
        deadline = time.monotonic() + 15
        while not (mine := [c for c in server.provider.callbacks if json.loads(c.body)["id"] == req.id]):
            self.assertLess(time.monotonic(), deadline, "no callback arrived for the settled request")
            time.sleep(0.05)  # polling the agent's endpoint, not waiting for an event
        callback = mine[0]
        self.assertTrue(callback.verified, "the callback's v2 signature did not verify")
        self.assertEqual(callback.event, "request.settled")
        body = Request.from_json(json.loads(callback.body))
        self.assertEqual((body.key, body.status, body.execution.state), (req.key, "approved", "succeeded"))
        with self.assertRaises(SignatureError):  # v2 covers the delivery id
            verify_signature(CALLBACK_SECRET, "t=%d,v1=%s" % (int(time.time()), "0" * 64), callback.body,
                             method="POST", path="/callbacks", delivery_id=callback.delivery)


class EditTest(unittest.TestCase):
    def test_wait_follows_a_reviewer_s_edit_and_the_original_never_runs(self):
        client = Client(server.url, CALLBACK_TOKEN, timeout=10)
        run = run_id()
        req = client.request(tool="sdk.credit", run_id=run, step=1, effect=CREDIT)
        edited = dict(CREDIT, amount_cents=3000)
        line = server.edit(req, edited)
        self.assertIn("changed amount_cents", line)
        done = client.wait(req.key, timeout=30)
        # The edit's outcome, under the edit's own key, naming the original.
        self.assertTrue(done.succeeded, done)
        self.assertEqual(done.key, intent_key(run, 1, "sdk.credit", edited))
        self.assertNotEqual(done.key, req.key)
        self.assertEqual((done.status, done.effect, done.supersedes, done.edited_from, done.edited),
                         ("approved", edited, req.key, (req.key,), False))
        self.assertEqual([d.body for d in server.provider.dispatches if d.key == done.key], [canonical(edited).encode()])
        self.assertEqual([d for d in server.provider.dispatches if d.key == req.key], [], "the original was written")
        original = client.get(req.key)
        self.assertEqual((original.status, original.edited, original.settled, original.superseded_by),
                         ("edited", True, True, done.key))
        self.assertEqual(original.edited_from, ())
        # wait_for_decision and request_and_wait follow it too.
        self.assertEqual(client.wait_for_decision(req.id, timeout=30).key, done.key)
        again = client.request_and_wait(tool="sdk.credit", run_id=run, step=1, effect=CREDIT, timeout=30)
        self.assertEqual((again.key, again.edited_from), (done.key, (req.key,)))
        # The agent is told with request.edited, signed.
        deadline = time.monotonic() + 15
        while not (mine := [c for c in server.provider.callbacks
                            if c.event == "request.edited" and json.loads(c.body)["id"] == req.id]):
            self.assertLess(time.monotonic(), deadline, "no request.edited callback arrived")
            time.sleep(0.05)  # polling the agent's endpoint, not waiting for an event
        self.assertTrue(mine[0].verified)
        self.assertEqual(Request.from_json(json.loads(mine[0].body)).superseded_by, done.key)

    def test_a_refused_edit_names_its_code(self):
        req = self.client_request()
        with self.assertRaises(LocalReviewError) as caught:
            server.edit(req, dict(CREDIT, amount_cents=0))  # under the schema's minimum
        self.assertEqual(caught.exception.code, "invalid_effect")
        self.assertEqual(Client(server.url, TOKEN).get(req.id).status, "pending")

    def client_request(self):
        return Client(server.url, TOKEN, timeout=10).request(tool="sdk.credit", run_id=run_id(), step=1, effect=CREDIT)


class AsyncEditTest(unittest.IsolatedAsyncioTestCase):
    async def test_wait_follows_the_edit(self):
        client = AsyncClient(server.url, TOKEN, timeout=10)
        req = await client.request(tool="sdk.credit", run_id=run_id(), step=1, effect=CREDIT)
        await asyncio.to_thread(server.edit, req, dict(CREDIT, currency="EUR"))
        done = await client.wait(req.id, timeout=30)
        self.assertTrue(done.succeeded)
        self.assertEqual((done.effect["currency"], done.supersedes, done.edited_from), ("EUR", req.key, (req.key,)))


class KilledServerTest(unittest.TestCase):
    def test_a_retry_after_the_server_was_killed_mid_request_lands_on_the_same_key(self):
        own = Server()
        self.addCleanup(own.close)
        relay = Relay(own)
        self.addCleanup(relay.close)
        client = Client(relay.url, TOKEN, timeout=10)
        run = run_id()
        # serve stores the request and answers; the relay then kills it
        # (kill -9), restarts it, and drops the answer: the client never
        # learns the outcome of its first attempt and sends it again.
        relay.crash_before_next_answer = True
        req = client.request(tool="sdk.credit", run_id=run, step=1, effect=CREDIT)
        self.assertEqual(own.starts, 2, "serve was not killed and restarted")
        sent = [body for line, body in relay.bodies if line == "POST /v1/requests"]
        self.assertEqual(len(sent), 2)
        self.assertEqual(sent[0], sent[1], "the retry did not send the same bytes")
        self.assertTrue(req.replayed, "the first attempt was stored before the kill: the retry replays it")
        self.assertEqual(req.key, intent_key(run, 1, "sdk.credit", CREDIT))
        self.assertEqual([r.id for r in client.list(run_id=run)], [req.id], "one request for the key")
        own.approve(req)
        self.assertTrue(client.wait(req.id, timeout=30).succeeded)
        self.assertEqual(len([d for d in own.provider.dispatches if d.key == req.key]), 1, "one write at the provider")


class AsyncServerTest(unittest.IsolatedAsyncioTestCase):
    async def test_request_approve_and_wait(self):
        client = AsyncClient(server.url, TOKEN, timeout=10)
        req = await client.request(tool="sdk.credit", run_id=run_id(), step=1, effect=CREDIT)
        server.approve(req)
        done = await client.wait(req.key, timeout=30)
        self.assertTrue(done.succeeded)
        with self.assertRaises(AlreadyDecidedError):
            await client.cancel(req.key)
        self.assertIn("sdk.credit", [t.name for t in await client.tools()])


if __name__ == "__main__":
    unittest.main()
