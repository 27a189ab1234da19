"""Each dependency floor of pyproject.toml, installed beside the newest numpy and scipy, imports.

`dev.sh lowest` lowers numpy and scipy together with everything else, so it never sees an old
release built against numpy 1 (or calling a scipy function since removed) installed next to a
new numpy: pip accepts that pairing when the old release does not declare its bounds, and the
import then fails at first use. This script installs, for every ``name>=floor`` requirement
of the runtime dependencies and the ``plot`` and ``dev`` extras, ``name==floor`` with the
newest numpy and scipy the resolver allows into a fresh environment (uv, binary wheels only)
and imports it. A floor that declares ``numpy<2`` resolves to numpy 1 and passes: that pairing
is consistent.

Usage: python .ci/floors.py UV PYTHON   (uv executable, interpreter to build environments for)

Meant for the oldest supported Python (3.11, which `dev.sh lowest` picks first): several
floors have no wheels for newer Pythons, where pip picks newer releases anyway.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

#: Distribution name -> module to import, where they differ.
MODULES = {
    "faiss-cpu": "faiss",
    "scikit-learn": "sklearn",
    "pot": "ot",
    "pyarrow": "pyarrow.parquet",
    "gensim": "gensim.models",
    "pytest": "pytest",
}
#: Varied by the resolver in every environment, not checked at their own floor here.
FREE = {"numpy", "scipy"}
WHEELS_ONLY = ["--only-binary", ":all:"]
FLOOR = re.compile(r"^([A-Za-z0-9_.-]+)\s*>=\s*([0-9][^,;\s]*)")


def floors(pyproject: Path) -> list[tuple[str, str]]:
    """``(name, floor)`` for each ``name>=floor`` runtime, plot and dev requirement."""
    project = tomllib.loads(pyproject.read_text())["project"]
    extras = project.get("optional-dependencies", {})
    requirements = project["dependencies"] + extras.get("plot", []) + extras.get("dev", [])
    found: dict[str, str] = {}
    for requirement in requirements:
        match = FLOOR.match(requirement)
        if match and match.group(1).lower() not in FREE:
            found.setdefault(match.group(1).lower(), match.group(2))
    return sorted(found.items())


def check(uv: str, python: str, name: str, floor: str, scratch: Path) -> tuple[bool, str]:
    env = scratch / name
    subprocess.run([uv, "venv", "-q", "--python", python, str(env)], check=True)
    install = subprocess.run(
        [
            uv,
            "pip",
            "install",
            "-q",
            "--python",
            str(env / "bin" / "python"),
            *WHEELS_ONLY,
            f"{name}=={floor}",
            "numpy",
            "scipy",
        ],
        capture_output=True,
        text=True,
    )
    if install.returncode:
        last = (install.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"install failed (no wheel of it for this Python?): {last}"
    module = MODULES.get(name, name.replace("-", "_"))
    code = f"import numpy, scipy, {module}; print(numpy.__version__, scipy.__version__)"
    run = subprocess.run([str(env / "bin" / "python"), "-c", code], capture_output=True, text=True)
    if run.returncode:
        return False, "import failed: " + (run.stderr.strip().splitlines() or ["?"])[-1]
    numpy_version, scipy_version = run.stdout.split()
    return True, f"imports beside numpy {numpy_version}, scipy {scipy_version}"


def main() -> int:
    uv, python = sys.argv[1], sys.argv[2]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="dxp-floors-") as scratch:
        for name, floor in floors(Path(__file__).resolve().parents[1] / "pyproject.toml"):
            ok, message = check(uv, python, name, floor, Path(scratch))
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}=={floor}: {message}", flush=True)
    if failed:
        print(f"{failed} floor(s) fail beside the newest numpy/scipy: raise them")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
