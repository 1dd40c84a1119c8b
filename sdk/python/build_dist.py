"""Builds the countersign wheel and sdist with the standard library only.

No package index is needed to build or install the SDK: this file is the
project's build backend (PEP 517, named in pyproject.toml), so
`pip install --no-index ./sdk/python` works offline, and it runs by itself
to write the release files:

    python3 sdk/python/build_dist.py OUTDIR    # countersign-<ver>-py3-none-any.whl and countersign-<ver>.tar.gz

The wheel follows the binary distribution format (METADATA, WHEEL and RECORD
in countersign-<ver>.dist-info); the sdist holds PKG-INFO and this file, so
it builds the same wheel. The version is countersign/version.py's; inside the
repository it must match the VERSION file's (scripts/sdk-version writes it).
Entries carry a fixed time (SOURCE_DATE_EPOCH when set), so the same tree
gives the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import io
import gzip
import os
import re
import sys
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "countersign"
TAG = "py3-none-any"
# The files the sdist carries beside the package.
SDIST_FILES = ("pyproject.toml", "README.md", "LICENSE", "build_dist.py")


def pep440(release: str) -> str:
    """The Python form of a VERSION-file version: v0.2.0-dev is 0.2.0.dev0."""
    m = re.fullmatch(r"v?(\d+\.\d+\.\d+)(?:-(dev|alpha|beta|rc)\.?(\d+)?)?", release.strip())
    if not m:
        raise ValueError(f"version {release!r} is not vX.Y.Z, vX.Y.Z-dev or vX.Y.Z-rc.N")
    base, pre, n = m.group(1), m.group(2), m.group(3) or "0"
    if pre is None:
        return base
    if pre == "dev":
        return f"{base}.dev{n}"
    return base + {"alpha": "a", "beta": "b", "rc": "rc"}[pre] + n


def package_version() -> str:
    """countersign/version.py's __version__, checked against the repository's VERSION file when there is one."""
    with open(os.path.join(ROOT, PACKAGE, "version.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m:
        raise SystemExit("build_dist: no __version__ in countersign/version.py")
    version = m.group(1)
    release_file = os.path.join(ROOT, "..", "..", "VERSION")
    if os.path.exists(release_file):
        with open(release_file, encoding="utf-8") as f:
            want = pep440(f.read())
        if version != want:
            raise SystemExit(f"build_dist: countersign/version.py says {version}, the VERSION file {want}: run scripts/sdk-version")
    return version


def project() -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10: install the built wheel instead
        raise SystemExit("build_dist: building needs Python 3.11 or newer (tomllib); the wheel installs on 3.10")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def metadata(version: str) -> bytes:
    """The core metadata (version 2.1): METADATA in the wheel, PKG-INFO in the sdist."""
    p = project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {version}",
        f"Summary: {p['description']}",
        f"License: {p['license']['text']}",
        f"Requires-Python: {p['requires-python']}",
    ]
    lines += [f"Project-URL: {k}, {v}" for k, v in p.get("urls", {}).items()]
    lines += [f"Classifier: {c}" for c in p.get("classifiers", [])]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(ROOT, p["readme"]), encoding="utf-8") as f:
        readme = f.read()
    return ("\n".join(lines) + "\n\n" + readme).encode("utf-8")


def package_files() -> list[tuple[str, bytes]]:
    """The package's files by archive name, sorted, caches left out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), f.read()))
    return out


def read(name: str) -> bytes:
    with open(os.path.join(ROOT, name), "rb") as f:
        return f.read()


def fixed_time() -> int:
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)  # not before 1980 (zip)


def write_wheel(directory: str, files: list[tuple[str, bytes]], version: str) -> str:
    """Writes files plus the .dist-info (METADATA, WHEEL, LICENSE, RECORD) as a wheel; returns its file name."""
    dist_info = f"{PACKAGE}-{version}.dist-info"
    wheel = f"Wheel-Version: 1.0\nGenerator: countersign build_dist\nRoot-Is-Purelib: true\nTag: {TAG}\n"
    files = files + [
        (f"{dist_info}/METADATA", metadata(version)),
        (f"{dist_info}/WHEEL", wheel.encode()),
        (f"{dist_info}/LICENSE", read("LICENSE")),
    ]
    record = io.StringIO()
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{name},sha256={digest},{len(data)}\n")
    record.write(f"{dist_info}/RECORD,,\n")
    files.append((f"{dist_info}/RECORD", record.getvalue().encode()))

    name = f"{PACKAGE}-{version}-{TAG}.whl"
    when = time.gmtime(fixed_time())[:6]
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            info = zipfile.ZipInfo(arcname, date_time=when)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def write_sdist(directory: str, version: str) -> str:
    """Writes countersign-<ver>.tar.gz: PKG-INFO, the build files and the package; returns its file name."""
    base = f"{PACKAGE}-{version}"
    files = [("PKG-INFO", metadata(version))] + [(n, read(n)) for n in SDIST_FILES] + package_files()
    name = f"{base}.tar.gz"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for arcname, data in files:
            info = tarfile.TarInfo(f"{base}/{arcname}")
            info.size, info.mode, info.mtime = len(data), 0o644, fixed_time()
            tar.addfile(info, io.BytesIO(data))
    with open(os.path.join(directory, name), "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=fixed_time()) as gz:
            gz.write(raw.getvalue())
    return name


# PEP 517 and PEP 660 hooks: pip calls these with no index and no setuptools.

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = package_version()
    return write_wheel(wheel_directory, package_files(), version)


def build_sdist(sdist_directory, config_settings=None):
    return write_sdist(sdist_directory, package_version())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose one file, a .pth, puts this directory on sys.path (pip install -e)."""
    pth = (ROOT + "\n").encode()
    return write_wheel(wheel_directory, [(f"__editable__.{PACKAGE}.pth", pth)], package_version())


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: build_dist.py OUTDIR", file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    print(os.path.join(out, build_wheel(out)))
    print(os.path.join(out, build_sdist(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
