import asyncio
import json
import time
import unittest
import urllib.parse

from countersign import (
    APIError, AsyncClient, Client, InternalError, KeyReusedError, UnavailableError, WaitTimeout, __version__,
)

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
        self.assertEqual(queries, [{}, {"wait": ["10s"], "since": ["1"]}, {"wait": ["10s"], "since": ["2"]}])

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


if __name__ == "__main__":
    unittest.main()
