"""Without gensim (Python 3.14, where it has no wheel and is no dependency) its interop says
in one line that it needs gensim and how to install it. Its absence is simulated, so these
run where gensim is installed too."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins import topics
from dxp_plugins.cli import main as cli_main
from dxp_plugins.datasets import load_lee_background
from dxp_plugins.errors import DxpError

#: SHA-256 of the Lee corpus as load_lee_background returns it from an installed gensim
#: (articles joined by newlines).
LEE_DIGEST = "1447726d3d5eeb63a46dbaea3abf4769ed52b9e5ec52d2215e2eec77068efe25"


@pytest.fixture
def no_gensim(monkeypatch):
    for name in [name for name in sys.modules if name.split(".")[0] == "gensim"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "gensim", None)  # import gensim -> ImportError


@pytest.fixture
def glove_file(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text("cat 1 0\ndog 0 1\nsun 1 1\n", encoding="utf-8")
    return path


def check(error: BaseException, feature: str) -> None:
    message = str(error)
    assert isinstance(error, ImportError) and isinstance(error, DxpError)
    assert message.startswith(f"{feature} needs gensim: pip install gensim")
    assert "\n" not in message and error.name == "gensim"


def test_the_keyed_vectors_loader_names_gensim(no_gensim, glove_file):
    with pytest.raises(ImportError) as info:
        dxp.load_embeddings("keyed-vectors.v1", path=glove_file, no_header=True)
    check(info.value, "load_keyed_vectors (embeddings 'keyed-vectors.v1')")
    with pytest.raises(ImportError) as info:  # through a door's settings
        dxp.TextPrivatizer(
            epsilon=3.0, embeddings="keyed-vectors.v1", embeddings_params={"path": str(glove_file)}
        ).fit(["cat"])
    check(info.value, "load_keyed_vectors (embeddings 'keyed-vectors.v1')")


def test_the_topic_adapters_name_gensim(no_gensim):
    counts, names = np.array([[1, 2], [0, 3]]), ["a", "b"]
    for call, feature in [
        (lambda: topics.to_gensim(counts, names), "to_gensim"),
        (lambda: topics.gensim_lda(counts, names, num_topics=1), "gensim_lda"),
        (lambda: topics.coherence([names], counts, names), "coherence (gensim's CoherenceModel)"),
    ]:
        with pytest.raises(ImportError) as info:
            call()
        check(info.value, feature)


def test_the_lee_corpus_comes_from_gensims_pinned_wheel(no_gensim):
    """Without gensim the same 300 articles are read from gensim's pinned wheel (fetched
    once into the cache folder, checked against its SHA-256, never installed)."""
    from dxp_plugins.datasets import GENSIM_WHEEL, cache_dir

    articles = load_lee_background()
    assert (cache_dir() / GENSIM_WHEEL.filename).is_file()
    assert "gensim" not in [name.split(".")[0] for name in sys.modules if sys.modules[name]]
    assert len(articles) == 300 and articles[0].startswith("Hundreds of people")
    digest = hashlib.sha256("\n".join(articles).encode("utf-8")).hexdigest()
    assert digest == LEE_DIGEST


def test_the_command_line_shows_the_message(no_gensim, glove_file, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("cat dog\n", encoding="utf-8")
    args = ["privatize", source, "-o", tmp_path / "out.txt", "--epsilon", "3"]
    args += ["--embeddings", "keyed-vectors.v1", "--embeddings-param", f"path={glove_file}"]
    args += ["--embeddings-param", "no_header=true"]
    assert cli_main([str(a) for a in args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dxp: error: load_keyed_vectors (embeddings 'keyed-vectors.v1') ")
    assert "needs gensim: pip install gensim" in err and err.count("\n") == 1


def test_the_library_imports_without_gensim():
    """Only the interop needs gensim: the modules holding it import without it."""
    code = (
        "import sys; sys.modules['gensim'] = None\n"
        "import dxp_plugins.topics, dxp_plugins.datasets, dxp_plugins.embeddings.loaders\n"
        "print(sorted(name for name in sys.modules if name.startswith('gensim')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "['gensim']\n", "")


def test_a_pipeline_for_keyed_vectors_saves_without_its_fingerprint(no_gensim, glove_file):
    """As when the vectors are not on this machine: saved, with a warning (diff review W1:
    without gensim it raised)."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe(
        "dxp_privatizer",
        config={
            "epsilon": 3.0,
            "embeddings": "keyed-vectors.v1",
            "embeddings_params": {"path": str(glove_file), "no_header": True},
        },
    )
    with pytest.warns(dxp.DxpWarning, match="saving without the embeddings fingerprint"):
        assert nlp.to_bytes()


def test_a_broken_gensim_is_not_called_missing(monkeypatch):
    """gensim installed but failing to import (an incompatible scipy, say) keeps its own
    error: "pip install gensim" would not help (diff review W4)."""
    from dxp_plugins._optional import require_gensim

    for name in [name for name in sys.modules if name.split(".")[0] == "gensim"]:
        monkeypatch.delitem(sys.modules, name)

    class BrokenGensim:
        def find_spec(self, name, path=None, target=None):
            if name == "gensim":
                raise ModuleNotFoundError(
                    "No module named 'scipy.linalg.missing_part'", name="scipy.linalg.missing_part"
                )
            return None

    monkeypatch.setattr(sys, "meta_path", [BrokenGensim(), *sys.meta_path])
    with pytest.raises(ModuleNotFoundError) as info:
        require_gensim("to_gensim")
    assert info.value.name == "scipy.linalg.missing_part"
