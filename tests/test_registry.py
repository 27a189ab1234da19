"""Registries fed by entry points (docs/plugins.md)."""

from __future__ import annotations

import importlib.metadata

import catalogue
import pytest

import dxp_plugins as dxp
from dxp_plugins import registry
from dxp_plugins.cli import main


def test_builtin_names_come_from_installed_metadata():
    advertised = {
        entry.name
        for entry in importlib.metadata.entry_points(group="dxp_plugins_embeddings")
        if entry.value.startswith("dxp_plugins.")
    }
    assert {"glove-6b-50d", "keyed-vectors.v1", "spacy-vectors.v1"} <= advertised
    for name in advertised:
        assert callable(registry.embeddings.get(name))
    assert registry.mechanisms.get("madlib") is dxp.Madlib
    assert "madlib" in registry.names(registry.mechanisms)


def test_the_shared_list_of_built_in_mechanisms_is_every_built_in():
    """The tests that run on each built-in take ``tests.fixtures.BUILTIN_MECHANISMS`` (from
    ``BUILTIN_NAMES``): a mechanism declared in pyproject.toml but not listed there would be
    left out of all of them (contributor review 28, F6)."""
    from tests.fixtures import BUILTIN_MECHANISMS

    declared = registry.declarations(registry.mechanisms)
    builtin = {name for name, listed in declared.items() if listed[0].builtin}
    assert builtin == set(BUILTIN_MECHANISMS)


@pytest.fixture
def own_registrations():
    """Registrations a test makes in this library's registries are removed after it."""
    from tests.door_fixtures import own_registrations_undone

    with own_registrations_undone():
        yield


@pytest.fixture
def third_party_entry_points(monkeypatch):
    """Install two extra entry points as a third-party package would declare them."""
    extra = [
        importlib.metadata.EntryPoint(
            name="tiny-plane.v1",
            value="tests.third_party_plugin:load_tiny_plane",
            group="dxp_plugins_embeddings",
        ),
        importlib.metadata.EntryPoint(
            name="broken.v1",
            value="tests.no_such_module:load",
            group="dxp_plugins_embeddings",
        ),
    ]
    installed = catalogue.AVAILABLE_ENTRY_POINTS
    existing = [entry for group in installed.groups for entry in installed.select(group=group)]
    entry_points = importlib.metadata.EntryPoints([*existing, *extra])
    monkeypatch.setattr(catalogue, "AVAILABLE_ENTRY_POINTS", entry_points)


def test_registry_finds_third_party_loader(third_party_entry_points):
    table = dxp.load_embeddings("tiny-plane.v1", scale=2.0)
    assert table.words == ("north", "south", "east", "west") and table.vectors[3, 0] == 2.0
    mech = dxp.make_mechanism("madlib", table, epsilon=1.0)
    assert set(mech.privatize(["north"] * 20)) <= set(table.words)


def test_listing_warns_about_a_broken_plugin_and_keeps_the_rest(third_party_entry_points):
    with pytest.warns(RuntimeWarning, match="broken.v1"):
        listed = registry.describe(registry.embeddings)
    assert "tiny-plane.v1" in listed and "glove-6b-50d" in listed
    assert listed["broken.v1"] == "[failed to load: ModuleNotFoundError]"  # not vanished


def test_cli_lists_third_party_loader(third_party_entry_points, capsys):
    assert main(["embeddings", "list"]) == 0
    captured = capsys.readouterr()
    assert "tiny-plane.v1" in captured.out and "Four words on a square" in captured.out
    assert "dxp: warning: embeddings entry 'broken.v1' failed to load" in captured.err


def test_package_dir_lists_each_public_name_once():
    names = dir(dxp)
    assert len(names) == len(set(names)) and {"Madlib", "TEM", "calibration"} <= set(names)
    assert not {"annotations", "importlib", "TYPE_CHECKING", "Any"} & set(names)


def test_unknown_names_list_what_is_available():
    with pytest.raises(ValueError, match=r"available: .*glove-6b-50d"):
        dxp.load_embeddings("no-such-vectors")
    with pytest.raises(ValueError, match=r"unknown mechanism 'nope'.*madlib"):
        dxp.make_mechanism("nope", "glove-6b-50d", epsilon=1.0)


def test_make_mechanism_names_a_missing_or_unknown_argument():
    with pytest.raises(TypeError, match="mechanism 'tem': epsilon is required"):
        dxp.make_mechanism("tem", "glove-6b-50d")
    with pytest.raises(
        TypeError,
        match=r"mechanism 'madlib': unknown argument\(s\) \['epslion'\]; accepted: epsilon, ",
    ):
        dxp.make_mechanism("madlib", "glove-6b-50d", epslion=1.0)


def test_importing_the_package_is_cheap():
    import subprocess
    import sys

    code = (
        "import sys, dxp_plugins, dxp_plugins.registry;"
        "heavy = ('faiss', 'gensim', 'spacy', 'sklearn', 'pyarrow');"
        "heavy = [m for m in heavy if m in sys.modules];"
        "print(heavy)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_public_names_are_visible_to_type_checkers():
    """Type checkers read neither ``__getattr__`` nor a computed ``__all__``: each lazy name
    and submodule needs an ``import X as X`` under TYPE_CHECKING, and the package ships
    ``py.typed`` (PEP 561) so checkers use its annotations at all."""
    import ast
    from importlib import resources
    from pathlib import Path

    source = Path(dxp.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    literal_all = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    )
    re_exported = {
        alias.asname
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "errors"
        for alias in node.names
        if alias.asname == alias.name
    }
    eager = {
        "BudgetExceededError",
        "CalibrationWarning",
        "DxpError",
        "DxpWarning",
        "InvalidTableError",
        "OOVError",
        "OOVWarning",
        "PluginLoadError",
        "PluginWarning",
        "PrivacyWarning",
        "TextTooLongError",
    }
    assert set(literal_all) == eager | {"SeededRandomnessWarning", "__version__", *dxp._LAZY}
    assert set(dxp._LAZY) | set(dxp._SUBMODULES) <= re_exported
    assert resources.files("dxp_plugins").joinpath("py.typed").is_file()


PUBLIC_MODULES = [
    "audit",
    "datasets",
    "distances",
    "errors",
    "guarantee",
    "neighbors",
    "plotting",
    "testing",
    "text",
    "topics",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_modules_declare_their_names(name):
    """Each public module lists its API in a literal ``__all__`` of names it defines (or
    re-exports from a private module), and
    every ``from dxp_plugins.<module> import ...`` in the README, docs, examples and
    benchmarks uses only those names (users copy those lines)."""
    import ast
    import importlib
    import inspect
    import re
    from pathlib import Path

    module = importlib.import_module(f"dxp_plugins.{name}")
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    declared = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    )
    assert declared == module.__all__
    assert len(set(declared)) == len(declared)
    for public in declared:
        value = getattr(module, public)
        if inspect.isfunction(value) or inspect.isclass(value):
            home = value.__module__
            assert home == module.__name__ or home.startswith("dxp_plugins._"), public

    root = Path(__file__).resolve().parents[1]
    sources = [root / "README.md", *root.glob("docs/*.md"), *root.glob("examples/*.py")]
    sources += root.glob("benchmarks/**/*.py")
    pattern = re.compile(rf"from dxp_plugins\.{name} import (?:\(([^)]*)\)|([^\n]*))")
    used = {
        word.split(" as ")[0].strip()
        for path in sources
        for match in pattern.finditer(path.read_text(encoding="utf-8"))
        for word in (match.group(1) or match.group(2)).split(",")
        if word.strip()
    }
    assert used <= set(declared), sorted(used - set(declared))


def test_mechanism_plugins_set_their_metric_either_way(glove_5k):
    """A plugin names its metric as a class attribute (as KaryRandomizedResponse does) or
    once in __init__ (as TEM does); neither can be reassigned afterwards."""
    import numpy as np

    from dxp_plugins.mechanisms.base import Mechanism
    from tests.door_fixtures import KaryRandomizedResponse

    class PerInstance(Mechanism):
        name = "per-instance-test"

        def __init__(self, embeddings, epsilon):
            super().__init__(embeddings, epsilon)
            self.metric = "discrete"

        def _prepare(self):  # a plugin's own helper: no clash with the base class's hooks
            return np.maximum

        def _sample(self, ids, rng, epsilon):  # plumbing only: every word to its own row
            return self._prepare()(ids, 0)

    for mechanism in (PerInstance(glove_5k, 1.0), KaryRandomizedResponse(glove_5k, 1.0)):
        assert mechanism.privatize_ids(np.array([3])).shape == (1,)
        assert mechanism.last_guarantee.metric == "discrete"
        with pytest.raises(AttributeError, match="metric is read-only"):
            mechanism.metric = "euclidean"


# -- name resolution: broken plugins, duplicates (review 7, F3/F4) ---------------------------
def _plugin(name, value, group, dist=None):
    """An entry point as a third-party distribution ``dist`` would declare it."""
    import types

    entry = importlib.metadata.EntryPoint(name=name, value=value, group=group)
    return entry._for(types.SimpleNamespace(name=dist)) if dist else entry


def _install(monkeypatch, *extra, first=False):
    installed = catalogue.AVAILABLE_ENTRY_POINTS
    existing = [entry for group in installed.groups for entry in installed.select(group=group)]
    ordered = [*extra, *existing] if first else [*existing, *extra]
    monkeypatch.setattr(
        catalogue, "AVAILABLE_ENTRY_POINTS", importlib.metadata.EntryPoints(ordered)
    )
    monkeypatch.setattr(registry, "_WARNED", set(), raising=False)


def test_a_broken_plugin_does_not_turn_a_typo_into_its_import_error(monkeypatch):
    """catalogue worded its 'not found' error from every entry point, importing all of them:
    one broken plugin turned each typo into that plugin's ModuleNotFoundError."""
    import sys

    import numpy as np

    _install(
        monkeypatch,
        _plugin("broken.v1", "no_such_module:load", "dxp_plugins_embeddings"),
        _plugin("broken", "no_such_module:M", "dxp_plugins_mechanisms"),
        _plugin(
            "tiny-plane.v1", "tests.third_party_plugin:load_tiny_plane", "dxp_plugins_embeddings"
        ),
    )
    monkeypatch.delitem(sys.modules, "tests.third_party_plugin", raising=False)
    with pytest.raises(ValueError, match=r"unknown embedding 'glove-6b-5Od'; available: .*broken"):
        dxp.load_embeddings("glove-6b-5Od")
    assert "tests.third_party_plugin" not in sys.modules  # no plugin imported for a typo
    table = dxp.EmbeddingTable(["a", "b"], np.eye(2))
    with pytest.raises(ValueError, match="unknown mechanism 'madlb'"):
        dxp.make_mechanism("madlb", table, epsilon=1.0)
    with pytest.raises(ValueError, match=r"embedding 'broken.v1' failed to load: .*no_such_module"):
        dxp.load_embeddings("broken.v1")
    assert registry.resolve(registry.mechanisms, "madlib") is dxp.Madlib  # others unaffected


def test_a_plugin_cannot_shadow_a_builtin_name(monkeypatch):
    """An entry point that came first on sys.path replaced the built-in GloVe loader (and
    Madlib) silently; the built-in wins now, with one warning naming the duplicate."""
    from dxp_plugins.embeddings.loaders import load_glove_6b_50d

    _install(
        monkeypatch,
        _plugin(
            "glove-6b-50d",
            "tests.third_party_plugin:load_tiny_plane",
            "dxp_plugins_embeddings",
            "evil-vectors",
        ),
        _plugin("madlib", "tests.third_party_plugin:load_tiny_plane", "dxp_plugins_mechanisms"),
        first=True,
    )
    with pytest.warns(RuntimeWarning, match=r"'glove-6b-50d' .*evil-vectors \(tests.third_party"):
        assert registry.resolve(registry.embeddings, "glove-6b-50d") is load_glove_6b_50d
    with pytest.warns(RuntimeWarning, match="mechanism name 'madlib'"):
        assert registry.resolve(registry.mechanisms, "madlib") is dxp.Madlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per process, not at every use
        assert registry.resolve(registry.embeddings, "glove-6b-50d") is load_glove_6b_50d


def test_a_local_registration_cannot_shadow_a_builtin_name(own_registrations, monkeypatch):
    monkeypatch.setattr(registry, "_WARNED", set(), raising=False)
    registry.mechanisms.register("madlib", func=lambda *args, **kwargs: None)
    with pytest.warns(RuntimeWarning, match="local registration"):
        assert registry.resolve(registry.mechanisms, "madlib") is dxp.Madlib
    # Only this name: another plugin installed beside (a contributor's) may add its own.
    assert registry.duplicates(registry.mechanisms)["madlib"] == [
        "dxp-plugins (dxp_plugins.mechanisms.madlib:Madlib)",
        "local registration",
    ]


def test_a_name_two_plugins_declare_is_refused(monkeypatch, capsys):
    _install(
        monkeypatch,
        _plugin(
            "tiny-plane.v1",
            "tests.third_party_plugin:load_tiny_plane",
            "dxp_plugins_embeddings",
            "plane-a",
        ),
        _plugin(
            "tiny-plane.v1",
            "tests.third_party_plugin:load_broken",
            "dxp_plugins_embeddings",
            "plane-b",
        ),
        _plugin(
            "same.v1", "tests.third_party_plugin:load_tiny_plane", "dxp_plugins_embeddings", "one"
        ),
        _plugin(
            "same.v1", "tests.third_party_plugin:load_tiny_plane", "dxp_plugins_embeddings", "one"
        ),
    )
    with pytest.raises(
        ValueError, match=r"'tiny-plane.v1' is declared by 2 sources: plane-a .*plane-b"
    ):
        dxp.load_embeddings("tiny-plane.v1")
    assert "tiny-plane.v1" in registry.names(registry.embeddings)
    assert list(registry.duplicates(registry.embeddings)) == ["tiny-plane.v1"]
    assert len(dxp.load_embeddings("same.v1")) == 4  # one distribution listed twice: one entry
    listed = registry.describe(registry.embeddings)
    assert listed["tiny-plane.v1"].startswith("[refused: declared by plane-a")
    assert main(["embeddings", "list"]) == 0
    assert "[refused: declared by plane-a" in capsys.readouterr().out


def test_one_distribution_declaring_a_name_twice_with_two_targets_is_refused(monkeypatch):
    """One distribution found twice on sys.path is one entry; but one distribution whose
    two entry points give one name different targets is two entries, and which of them wins
    would depend on sys.path order: refused like two distributions."""
    group = "dxp_plugins_embeddings"
    _install(
        monkeypatch,
        _plugin("twin.v1", "tests.third_party_plugin:load_tiny_plane", group, "twins"),
        _plugin("twin.v1", "tests.third_party_plugin:load_broken", group, "twins"),
    )
    with pytest.raises(ValueError, match=r"'twin.v1' is declared by 2 sources: twins \(tests"):
        dxp.load_embeddings("twin.v1")
    assert registry.duplicates(registry.embeddings) == {
        "twin.v1": [
            "twins (tests.third_party_plugin:load_tiny_plane)",
            "twins (tests.third_party_plugin:load_broken)",
        ]
    }


def test_listing_shows_a_shadowed_builtin(monkeypatch, capsys):
    _install(
        monkeypatch,
        _plugin(
            "glove-6b-50d",
            "tests.third_party_plugin:load_tiny_plane",
            "dxp_plugins_embeddings",
            "evil-vectors",
        ),
        first=True,
    )
    listed = registry.describe(registry.embeddings)
    assert listed["glove-6b-50d"].endswith(
        "[duplicate name: also declared by evil-vectors (tests.third_party_plugin:load_tiny_plane);"
        " the built-in is used]"
    )
    assert "Four words" not in listed["glove-6b-50d"]
    assert main(["embeddings", "list"]) == 0
    assert "duplicate name: also declared by evil-vectors" in capsys.readouterr().out


def test_a_non_callable_entry_point_is_listed_as_failed_and_not_used(monkeypatch):
    """``sys:maxsize`` was listed with int's docstring ('int([x]) -> integer')."""
    _install(monkeypatch, _plugin("weird.v1", "sys:maxsize", "dxp_plugins_embeddings"))
    with pytest.warns(RuntimeWarning, match="'weird.v1' failed to load: .*not callable"):
        listed = registry.describe(registry.embeddings)
    assert listed["weird.v1"] == "[failed to load: TypeError]"
    with pytest.raises(ValueError, match=r"embedding 'weird.v1' failed to load"):
        dxp.load_embeddings("weird.v1")


# -- review 12: what resolution and listing rest on ---------------------------------------------
def test_the_builtin_distribution_is_recognised_however_its_name_is_spelled(
    own_registrations, monkeypatch
):
    """Installers spell a distribution's name variously (PEP 503: ``DXP_Plugins`` is
    ``dxp-plugins``); a built-in entry then still wins over a local registration, and its
    import failure is this library's bug, raised as is (not a plugin's PluginLoadError)."""
    group = "dxp_plugins_embeddings"
    _install(
        monkeypatch,
        _plugin("spelled.v1", "tests.third_party_plugin:load_tiny_plane", group, "DXP_Plugins"),
        _plugin("failing.v1", "no_such_module:load", group, "dxp.plugins"),
    )
    registry.embeddings.register("spelled.v1", func=lambda: None)
    assert [d.builtin for d in registry.declarations(registry.embeddings)["spelled.v1"]] == [
        True,
        False,
    ]
    with pytest.warns(RuntimeWarning, match="local registration"):
        assert len(dxp.load_embeddings("spelled.v1")) == 4
    with pytest.raises(ModuleNotFoundError) as error:
        registry.resolve(registry.embeddings, "failing.v1")
    assert not isinstance(error.value, registry.PluginLoadError)


def test_resolve_refuses_a_name_that_is_not_a_string():
    with pytest.raises(TypeError, match="registry name must be str, got int"):
        registry.resolve(registry.embeddings, 5)


def test_a_plugin_failing_with_any_exception_is_a_plugin_load_error(monkeypatch, tmp_path):
    """Not only ImportError: whatever a plugin's import raises names that plugin; listing
    warns with the plugin's own exception, not the wrapper."""
    (tmp_path / "raising_plugin_review12.py").write_text("raise RuntimeError('no GPU found')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    group = "dxp_plugins_embeddings"
    _install(monkeypatch, _plugin("raising.v1", "raising_plugin_review12:load", group, "gpu"))
    with pytest.raises(registry.PluginLoadError, match=r"'raising.v1' failed to load: gpu"):
        dxp.load_embeddings("raising.v1")
    with pytest.warns(RuntimeWarning, match="'raising.v1' failed to load: RuntimeError: no GPU"):
        registry.describe(registry.embeddings)


def test_another_plugin_shadowing_a_builtin_warns_again(monkeypatch):
    """The warning is once per set of duplicates, not once per name: a second, different
    plugin reusing the built-in name is news."""
    group = "dxp_plugins_mechanisms"
    _install(
        monkeypatch,
        _plugin("madlib", "tests.third_party_plugin:load_tiny_plane", group, "plugin-a"),
    )
    with pytest.warns(RuntimeWarning, match="plugin-a"):
        registry.resolve(registry.mechanisms, "madlib")
    installed = catalogue.AVAILABLE_ENTRY_POINTS
    other = _plugin("madlib", "tests.third_party_plugin:load_broken", group, "plugin-b")
    entries = [entry for g in installed.groups for entry in installed.select(group=g)]
    monkeypatch.setattr(  # keeps the warnings already given
        catalogue, "AVAILABLE_ENTRY_POINTS", importlib.metadata.EntryPoints([*entries, other])
    )
    with pytest.warns(RuntimeWarning, match="plugin-b"):
        assert registry.resolve(registry.mechanisms, "madlib") is dxp.Madlib


def test_listing_shows_the_first_line_of_a_docstring(own_registrations, monkeypatch):

    def load_documented():
        """Loads documented vectors.

        Details that do not fit in a listing.
        """

    registry.embeddings.register("documented.v1", func=load_documented)
    assert registry.describe(registry.embeddings)["documented.v1"] == "Loads documented vectors."


def test_lookups_read_each_distribution_metadata_once(monkeypatch):
    """Each look-up parsed the METADATA file of every distribution declaring an entry
    point (``dist.name``): 9 parses and ~3 ms per ``TextPrivatizer.transform``, which
    re-checks its settings (service review, seventeenth session)."""
    import importlib.metadata

    from dxp_plugins import registry

    registry.names(registry.mechanisms)  # the first look-up may read them
    reads = []
    original = importlib.metadata.PathDistribution.read_text

    def counting(self, filename):
        reads.append(filename)
        return original(self, filename)

    monkeypatch.setattr(importlib.metadata.PathDistribution, "read_text", counting)
    for _ in range(3):
        assert "madlib" in registry.names(registry.mechanisms)
        registry.resolve(registry.embeddings, "glove-6b-50d")
    assert reads == []


def test_a_malformed_entry_points_file_is_named_as_the_environment(tmp_path):
    """Open work 18 (F12): an installed distribution's entry_points.txt without '=' broke
    `import catalogue`, and the CLI blamed the input ('details withheld: they may quote
    the input')."""
    import os
    import subprocess
    import sys

    info = tmp_path / "bad_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bad-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[console_scripts]\nnoequals\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "dxp_plugins", "embeddings", "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("dxp: error: unexpected TypeError while reading the installed")
    assert "quote the input" not in done.stderr


def test_a_dependency_failing_to_import_is_not_blamed_on_the_input(tmp_path):
    """Pre-release review F4: spaCy 4.0.dev beside numpy 2 raised ValueError when imported,
    and the CLI said 'sample.txt, lines 1-3: unexpected ValueError (details withheld: they
    may quote the input)'."""
    import os
    import subprocess
    import sys

    (tmp_path / "spacy").mkdir()
    (tmp_path / "spacy" / "__init__.py").write_text("raise ValueError('dtype size changed')\n")
    (tmp_path / "in.txt").write_text("the hockey team\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dxp_plugins",
            "privatize",
            "in.txt",
            "-e",
            "5",
            "--vocab-size",
            "3000",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(
        "dxp: error: unexpected ValueError while importing a dependency"
    ), done.stderr
    assert "in.txt" not in done.stderr and "dtype" not in done.stderr


def test_an_error_in_an_entry_points_module_is_not_blamed_on_the_metadata(tmp_path, monkeypatch):
    """Portability review F2: a module that failed while an entry point imported it (on
    Windows, neighbors.py's register_at_fork) was reported as a malformed installation, with
    advice to reinstall packages; only errors raised while the metadata is read are."""
    import sys

    from dxp_plugins.cli.process import _in_package_metadata

    (tmp_path / "dxp_test_broken_plugin.py").write_text("raise AttributeError('no fork')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = importlib.metadata.EntryPoint(
        name="broken", value="dxp_test_broken_plugin:load", group="dxp_plugins_embeddings"
    )
    with pytest.raises(AttributeError) as raised:
        entry.load()
    assert not _in_package_metadata(raised.value)
    monkeypatch.delitem(sys.modules, "dxp_test_broken_plugin", raising=False)


@pytest.mark.parametrize(
    ("package", "names"),
    [
        ("mechanisms", ["Madlib", "TEM", "BRR", "Mechanism", "make_mechanism"]),
        ("estimators", ["TextPrivatizer", "LPLPTransformer"]),
        ("pipeline", ["Privatizer"]),
    ],
)
def test_subpackages_re_export_their_classes(package, names):
    """API review (twenty-second session): ``from dxp_plugins.mechanisms import Madlib``
    failed while every other subpackage re-exported its classes."""
    import importlib

    module = importlib.import_module(f"dxp_plugins.{package}")
    assert set(names) <= set(module.__all__)
    for name in names:
        value = getattr(module, name)
        assert value is getattr(dxp, name, value)  # the top level's object, when it has one
        assert name in dir(module)
