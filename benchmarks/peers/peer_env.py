"""The peers' isolated virtual environment, created once in the cache (never committed).

The three peers are pinned; pip resolves what they need from PyPI, and the exact set that
was measured (``pip freeze``) is recorded with the results.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

PEERS = ("mldp-text==0.1.2", "pypantera==1.0.2", "dp-diffractor==0.2.1")


def env_dir(cache: Path, requirements: tuple[str, ...] = PEERS) -> Path:
    """Folder of the environment for ``requirements`` (a new one when the pins change)."""
    key = hashlib.sha256("\n".join(sorted(requirements)).encode()).hexdigest()[:12]
    return cache / f"venv-{key}"


def python_of(env: Path) -> Path:
    return env / "bin" / "python"


def ensure_env(cache: Path, requirements: tuple[str, ...] = PEERS) -> Path:
    """The environment's python, creating the environment on first use."""
    env = env_dir(cache, requirements)
    stamp = env / ".dxp-peers-installed"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(env)], check=True)
        pip = [str(python_of(env)), "-m", "pip", "--disable-pip-version-check"]
        subprocess.run([*pip, "install", "--quiet", *requirements], check=True)
        stamp.write_text("\n".join(requirements) + "\n")
    return python_of(env)


def freeze(python: Path) -> list[str]:
    """``pip freeze`` of the environment (what was actually measured)."""
    result = subprocess.run(
        [str(python), "-m", "pip", "freeze", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in result.stdout.splitlines() if line and not line.startswith("#")]
