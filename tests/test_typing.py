"""The public names as a user's type checker sees them (``mypy --strict`` on user code).

The package is lazy (PEP 562 ``__getattr__``), which type checkers would read as "any
attribute exists, typed Any": the estimators then lost their types and a misspelt name
passed ``--strict`` only to fail at run time (API review, nineteenth session).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parents[1]

USER_CODE = """
import dxp_plugins as dxp
from dxp_plugins import registry
from dxp_plugins.estimators import LPLPTransformer, TextPrivatizer
from dxp_plugins.pipeline import Privatizer

reveal_type(dxp.TextPrivatizer)
reveal_type(LPLPTransformer)
reveal_type(Privatizer)
reveal_type(dxp.PrivateText)
reveal_type(dxp.distances.get_metric)
TextPrivatizer(epsilon=1.0, pos="*", entities=("PERSON", "ORG"))

@registry.token_filters.register("long_words")
def long_words(token: object) -> bool:
    return True

reveal_type(long_words)
reveal_type(registry.token_filters.register("long_words.v2", func=long_words))
print("long_words" in registry.token_filters, registry.embeddings.get_entry_points())

dxp.Madlibb
dxp.Madlib("glove-6b-50d", 1.0, oov="drop", index="flat")
TextPrivatizer(epsilon=1.0, privatize_at="predict")
dxp.LPLPTransformer(epsilon=1.0, calibration="papers")
dxp.LPLPTransformer(privatize_at="fitted")
dxp.TEM("glove-6b-50d", 1.0, oov="passthrough")
dxp.estimators.TextPrivatiser
from dxp_plugins import privatise_text
"""


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[str]]:
    folder = tmp_path_factory.mktemp("user_code")
    (folder / "user.py").write_text(USER_CODE, encoding="utf-8")
    (folder / "mypy.ini").write_text("[mypy]\n", encoding="utf-8")  # not the repo's config
    command = [
        sys.executable, "-m", "mypy", "--strict", "--no-incremental",
        "--config-file", "mypy.ini", "--cache-dir", str(folder / "cache"),
        "--python-executable", sys.executable, "user.py",
    ]  # fmt: skip
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    by_line: dict[int, list[str]] = {}
    for line in done.stdout.splitlines():
        found = re.match(r"user\.py:(\d+): (.*)", line)
        if found:
            by_line.setdefault(int(found[1]), []).append(found[2])
    assert by_line, done.stdout + done.stderr
    return by_line


def _line(fragment: str) -> int:
    return next(i for i, text in enumerate(USER_CODE.splitlines(), 1) if fragment in text)


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        ("reveal_type(dxp.TextPrivatizer)", "-> dxp_plugins.estimators.text.TextPrivatizer"),
        ("reveal_type(LPLPTransformer)", "-> dxp_plugins.estimators.lplp.LPLPTransformer"),
        ("reveal_type(Privatizer)", "-> dxp_plugins.pipeline.component.Privatizer"),
        ("reveal_type(dxp.PrivateText)", "-> dxp_plugins.text.PrivateText"),
        ("reveal_type(dxp.distances", "def (metric: "),
        ("reveal_type(long_words)", 'Revealed type is "def (token: object) -> bool"'),
        ("func=long_words", 'Revealed type is "def (token: object) -> bool"'),
    ],
)
def test_public_names_keep_their_types(mypy_output, fragment, expected):
    notes = mypy_output.get(_line(fragment), [])
    assert any(expected in note for note in notes), notes


@pytest.mark.parametrize("fragment", ["dxp.Madlibb", "TextPrivatiser", "privatise_text"])
def test_a_misspelt_name_is_a_type_error(mypy_output, fragment):
    errors = [e for e in mypy_output.get(_line(fragment), []) if e.startswith("error:")]
    assert errors and "[attr-defined]" in errors[0], errors


@pytest.mark.parametrize(
    ("fragment", "argument"),
    [
        ('oov="drop"', "oov"),
        ('oov="drop"', "index"),
        ('privatize_at="predict"', "privatize_at"),
        ('privatize_at="fitted"', "privatize_at"),  # LPLPTransformer's, the same Literal
        ('calibration="papers"', "calibration"),
    ],
)
def test_a_misspelt_setting_is_a_type_error(mypy_output, fragment, argument):
    """The string settings with a fixed set of values are ``Literal`` (refused at run time
    too, but a type checker catches the typo before anything runs)."""
    errors = [e for e in mypy_output.get(_line(fragment), []) if e.startswith("error:")]
    assert any(f'Argument "{argument}"' in e and "[arg-type]" in e for e in errors), errors


@pytest.mark.parametrize("fragment", ['pos="*"', "get_entry_points()", 'oov="passthrough"'])
def test_documented_calls_type_check(mypy_output, fragment):
    """``pos="*"`` and a tuple of entity types are documented and accepted at run time;
    so are catalogue's registry methods."""
    assert _line(fragment) not in mypy_output, mypy_output[_line(fragment)]
