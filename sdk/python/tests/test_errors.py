import json
import time
import unittest
from email.message import Message
from email.utils import formatdate

import countersign
from countersign import ERRORS, APIError, InvalidEffectError, UnavailableError, Violation
from countersign.errors import error_from

from .shared import load_json


def headers(**values):
    m = Message()
    for name, value in values.items():
        m[name.replace("_", "-")] = value
    return m


class CodesTest(unittest.TestCase):
    def test_every_error_code_of_the_openapi_document_has_its_class(self):
        codes = load_json("hook/openapi.json")["components"]["schemas"]["ErrorCode"]["enum"]
        self.assertEqual(sorted(ERRORS), sorted(codes))
        for code in codes:
            with self.subTest(code):
                cls = ERRORS[code]
                self.assertTrue(issubclass(cls, APIError))
                self.assertEqual(cls.code, code)
                self.assertIs(getattr(countersign, cls.__name__), cls, "not exported")
                e = error_from(400, headers(), json.dumps({"error": {"code": code, "message": "m", "request_id": "r"}}).encode())
                self.assertIs(type(e), cls)

    def test_the_envelope_is_read_whole(self):
        body = {"error": {"code": "invalid_effect", "message": "amount_cents: minimum 1", "field": "/effect/amount_cents",
                          "errors": [{"field": "/effect/amount_cents", "message": "minimum 1"},
                                     {"field": "/effect/currency", "message": "not one of USD, EUR"}],
                          "request_id": "req_3f9a0c1d2e4b5a6978877665"}}
        e = error_from(422, headers(Request_Id="req_other"), json.dumps(body).encode())
        self.assertIsInstance(e, InvalidEffectError)
        self.assertEqual((e.status, e.field, e.request_id), (422, "/effect/amount_cents", "req_3f9a0c1d2e4b5a6978877665"))
        self.assertEqual(e.errors[1], Violation("/effect/currency", "not one of USD, EUR"))
        self.assertEqual(str(e), "countersign: invalid_effect (422) at /effect/amount_cents: amount_cents: minimum 1"
                                 " (request req_3f9a0c1d2e4b5a6978877665)")

    def test_an_unknown_code_is_an_api_error(self):
        e = error_from(418, headers(Request_Id="req_x"), b'{"error": {"code": "teapot", "message": "short"}}')
        self.assertEqual((type(e), e.code, e.request_id), (APIError, "teapot", "req_x"))

    def test_retry_after_in_seconds_or_as_a_date(self):
        e = error_from(503, headers(Retry_After="7"), b"<html>busy</html>")
        self.assertIsInstance(e, UnavailableError)
        self.assertEqual(e.retry_after, 7)
        e = error_from(503, headers(Retry_After=formatdate(time.time() + 120, usegmt=True)), b"")
        self.assertTrue(100 < e.retry_after <= 120, e.retry_after)


if __name__ == "__main__":
    unittest.main()
