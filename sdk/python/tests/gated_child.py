"""A process that makes one gated write, for the crash tests of
test_gated.py, which kill it (SIGKILL) between the write and its report:

    python3 -m tests.gated_child COUNTERSIGN_URL RUN_ID JOURNAL_DIR PROVIDER_URL

Its function posts the approved effect to the provider, with the key and the
receipt, and returns the provider's id. It prints the gated call's result as
one JSON line."""

import json
import sys
import urllib.request

from countersign import Client
from countersign.canonical import dumps

from .local_server import TOKEN

PAYOUT = {"vendor": "v_12", "amount_cents": 4200}


def main() -> None:
    url, run, journal, provider = sys.argv[1:5]
    client = Client(url, TOKEN, timeout=30)

    @client.gated("sdk.payout", journal_dir=journal, timeout=30)
    def payout(effect, receipt, key):
        write = urllib.request.Request(provider + "/payouts", data=dumps(effect).encode(), method="POST", headers={
            "Content-Type": "application/json", "Idempotency-Key": key, "Countersign-Receipt": receipt})
        with urllib.request.urlopen(write, timeout=10) as resp:
            return json.loads(resp.read())["id"]

    result = payout(run, 1, PAYOUT, summary="Pay v_12 42.00")
    print(json.dumps({"called": result.called, "status": result.outcome.status,
                      "provider_ref": result.outcome.provider_ref, "value": result.value}), flush=True)


if __name__ == "__main__":
    main()
