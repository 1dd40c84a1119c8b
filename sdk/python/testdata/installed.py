"""Run by package_test.go with the Python of a fresh virtual environment the
wheel or the sdist was installed into, from outside the source tree:

    python installed.py VERSION KEY_VECTORS_JSON [SDK_DIR]

It fails unless countersign imports from that environment, says the version
the release names (as __version__ and in its installed metadata), builds the
README's clients, and derives the shared vectors' keys. Given SDK_DIR (and
COUNTERSIGN_BIN), it then runs the README's example against a real serve
started by the SDK's test helpers, with the installed package."""

import importlib.metadata
import json
import sys
import sysconfig
import uuid

from countersign import AsyncClient, Client, InvalidEffectError, intent_key
import countersign

version, vectors_path = sys.argv[1], sys.argv[2]

site = sysconfig.get_paths()["purelib"]
assert countersign.__file__.startswith(site), f"countersign imported from {countersign.__file__}, not from {site}"
assert countersign.__version__ == version, f"__version__ {countersign.__version__}, want {version}"
installed = importlib.metadata.version("countersign")
assert installed == version, f"installed metadata says {installed}, want {version}"
assert importlib.metadata.metadata("countersign")["License"] == "Apache-2.0"

# The README's first lines: a client, and the error it catches.
client = Client("http://127.0.0.1:8080", "token")
assert issubclass(InvalidEffectError, Exception)
AsyncClient("http://127.0.0.1:8080", "token")


def exact(literal):
    raise ValueError("a fraction or an exponent")


checked = 0
with open(vectors_path, encoding="utf-8") as f:
    vectors = json.load(f)["keys"]
for v in vectors:
    try:  # only the vectors whose numbers are integers: a float would round
        intent = json.loads(json.dumps(v["intent"]), parse_float=exact)
    except ValueError:
        continue
    got = intent_key(intent["run_id"], intent["step"], intent["tool"], intent["effect"])
    assert got == v["key"], f"{v['name']}: key {got}, want {v['key']}"
    checked += 1
assert checked >= 5, f"only {checked} integer-only key vectors"
print(f"countersign {version} from {countersign.__file__}: {checked} keys")

if len(sys.argv) > 3:
    # The SDK's test helpers start serve and approve with countersign approve; appended
    # last, so countersign stays the installed one.
    sys.path.append(sys.argv[3])
    from tests.local_server import TOKEN, Server

    server = Server()
    try:
        token = TOKEN
        run = f"r-{uuid.uuid4().hex[:8]}"
        # The README's example (its tool is billing.credit; the helpers' is sdk.credit, of the same schema),
        # approved by the reviewer once the request is pending.
        client = Client(server.url, token)
        effect = {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}
        pending = client.request(tool="sdk.credit", run_id=run, step=6, effect=effect, summary="Credit 42.00 USD to inv_8841")
        server.approve(pending)
        try:
            req = client.request_and_wait(tool="sdk.credit", run_id=run, step=6, effect=effect,
                                          summary="Credit 42.00 USD to inv_8841", timeout=3600)
        except InvalidEffectError as e:
            raise SystemExit(e.errors)
        assert sys.modules["countersign"].__file__.startswith(site)
        assert (req.status, req.succeeded, req.key) == ("approved", True, pending.key), (req.status, req.succeeded)
        writes = [d for d in server.provider.dispatches if d.key == req.key]
        assert len(writes) == 1 and writes[0].verified, f"{len(writes)} writes under {req.key}"
        print(f"README example: {req.status} {req.succeeded}, written once under {req.key}")
    finally:
        server.close()
