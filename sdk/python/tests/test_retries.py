import asyncio
import builtins
import json
import socket
import time
import unittest
import urllib.error
import urllib.parse

import countersign
from countersign import (
    APIError, AsyncClient, Client, CountersignError, InternalError, InvalidKeyError, KeyReusedError, UnavailableError,
    WaitTimeout, __version__,
)
from countersign.calls import MAX_EDIT_HOPS

from .fake import Fake, hang_up, refusal, reply, representation


class RetriesTest(unittest.TestCase):
    def fake(self, *answers):
        fake = Fake(*answers)
        self.addCleanup(fake.close)
        return fake

    def test_a_request_is_resent_with_the_same_bytes_after_a_503_and_a_dropped_connection(self):
        fake = self.fake(refusal(503, "unavailable", headers={"Retry-After": "1"}), hang_up, reply(201, representation()))
        client = Client(fake.url, "agent-token")
        started = time.monotonic()
        req = client.request(tool="billing.credit", run_id="r-7f3a", step=6,
                             effect={"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}, summary="Credit")
        self.assertGreaterEqual(time.monotonic() - started, 1.0, "Retry-After: 1 was not waited")
        self.assertEqual(req.key, "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c")
        self.assertFalse(req.replayed)
        self.assertEqual(req.created_at.microsecond, 123456)
        self.assertEqual(len(fake.calls), 3)
        self.assertEqual({c.body for c in fake.calls}, {fake.calls[0].body})
        first = fake.calls[0]
        self.assertEqual(json.loads(first.body)["run_id"], "r-7f3a")
        self.assertEqual((first.method, first.path), ("POST", "/v1/requests"))
        self.assertEqual(first.headers["Authorization"], "Bearer agent-token")
        self.assertEqual(first.headers["Content-Type"], "application/json")
        self.assertEqual(first.headers["User-Agent"], f"countersign-python/{__version__}")

    def test_an_answer_that_does_not_come_in_time_is_asked_again(self):
        fake = Fake()
        self.addCleanup(fake.close)
        fake.answers = [fake.stall(5), reply(200, representation())]
        started = time.monotonic()
        req = Client(fake.url, "t", timeout=0.3).get("wa_x")
        self.assertLess(time.monotonic() - started, 3)
        self.assertEqual(req.version, 1)
        self.assertEqual(len(fake.calls), 2)

    def test_a_replay_says_so(self):
        fake = self.fake(reply(200, representation(), {"Idempotent-Replayed": "true"}))
        req = Client(fake.url, "t").request(tool="t", run_id="r", step=1, effect={})
        self.assertTrue(req.replayed)

    def test_a_refusal_is_raised_at_once_with_everything_it_says(self):
        fake = self.fake(refusal(409, "key_reused", field="Idempotency-Key"))
        with self.assertRaises(KeyReusedError) as caught:
            Client(fake.url, "t").request(tool="t", run_id="r", step=1, effect={}, idempotency_key="own-key-123")
        e = caught.exception
        self.assertEqual((e.status, e.code, e.field, e.request_id), (409, "key_reused", "Idempotency-Key", "req_" + "a" * 24))
        self.assertEqual(e.message, "refused: key_reused")
        self.assertEqual(len(fake.calls), 1)
        self.assertEqual(json.loads(fake.calls[0].body)["idempotency_key"], "own-key-123")

    def test_retries_end_when_retry_for_runs_out(self):
        fake = self.fake(refusal(503, "unavailable"))
        started = time.monotonic()
        with self.assertRaises(UnavailableError):
            Client(fake.url, "t", retry_for=0.5).tools()
        self.assertLess(time.monotonic() - started, 2)
        self.assertGreater(len(fake.calls), 1)

    def test_a_read_is_asked_again_after_a_500(self):
        fake = self.fake(refusal(500, "internal"), reply(200, representation(3)))
        req = Client(fake.url, "t").get("wa_x")
        self.assertEqual(req.version, 3)
        self.assertEqual([(c.method, c.path) for c in fake.calls], [("GET", "/v1/requests/wa_x")] * 2)

    def test_a_request_is_not_sent_again_after_a_500(self):
        fake = self.fake(refusal(500, "internal"), reply(201, representation()))
        with self.assertRaises(InternalError):
            Client(fake.url, "t").request(tool="billing.credit", run_id="r-7f3a", step=6,
                                          effect={"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"})
        self.assertEqual(len(fake.calls), 1)

    def test_cancel_and_redrive_are_sent_once(self):
        fake = self.fake(refusal(503, "unavailable"))
        client = Client(fake.url, "t")
        with self.assertRaises(UnavailableError):
            client.cancel("wa_x")
        with self.assertRaises(UnavailableError):
            client.redrive("wa_x")
        self.assertEqual([(c.method, c.path) for c in fake.calls],
                         [("POST", "/v1/requests/wa_x/cancel"), ("POST", "/v1/requests/wa_x/redrive")])

    def test_a_page_that_is_not_countersign_s_is_an_api_error(self):
        fake = self.fake(reply(502, None), reply(302, None, {"Location": "http://elsewhere.invalid/"}))
        client = Client(fake.url, "t")
        for status in (502, 302):
            with self.assertRaises(APIError) as caught:
                client.get("wa_x")
            self.assertEqual((type(caught.exception), caught.exception.status, caught.exception.code), (APIError, status, ""))
        self.assertEqual(len(fake.calls), 2)

    def test_a_base_url_must_be_http(self):
        for url in ("127.0.0.1:8080", "ftp://host", ""):
            with self.subTest(url), self.assertRaises(ValueError):
                Client(url, "t")


class WaitTest(unittest.TestCase):
    def test_wait_long_polls_from_the_version_it_last_saw(self):
        fake = Fake(reply(200, representation(1)), reply(200, representation(2)),
                    reply(200, representation(3, "cancelled", True)))
        self.addCleanup(fake.close)
        req = Client(fake.url, "t").wait("wa_x", timeout=10)
        self.assertTrue(req.settled)
        self.assertEqual(req.status, "cancelled")
        queries = [urllib.parse.parse_qs(urllib.parse.urlsplit(c.path).query) for c in fake.calls]
        self.assertEqual([q.get("since") for q in queries], [None, ["1"], ["2"]])
        # Each poll holds what is left of the 10 s, to the millisecond below.
        for q in queries[1:]:
            millis = int(q["wait"][0].removesuffix("ms"))
            self.assertTrue(q["wait"][0].endswith("ms") and 9000 < millis < 10000, q["wait"])

    def test_wait_follows_edits_a_bounded_number_of_times(self):
        # Each answer an edited request that names the next: the wait follows
        # MAX_EDIT_HOPS of them, then returns the last one, edited, as it is.
        chain = [f"wa_{i:064x}" for i in range(MAX_EDIT_HOPS + 2)]
        fake = Fake(*(reply(200, representation(1, "edited", True, key=chain[i], superseded_by=chain[i + 1]))
                      for i in range(MAX_EDIT_HOPS + 1)))
        self.addCleanup(fake.close)
        req = Client(fake.url, "t").wait(chain[0], timeout=10)
        self.assertEqual((req.status, req.key, req.superseded_by), ("edited", chain[-2], chain[-1]))
        self.assertEqual(req.edited_from, tuple(chain[:MAX_EDIT_HOPS]))
        self.assertEqual([c.path for c in fake.calls], ["/v1/requests/" + k for k in chain[:MAX_EDIT_HOPS + 1]])

    def test_a_long_wait_holds_30_seconds_a_poll(self):
        fake = Fake(reply(200, representation(4)), reply(200, representation(5, "rejected", True)))
        self.addCleanup(fake.close)
        Client(fake.url, "t").wait("wa_x")
        self.assertIn("wait=30s&since=4", fake.calls[1].path)

    def test_wait_ends_at_its_timeout(self):
        fake = Fake()
        self.addCleanup(fake.close)
        fake.answers = [reply(200, representation(1)), fake.stall(5)]
        started = time.monotonic()
        with self.assertRaises(WaitTimeout) as caught:
            Client(fake.url, "t", timeout=0.2).wait("wa_x", timeout=1)
        self.assertLess(time.monotonic() - started, 4)
        self.assertEqual(caught.exception.request.version, 1)
        self.assertIsInstance(caught.exception, TimeoutError)

    def test_a_poll_holds_at_most_the_time_left(self):
        for hold, wait in ((0.5, "500ms"), (0.4999, "499ms"), (1.0, "1s"), (2.0009, "2s"), (29.9999, "29999ms"),
                           (30, "30s"), (45, "30s"), (float("inf"), "30s")):
            with self.subTest(hold):
                call = countersign.calls.poll("wa_x", 3, hold)
                self.assertIn(f"wait={wait}&since=3", call.path)
                self.assertLessEqual(call.hold, min(hold, 30))

    def test_a_short_wait_returns_near_its_timeout(self):
        # The fake holds each long-poll as long as its wait asks, as the
        # server does, and the request stays pending.
        fake = Fake()
        self.addCleanup(fake.close)
        fake.answers = [reply(200, representation(1)), fake.hold_for_wait(representation(1))]
        started = time.monotonic()
        with self.assertRaises(WaitTimeout):
            Client(fake.url, "t").wait("wa_x", timeout=0.5)
        self.assertLess(time.monotonic() - started, 0.9)

    def test_list_reads_page_after_page(self):
        fake = Fake(reply(200, {"data": [representation(1, id="a"), representation(1, id="b")], "next_cursor": "c1"}),
                    reply(200, {"data": [representation(1, id="c")], "next_cursor": None}))
        self.addCleanup(fake.close)
        ids = [r.id for r in Client(fake.url, "t").list(status="pending", settled=False, limit=2)]
        self.assertEqual(ids, ["a", "b", "c"])
        self.assertEqual([c.path for c in fake.calls],
                         ["/v1/requests?status=pending&settled=false&limit=2",
                          "/v1/requests?status=pending&cursor=c1&settled=false&limit=2"])


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    async def test_the_same_calls_awaited(self):
        fake = Fake(refusal(503, "unavailable"), reply(201, representation(1)), reply(200, representation(2)),
                    reply(200, representation(3, "approved", True, execution={"state": "succeeded", "attempts": 1})),
                    reply(200, {"data": [representation(3, id="a")], "next_cursor": None}))
        self.addCleanup(fake.close)
        client = AsyncClient(fake.url, "t")
        req = await client.request_and_wait(tool="t", run_id="r", step=1, effect={"a": 1.5}, timeout=10)
        self.assertTrue(req.succeeded)
        self.assertEqual([r.id async for r in client.list()], ["a"])
        self.assertEqual(fake.calls[0].body, fake.calls[1].body)
        self.assertEqual(len(fake.calls), 5)

    async def test_a_cancelled_wait_stops(self):
        fake = Fake()
        self.addCleanup(fake.close)
        fake.answers = [reply(200, representation(1)), fake.stall(5)]
        task = asyncio.create_task(AsyncClient(fake.url, "t", timeout=0.5).wait("wa_x"))
        with self.assertRaises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), 0.2)
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task


class ConnectionTest(unittest.TestCase):
    def closed_port_url(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def test_a_server_that_is_down_is_a_connection_error(self):
        client = Client(self.closed_port_url(), "t", retry_for=0)
        for call in (lambda: client.get("wa_x"), lambda: client.tools(),
                     lambda: client.request(tool="t", run_id="r", step=1, effect={})):
            with self.assertRaises(countersign.ConnectionError) as caught:
                call()
            e = caught.exception
            self.assertIsInstance(e, CountersignError)
            self.assertIsInstance(e, OSError)
            self.assertNotIsInstance(e, countersign.ConnectionTimeoutError)
            self.assertIsInstance(e.__cause__, urllib.error.URLError)
            self.assertIsInstance(e.__cause__.reason, builtins.ConnectionRefusedError)
            self.assertRegex(str(e), r"^countersign: (GET|POST) /v1/")

    def test_a_wait_on_a_server_that_is_down_ends_at_its_timeout(self):
        with self.assertRaises(WaitTimeout) as caught:
            Client(self.closed_port_url(), "t").wait("wa_x", timeout=0.3)
        self.assertIsInstance(caught.exception.__cause__, countersign.ConnectionError)

    def test_an_answer_that_does_not_come_in_time_is_a_connection_timeout(self):
        fake = Fake()
        self.addCleanup(fake.close)
        fake.answers = [fake.stall(5)]
        with self.assertRaises(countersign.ConnectionTimeoutError) as caught:
            Client(fake.url, "t", timeout=0.2, retry_for=0).get("wa_x")
        self.assertIsInstance(caught.exception, countersign.ConnectionError)
        self.assertIsInstance(caught.exception, TimeoutError)

    def test_an_async_client_raises_it_too(self):
        async def get():
            return await AsyncClient(self.closed_port_url(), "t", retry_for=0).get("wa_x")

        with self.assertRaises(countersign.ConnectionError):
            asyncio.run(get())


class ClientKeyTest(unittest.TestCase):
    def test_a_client_key_countersign_would_refuse_is_not_sent(self):
        fake = Fake(reply(201, representation()))
        self.addCleanup(fake.close)
        client = Client(fake.url, "t")
        derived = "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"
        effect = {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}
        for key in (" " + derived, derived + " ", "WA_" + derived[3:], "wa_" + "0" * 64, "short", "tab\there-123"):
            with self.subTest(key), self.assertRaises(InvalidKeyError):
                client.request(tool="billing.credit", run_id="r-7f3a", step=6, effect=effect, idempotency_key=key)
        self.assertEqual(fake.calls, [])
        # The derived key itself, and a key of the client's own, are sent.
        client.request(tool="billing.credit", run_id="r-7f3a", step=6, effect=effect, idempotency_key=derived)
        client.request(tool="billing.credit", run_id="r-7f3a", step=6, effect=effect, idempotency_key="dispatch:inv_8841/1")
        self.assertEqual([json.loads(c.body)["idempotency_key"] for c in fake.calls], [derived, "dispatch:inv_8841/1"])


if __name__ == "__main__":
    unittest.main()
