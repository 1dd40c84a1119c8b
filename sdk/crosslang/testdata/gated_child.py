"""An agent process of crosslang_test.go: one gated write of an
agent-executed tool, with the Python SDK. Run as

    python3 gated_child.py URL TOKEN TOOL RUN_ID EFFECT_JSON CALLS JOURNAL_DIR

with the SDK on PYTHONPATH. It prints the request's key as one JSON line
before it asks, so the test can approve it, then the gated call's result
as another. The function appends one JSON line to CALLS, the key, the
receipt and the effect it was given in its canonical form (RFC 8785,
the bytes whose SHA-256 the receipt holds), and returns the provider
reference payout_py_N, N the lines CALLS then holds."""

import json
import sys

from countersign import Client, intent_key
from countersign.canonical import canonical


def main() -> None:
    url, token, tool, run, effect_json, calls, journal = sys.argv[1:8]
    effect = json.loads(effect_json)
    client = Client(url, token, timeout=30)

    @client.gated(tool, journal_dir=journal, timeout=30)
    def payout(effect, receipt, key):
        with open(calls, "a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "receipt": receipt, "body": canonical(effect)}) + "\n")
        with open(calls, encoding="utf-8") as f:
            return f"payout_py_{len(f.readlines())}"

    print(json.dumps({"key": intent_key(run, 1, tool, effect)}), flush=True)
    result = payout(run, 1, effect, summary="Pay out, from Python")
    print(json.dumps({"called": result.called, "state": result.request.execution.state,
                      "provider_ref": result.outcome.provider_ref}), flush=True)


if __name__ == "__main__":
    main()
