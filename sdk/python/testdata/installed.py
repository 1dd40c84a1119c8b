"""Run by package_test.go with the Python of a fresh virtual environment the
wheel or the sdist was installed into, from outside the source tree:

    python installed.py VERSION KEY_VECTORS_JSON

It fails unless countersign imports from that environment, says the version
the release names (as __version__ and in its installed metadata), builds the
README's clients, and derives the shared vectors' keys."""

import importlib.metadata
import json
import sys
import sysconfig

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
