import unittest

from countersign import SignatureError, verify_signature

from .shared import load_json


def checks(secret, header, case, now, v2):
    """Whether verify_signature accepts, checking v2 (or v1)."""
    body = case["body"].encode("utf-8")
    kwargs = {}
    if v2:
        kwargs = {"method": case["method"], "path": case["path"], "idempotency_key": case["idempotency_key"],
                  "delivery_id": case["delivery"]}
    try:
        verify_signature(secret, header, body, now=now, **kwargs)
    except SignatureError:
        return False
    return True


class VectorsTest(unittest.TestCase):
    """internal/signature/testdata/vectors.json (docs/CALLBACKS.md)."""

    vectors = load_json("internal/signature/testdata/vectors.json")

    def test_tolerance_is_the_default(self):
        self.assertEqual(self.vectors["tolerance_seconds"], 300)

    def test_every_signed_example_verifies_with_every_secret(self):
        self.assertGreater(len(self.vectors["signed"]), 2)
        for case in self.vectors["signed"]:
            for secret in case["secrets"]:
                with self.subTest(case["name"], secret=secret):
                    self.assertTrue(checks(secret, case["header"], case, case["t"], v2=True))
                    self.assertTrue(checks(secret, case["header"], case, case["t"], v2=False))
                    # The secret as bytes is its UTF-8 encoding.
                    self.assertTrue(checks(secret.encode("utf-8"), case["header"], case, case["t"], v2=True))

    def test_every_checked_example_answers_as_listed(self):
        self.assertGreater(len(self.vectors["checked"]), 10)
        for case in self.vectors["checked"]:
            with self.subTest(case["name"]):
                self.assertEqual(checks(case["secret"], case["header"], case, case["now"], v2=False), case["v1"], "v1")
                self.assertEqual(checks(case["secret"], case["header"], case, case["now"], v2=True), case["v2"], "v2")


class ArgumentsTest(unittest.TestCase):
    case = load_json("internal/signature/testdata/vectors.json")["signed"][0]

    def test_method_and_path_go_together(self):
        with self.assertRaises(ValueError):
            verify_signature("s", self.case["header"], b"", method="POST")

    def test_the_body_must_be_the_raw_bytes(self):
        with self.assertRaises(TypeError):
            verify_signature("s", self.case["header"], self.case["body"], method="POST", path="/")

    def test_a_field_with_a_newline_matches_nothing(self):
        c = self.case
        with self.assertRaises(SignatureError):
            verify_signature(c["secrets"][0], c["header"], c["body"].encode(), method=c["method"], path=c["path"] + "\n",
                             idempotency_key=c["idempotency_key"], now=c["t"])

    def test_the_clock_is_the_default_now(self):
        c = self.case
        with self.assertRaises(SignatureError):  # signed in 2025, far outside the tolerance
            verify_signature(c["secrets"][0], c["header"], c["body"].encode(), method=c["method"], path=c["path"],
                             idempotency_key=c["idempotency_key"])


if __name__ == "__main__":
    unittest.main()
