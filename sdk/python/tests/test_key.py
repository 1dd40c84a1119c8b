import math
import unittest
from decimal import Decimal

from countersign import InvalidKeyError, NumberError, check_client_key, intent_key
from countersign.canonical import canonical, dumps

from .shared import load_json

PUBLISHED = "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"
EFFECT = {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}


def key_of(intent):
    return intent_key(intent["run_id"], intent["step"], intent["tool"], intent["effect"])


class SharedVectorsTest(unittest.TestCase):
    """internal/intentkey/testdata/key-vectors.json, which the server's own
    tests pass too."""

    vectors = load_json("internal/intentkey/testdata/key-vectors.json")

    def test_keys(self):
        self.assertGreaterEqual(len(self.vectors["keys"]), 20)
        for v in self.vectors["keys"]:
            with self.subTest(v["name"]):
                self.assertEqual(key_of(v["intent"]), v["key"])

    def test_refused(self):
        self.assertGreaterEqual(len(self.vectors["refused"]), 10)
        for v in self.vectors["refused"]:
            with self.subTest(v["name"]):
                with self.assertRaises(NumberError) as caught:
                    key_of(v["intent"])
                self.assertEqual(caught.exception.pointer, v["pointer"])
                self.assertIn(f" at {v['pointer']} ", str(caught.exception))


class ClientKeysTest(unittest.TestCase):
    """The client keys of the shared vectors: those countersign takes and
    those it refuses (422 invalid_request naming the Idempotency-Key)."""

    vectors = load_json("internal/intentkey/testdata/key-vectors.json")["client_keys"]

    def test_the_vectors_are_sent_with_the_published_intent(self):
        self.assertEqual(self.vectors["derived"], PUBLISHED)
        self.assertEqual(intent_key("r-7f3a", 6, "billing.credit", EFFECT), self.vectors["derived"])

    def test_accepted(self):
        self.assertGreaterEqual(len(self.vectors["accepted"]), 10)
        for v in self.vectors["accepted"]:
            with self.subTest(v["name"]):
                check_client_key(v["key"], self.vectors["derived"])

    def test_refused(self):
        self.assertGreaterEqual(len(self.vectors["refused"]), 30)
        for v in self.vectors["refused"]:
            with self.subTest(v["name"]), self.assertRaises(InvalidKeyError) as caught:
                check_client_key(v["key"], self.vectors["derived"])
            self.assertIn("Idempotency-Key", str(caught.exception))
            self.assertIsInstance(caught.exception, ValueError)

    def test_the_refusal_says_why(self):
        for key, why in ((" " + PUBLISHED, "character 1 (U+0020) is not"), ("abcdefg", "this one has 7"),
                         ("WA_" + PUBLISHED[3:], "must be the key this intent derives")):
            with self.subTest(key), self.assertRaises(InvalidKeyError) as caught:
                check_client_key(key, PUBLISHED)
            self.assertIn(why, str(caught.exception))

    def test_without_the_derived_key_only_the_form_is_checked(self):
        check_client_key("WA_" + PUBLISHED[3:])
        with self.assertRaises(InvalidKeyError):
            check_client_key(" " + PUBLISHED)


class NumbersTest(unittest.TestCase):
    def key(self, value):
        return intent_key("r", 1, "t", {"n": value})

    def test_a_float_keys_as_rfc_8785_writes_its_value(self):
        # 1.0 is sent as 1.0, which the server accepts and writes as 1.
        self.assertEqual(self.key(1.0), self.key(1))
        self.assertEqual(self.key(-0.0), self.key(0))
        self.assertEqual(self.key(0.1), self.key(Decimal("0.1")))
        for value, written in [(1e20, "100000000000000000000"), (1e21, "1e+21"), (1e-7, "1e-7"), (1e-6, "0.000001"),
                               (2.5e-7, "2.5e-7"), (123.456, "123.456"), (5e-324, "5e-324"),
                               (1.7976931348623157e308, "1.7976931348623157e+308"), (9007199254740994.0, "9007199254740994"),
                               (-1.5, "-1.5"), (0.30000000000000004, "0.30000000000000004")]:
            with self.subTest(value):
                self.assertEqual(canonical(value), written)

    def test_nan_and_infinities_are_refused(self):
        for value in (math.nan, math.inf, -math.inf, Decimal("NaN"), Decimal("Infinity")):
            with self.subTest(value), self.assertRaises(NumberError) as caught:
                self.key(value)
            self.assertEqual(caught.exception.pointer, "/effect/n")

    def test_an_int_stays_an_integer_within_2_53(self):
        self.assertEqual(canonical(2**53), "9007199254740992")
        self.assertEqual(canonical(-(2**53)), "-9007199254740992")
        for value in (2**53 + 1, -(2**53) - 1, 10**30):
            with self.subTest(value), self.assertRaises(NumberError) as caught:
                self.key(value)
            self.assertIn("beyond ±2^53", str(caught.exception))
        with self.assertRaises(NumberError) as caught:
            intent_key("r", 2**53 + 1, "t", {})
        self.assertEqual(caught.exception.pointer, "/step")

    def test_a_decimal_is_checked_as_written(self):
        self.assertEqual(self.key(Decimal("1.0")), self.key(1))
        self.assertEqual(self.key(Decimal("1E+2")), self.key(100))
        with self.assertRaises(NumberError) as caught:
            self.key(Decimal("9007199254740993.0"))
        self.assertEqual(caught.exception.canonical, "9007199254740992")
        with self.assertRaises(NumberError):
            self.key(Decimal("0." + "1" * 5000))
        with self.assertRaises(NumberError):
            self.key(Decimal("1e-400"))

    def test_booleans_are_not_numbers(self):
        self.assertEqual(canonical({"a": True, "b": False, "c": None}), '{"a":true,"b":false,"c":null}')
        self.assertNotEqual(self.key(True), self.key(1))


class IntentTest(unittest.TestCase):
    def test_the_published_vector(self):
        self.assertEqual(intent_key("r-7f3a", 6, "billing.credit", EFFECT), PUBLISHED)
        self.assertEqual(intent_key("r-7f3a", 6, "billing.credit", dict(reversed(EFFECT.items()))), PUBLISHED)

    def test_a_step_is_an_int_or_a_string_as_given(self):
        self.assertNotEqual(intent_key("r-7f3a", "6", "billing.credit", EFFECT), PUBLISHED)
        for step in (True, 6.0, None, [6]):
            with self.subTest(step), self.assertRaises(TypeError):
                intent_key("r", step, "t", {})
        with self.assertRaises(ValueError):
            intent_key("r", " ", "t", {})

    def test_what_json_cannot_hold_is_refused_by_its_pointer(self):
        with self.assertRaises(TypeError) as caught:
            intent_key("r", 1, "t", {"a": [1, {2}]})
        self.assertIn("/effect/a/1", str(caught.exception))
        with self.assertRaises(TypeError):
            intent_key("r", 1, "t", {1: "a"})
        with self.assertRaises(TypeError):
            intent_key("r", 1, "t", [("a", 1)])
        with self.assertRaises(ValueError) as caught:
            intent_key("r", 1, "t", {"a~b": "\ud800"})
        self.assertIn("/effect/a~0b", str(caught.exception))
        for run_id, tool in (("", "t"), ("r", " ")):
            with self.assertRaises(ValueError):
                intent_key(run_id, 1, tool, {})

    def test_the_body_sent_writes_numbers_as_they_are(self):
        body = dumps({"b": 1.0, "a": Decimal("9007199254740994.0"), "c": 1e20, "d": 7, "e": "é\n"})
        self.assertEqual(body, '{"b":1.0,"a":9007199254740994.0,"c":1e+20,"d":7,"e":"é\\n"}')


if __name__ == "__main__":
    unittest.main()
