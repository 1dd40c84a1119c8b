"""The receipt verifier against the repository's shared vectors
(receipt/testdata/vectors.json), RFC 8032's Ed25519 examples, and receipts
this test signs itself to reach the checks the vectors do not."""

import base64
import email.message
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from countersign.canonical import canonical_text
from countersign.receipt import (
    REFUSALS, EffectError, ExpiredError, JWKSError, MalformedError, MissingError, OtherKeyError, ReceiptClaims,
    ReceiptError, ReceiptSignatureError, ReceiptVerifier, UnknownKeyError, effect_digest, ed25519,
)

from .shared import REPO

with open(REPO / "receipt/testdata/vectors.json", encoding="utf-8") as f:
    VECTORS = json.load(f)

SDK = Path(__file__).resolve().parents[1]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def public_key(seed: bytes) -> bytes:
    """RFC 8032, 5.1.5: the public key of a 32-byte seed."""
    h = hashlib.sha512(seed).digest()
    a = int.from_bytes(h[:32], "little") & ((1 << 254) - 8) | (1 << 254)
    return ed25519.encode_point(ed25519._multiply(a, ed25519.BASE))


def sign(seed: bytes, message: bytes) -> bytes:
    """RFC 8032, 5.1.6: the signature of message with seed's key, to build
    receipts the vectors do not hold."""
    h = hashlib.sha512(seed).digest()
    a = int.from_bytes(h[:32], "little") & ((1 << 254) - 8) | (1 << 254)
    r = int.from_bytes(hashlib.sha512(h[32:] + message).digest(), "little") % ed25519.L
    big_r = ed25519.encode_point(ed25519._multiply(r, ed25519.BASE))
    k = int.from_bytes(hashlib.sha512(big_r + public_key(seed) + message).digest(), "little") % ed25519.L
    return big_r + ((r + k * a) % ed25519.L).to_bytes(32, "little")


SEED = bytes.fromhex(VECTORS["keys"][0]["seed_hex"])
KID = VECTORS["keys"][0]["kid"]
CLAIMS = VECTORS["signed"][0]["claims"]
NOW = CLAIMS["iat"] + 60
BODY = VECTORS["checked"][0]["body"].encode()


def token(header: object, claims: object, seed: bytes = SEED) -> str:
    """A receipt of header and claims (JSON values, or bytes sent as they are) signed with seed."""
    parts = [b64(p if isinstance(p, bytes) else json.dumps(p).encode()) for p in (header, claims)]
    signing_input = ".".join(parts)
    return signing_input + "." + b64(sign(seed, signing_input.encode()))


HEADER = {"alg": "EdDSA", "kid": KID, "typ": "countersign-receipt+jwt"}


def verifier(now: float = NOW, leeway: float = 0) -> ReceiptVerifier:
    return ReceiptVerifier(json.dumps(VECTORS["jwks"]).encode(), now=lambda: now, leeway=leeway)


class VectorsTest(unittest.TestCase):
    def test_every_checked_vector(self):
        self.assertGreaterEqual(len(VECTORS["checked"]), 10)
        for c in VECTORS["checked"]:
            with self.subTest(c["name"]):
                v = verifier(c["now"])
                try:
                    claims = v.verify(c["receipt"], key=c["idempotency_key"], tool=c["tool"], body=c["body"].encode())
                except ReceiptError as e:
                    self.assertEqual(e.code, c["error"], e)
                    self.assertIsInstance(e, REFUSALS[c["error"]])
                else:
                    self.assertEqual(c["error"], "", "accepted a receipt the vectors refuse")
                    self.assertEqual(claims.key, c["idempotency_key"])

    def test_every_signed_receipt_verifies_to_its_claims(self):
        self.assertEqual(len(VECTORS["signed"]), 2)
        for s in VECTORS["signed"]:
            with self.subTest(s["name"]):
                claims = verifier(s["claims"]["iat"]).parse(s["receipt"])
                self.assertEqual(claims.to_json(), s["claims"])
                header = json.loads(base64.urlsafe_b64decode(s["receipt"].split(".")[0] + "=="))
                self.assertEqual(header["kid"], VECTORS["keys"][s["key"]]["kid"])
                # This test's signer signs the vectors' bytes: Ed25519 is deterministic.
                seed = bytes.fromhex(VECTORS["keys"][s["key"]]["seed_hex"])
                signing_input, _, signature = s["receipt"].rpartition(".")
                self.assertEqual(b64(sign(seed, signing_input.encode())), signature)

    def test_the_jwks_holds_the_keys_of_the_seeds(self):
        for k, jwk in zip(VECTORS["keys"], VECTORS["jwks"]["keys"]):
            x = b64(public_key(bytes.fromhex(k["seed_hex"])))
            self.assertEqual(jwk["x"], x)
            thumbprint = hashlib.sha256(('{"crv":"Ed25519","kty":"OKP","x":"' + x + '"}').encode()).digest()
            self.assertEqual((jwk["kid"], k["kid"]), (b64(thumbprint), b64(thumbprint)))

    def test_the_effect_digest_is_the_vectors(self):
        self.assertEqual(effect_digest(BODY), CLAIMS["effect_sha256"])
        self.assertEqual(effect_digest('{ "currency": "USD", "amount_cents": 4200.0, "invoice": "inv_8841" }'),
                         CLAIMS["effect_sha256"])


class Ed25519Test(unittest.TestCase):
    # RFC 8032, 7.1, TEST 1 to 3.
    EXAMPLES = [
        ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "",
         "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", "72",
         "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
        ("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7", "af82",
         "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
    ]

    def test_rfc_8032_examples(self):
        for seed, message, signature in self.EXAMPLES:
            with self.subTest(seed=seed[:8]):
                key, message, signature = public_key(bytes.fromhex(seed)), bytes.fromhex(message), bytes.fromhex(signature)
                self.assertEqual(sign(bytes.fromhex(seed), message), signature)
                self.assertTrue(ed25519.verify(key, message, signature))
                self.assertFalse(ed25519.verify(key, message + b"x", signature))
                flipped = bytearray(signature)
                flipped[40] ^= 1
                self.assertFalse(ed25519.verify(key, message, bytes(flipped)))

    def test_inputs_are_checked(self):
        key, message, signature = public_key(SEED), b"receipt", sign(SEED, b"receipt")
        self.assertTrue(ed25519.verify(key, message, signature))
        with self.assertRaises(ValueError):
            ed25519.verify(key[:31], message, signature)
        self.assertFalse(ed25519.verify(key, message, signature[:63]))
        self.assertFalse(ed25519.verify(key, message, signature + b"\0"))
        # S + L satisfies the group equation as S does: only S < L refuses it.
        s = int.from_bytes(signature[32:], "little")
        self.assertFalse(ed25519.verify(key, message, signature[:32] + (s + ed25519.L).to_bytes(32, "little")))
        # y = P + 1 names the point of y = 1, written non-canonically.
        self.assertIsNotNone(ed25519.decode_point((1).to_bytes(32, "little")))
        self.assertIsNone(ed25519.decode_point((ed25519.P + 1).to_bytes(32, "little")))
        # A y with no x on the curve.
        off = next(y for y in range(2, 100) if ed25519.decode_point(y.to_bytes(32, "little")) is None)
        self.assertFalse(ed25519.verify(off.to_bytes(32, "little"), message, signature))
        self.assertFalse(ed25519.verify(key, message, off.to_bytes(32, "little") + signature[32:]))
        # x = 0 with its sign bit set.
        self.assertIsNone(ed25519.decode_point((1 | 1 << 255).to_bytes(32, "little")))


class VerifierTest(unittest.TestCase):
    def test_what_the_verifier_refuses(self):
        v = verifier()
        good = token(HEADER, CLAIMS)
        self.assertEqual(v.verify(good, key=CLAIMS["key"], tool="billing.credit", body=BODY).decided_by, "U024BE7LH")
        cases = [
            ("alg none", token({**HEADER, "alg": "none"}, CLAIMS), MalformedError),
            ("another typ", token({**HEADER, "typ": "JWT"}, CLAIMS), MalformedError),
            ("no typ", token({"alg": "EdDSA", "kid": KID}, CLAIMS), MalformedError),
            ("a header that is a list", token([HEADER], CLAIMS), MalformedError),
            ("no kid", token({"alg": "EdDSA", "typ": "countersign-receipt+jwt"}, CLAIMS), UnknownKeyError),
            ("claims that are not JSON", token(HEADER, b"{not json"), MalformedError),
            ("an exp that is not an integer", token(HEADER, {**CLAIMS, "exp": "later"}), MalformedError),
            ("four parts", good + ".x", MalformedError),
            ("a signature that is not base64url", good[:-4] + "!!!!", MalformedError),
            ("a padded signature", good + "==", MalformedError),
            ("a short signature", good[:-8], ReceiptSignatureError),
            ("the claims of another receipt", ".".join([good.split(".")[0], b64(json.dumps({**CLAIMS, "exp": 2**40}).encode()),
                                                         good.split(".")[2]]), ReceiptSignatureError),
            ("empty", "", MissingError),
        ]
        for name, receipt, refusal in cases:
            with self.subTest(name), self.assertRaises(refusal):
                v.verify(receipt, key=CLAIMS["key"], tool="billing.credit", body=BODY)

    def test_the_claims_come_with_the_refusals_after_the_signature(self):
        good = token(HEADER, CLAIMS)
        with self.assertRaises(OtherKeyError) as caught:
            verifier().verify(good, key="wa_other-key", body=BODY)
        self.assertEqual(caught.exception.claims.key, CLAIMS["key"])
        with self.assertRaises(EffectError) as caught:
            verifier().verify(good, body=b'{"amount_cents": 4200, "amount_cents": 4200}')
        self.assertIn("not one JSON value", str(caught.exception))
        with self.assertRaises(EffectError):
            verifier().verify(good, body=b"")
        with self.assertRaises(UnknownKeyError) as caught:
            verifier().verify(token(HEADER | {"kid": "other"}, CLAIMS), body=BODY)
        self.assertIsNone(caught.exception.claims)
        self.assertEqual(caught.exception.code, "unknown_key")

    def test_expiry_and_leeway(self):
        good = token(HEADER, CLAIMS)
        self.assertEqual(verifier(CLAIMS["exp"] - 1).parse(good).exp, CLAIMS["exp"])
        with self.assertRaises(ExpiredError) as caught:
            verifier(CLAIMS["exp"]).parse(good)
        self.assertEqual(caught.exception.claims.iat, CLAIMS["iat"])
        self.assertEqual(verifier(CLAIMS["exp"] + 29, leeway=30).parse(good).iat, CLAIMS["iat"])
        with self.assertRaises(ExpiredError):
            verifier(CLAIMS["exp"] + 30, leeway=30).parse(good)
        # Without a clock, the real one: the vectors' receipt expired in 2025.
        with self.assertRaises(ExpiredError):
            ReceiptVerifier(json.dumps(VECTORS["jwks"])).parse(good)

    def test_verify_request_reads_the_headers(self):
        good = token(HEADER, CLAIMS)
        headers = email.message.Message()
        headers["countersign-receipt"] = " " + good + " "
        headers["idempotency-key"] = CLAIMS["key"]
        self.assertEqual(verifier().verify_request(headers, BODY, "billing.credit").tool, "billing.credit")
        headers.replace_header("idempotency-key", "wa_another")
        with self.assertRaises(OtherKeyError):
            verifier().verify_request(headers, BODY, "billing.credit")
        with self.assertRaises(MissingError):
            verifier().verify_request({"Idempotency-Key": CLAIMS["key"]}, BODY, "billing.credit")

    def test_jwks_documents(self):
        self.assertEqual(sorted(verifier().keys), sorted(k["kid"] for k in VECTORS["keys"]))
        rsa = {"kty": "RSA", "kid": "r", "n": "AQAB", "e": "AQAB"}
        self.assertEqual(list(ReceiptVerifier({"keys": [rsa, VECTORS["jwks"]["keys"][0]]}).keys), [KID])
        for doc in ("not json", "{}", json.dumps({"keys": [rsa]}),
                    json.dumps({"keys": [{**VECTORS["jwks"]["keys"][0], "x": b64(b"short")}]}),
                    json.dumps({"keys": [{**VECTORS["jwks"]["keys"][0], "x": "!" * 43}]})):
            with self.subTest(doc=doc[:40]), self.assertRaises(JWKSError):
                ReceiptVerifier(doc)

    def test_claims_read_as_go_reads_them(self):
        claims = ReceiptClaims.from_json({"key": "k", "exp": 5, "extra": True})
        self.assertEqual((claims.key, claims.tool, claims.iat, claims.exp), ("k", "", 0, 5))
        with self.assertRaises(ValueError):
            ReceiptClaims.from_json({"iat": True})

    def test_canonical_text_writes_what_go_writes(self):
        self.assertEqual(canonical_text(b'{"b": [1, 1e21, 1.50, -0, 123456789012345678], "a": "\\u00e9"}'),
                         '{"a":"\u00e9","b":[1,1e+21,1.5,0,123456789012345680]}')
        for bad in (b"1e400", b"NaN", b"[1] 2", b'"\\ud800"', b"\xff"):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                canonical_text(bad)


class CommandLineTest(unittest.TestCase):
    def run_cli(self, *args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(SDK)}
        return subprocess.run([sys.executable, "-W", "error", "-m", "countersign.receipt", "verify", *args],
                              capture_output=True, text=True, env=env, timeout=60)

    def test_verify_prints_the_claims_or_the_refusal(self):
        with tempfile.TemporaryDirectory() as d:
            jwks, body = Path(d, "jwks.json"), Path(d, "body.json")
            jwks.write_text(json.dumps(VECTORS["jwks"]))
            body.write_bytes(BODY)
            good = VECTORS["signed"][0]["receipt"]
            common = ["--jwks", str(jwks), "--key", CLAIMS["key"], "--tool", "billing.credit", "--body", str(body)]
            done = self.run_cli(*common, "--now", str(NOW), good)
            self.assertEqual((done.returncode, done.stderr), (0, ""))
            self.assertEqual(json.loads(done.stdout), CLAIMS)
            # Without --now, the real clock: the vectors' receipt has expired.
            done = self.run_cli(*common, good)
            self.assertEqual((done.returncode, done.stdout, done.stderr), (1, "", "expired\n"))
            body.write_bytes(BODY.replace(b"4200", b"4201"))
            done = self.run_cli(*common, "--now", str(NOW), good)
            self.assertEqual((done.returncode, done.stderr), (1, "effect\n"))
            done = self.run_cli("--jwks", str(Path(d, "absent.json")), "--body", str(body), good)
            self.assertEqual(done.returncode, 2)


if __name__ == "__main__":
    unittest.main()
