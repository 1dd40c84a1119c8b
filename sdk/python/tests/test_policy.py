"""Policy verdicts as the SDK reads them: a write the tool's policy denies
(403 denied_by_policy, the same on every post) and one it allows on arrival.
The answers are scripted as the hook gives them (hook/policy_verdict_test.go
checks the hook's side)."""

import dataclasses
import time
import unittest

from countersign import APIError, AsyncClient, Client, DeniedByPolicyError, RequestPolicy

from .fake import Fake, refusal, reply, representation
from .shared import load_json

KEY = "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"
DENIAL = ('Denied by policy (rule "frozen-invoice"): Credits to a frozen invoice are never sent.'
          " Nothing will be sent; posting the same intent again gets the same answer.")
INTENT = {"tool": "billing.credit", "run_id": "r-7f3a", "step": 6,
          "effect": {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}}


def denied():
    return refusal(403, "denied_by_policy", message=DENIAL, key=KEY, tier="frozen-invoice")


def allowed(version, settled, execution):
    return representation(version, "approved", settled,
                          decision={"verdict": "approve", "by": "policy:small", "at": "2026-01-02T03:04:05Z",
                                    "via": "policy", "round": 1},
                          execution=execution,
                          policy={"verdict": "allow", "approvals": 0, "approvers": ["U1"], "tier": 1,
                                  "tier_name": "small", "version": "sha256:" + "2" * 64})


class DeniedTest(unittest.TestCase):
    def fake(self, *answers):
        fake = Fake(*answers)
        self.addCleanup(fake.close)
        return fake

    def test_a_denial_is_raised_on_every_post_with_the_key_and_the_rule(self):
        fake = self.fake(denied())
        client = Client(fake.url, "t")
        for post in (1, 2):
            with self.subTest(post=post), self.assertRaises(DeniedByPolicyError) as caught:
                client.request(**INTENT)
            e = caught.exception
            self.assertIsInstance(e, APIError)
            self.assertEqual((e.status, e.code, e.key, e.tier, e.message), (403, "denied_by_policy", KEY, "frozen-invoice", DENIAL))
        self.assertEqual(len(fake.calls), 2, "a denial was sent again")

    def test_request_and_wait_raises_a_denial_without_waiting(self):
        fake = self.fake(denied())
        started = time.monotonic()
        with self.assertRaises(DeniedByPolicyError) as caught:
            Client(fake.url, "t").request_and_wait(**INTENT)
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(caught.exception.tier, "frozen-invoice")
        self.assertEqual([c.method for c in fake.calls], ["POST"])

    def test_an_allowed_write_is_waited_for_like_any_approval(self):
        ready = {"state": "ready", "attempts": 0}
        done = {"state": "succeeded", "attempts": 1, "provider_ref": "obj_1", "response": {"status": 201, "body": {}}}
        fake = self.fake(reply(201, allowed(1, False, ready)), reply(200, allowed(2, True, done)))
        req = Client(fake.url, "t").request_and_wait(**INTENT, timeout=30)
        self.assertTrue(req.succeeded)
        self.assertEqual((req.decision.by, req.decision.via), ("policy:small", "policy"))
        p = req.policy
        self.assertEqual((p.verdict, p.approvals, p.tier_name, p.version), ("allow", 0, "small", "sha256:" + "2" * 64))
        self.assertEqual([c.method for c in fake.calls], ["POST", "GET"])


class AsyncDeniedTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_denial_is_raised_without_waiting(self):
        fake = Fake(denied())
        self.addCleanup(fake.close)
        with self.assertRaises(DeniedByPolicyError) as caught:
            await AsyncClient(fake.url, "t").request_and_wait(**INTENT)
        self.assertEqual((caught.exception.key, caught.exception.tier), (KEY, "frozen-invoice"))
        self.assertEqual(len(fake.calls), 1)


class RequestPolicyTest(unittest.TestCase):
    def test_every_member_of_the_openapi_request_policy_is_read(self):
        schema = load_json("hook/openapi.json")["components"]["schemas"]["RequestPolicy"]
        self.assertEqual(set(schema["properties"]), {f.name for f in dataclasses.fields(RequestPolicy)})

    def test_a_policy_stored_before_verdicts_reads_as_ask(self):
        p = RequestPolicy.from_json({"approvals": 1, "approvers": ["U1"], "tier": None})
        self.assertEqual((p.verdict, p.tier_name, p.version), ("ask", "", ""))


if __name__ == "__main__":
    unittest.main()
