"""The command line's grammar: commands, their options, and the handler each runs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NoReturn

from .._optional import tagger_hint
from .._revision import library_version
from .calibrate import DEFAULT_WORDS, _calibrate
from .privatize import _privatize
from .process import PROG
from .records import DEFAULT_FIELD
from .settings import _labels


class _Parser(argparse.ArgumentParser):
    """argparse, with errors that point to --help and no abbreviated options: ``--eps``
    for ``--epsilon`` would change meaning the day an option ``--eps...`` is added, and
    silently break the scripts that used it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._arguments: list[str] = []

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._arguments = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        given = self._arguments
        options = given[: given.index("--")] if "--" in given else given  # then FILES only
        unknown = [
            argument.split("=", 1)[0]
            for argument in options
            if argument.startswith("--")
            and argument.split("=", 1)[0] not in self._option_string_actions
        ]
        # argparse names a missing required option before an unknown one
        if unknown and message.startswith("the following arguments are required"):
            message = f"unrecognized option(s) {', '.join(unknown)} (options are never abbreviated)"
        # one prefix for every error, usage or runtime; the hint names the command's own help
        self.exit(2, f"{PROG}: error: {message} (see {self._command(options).prog} --help)\n")

    def _command(self, arguments: list[str]) -> argparse.ArgumentParser:
        """The (sub)command parser ``arguments`` chose: argparse reports a subcommand's
        unknown options from the top-level parser."""
        parser: argparse.ArgumentParser = self
        for argument in arguments:
            commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            if commands and argument in commands[0].choices:
                parser = commands[0].choices[argument]
        return parser


#: The namespace attribute where :class:`_Once` notes the options already given.
_GIVEN = "_options_given"


class _Once(argparse.Action):
    """Store an option that takes one value and may be given once.

    argparse lets a repeated option's last value win, silently: ``--field body --field
    subject`` privatized only ``subject`` (and ``--keep-fields '*'`` then copied the body
    raw), and ``--oov unk ... --oov passthrough`` would release unknown words raw. A second
    occurrence (under any of its spellings, even with the same value) is a usage error at
    parse time, before anything is read, loaded or drawn. Options that add up use
    ``append``; on/off switches (``--progress``) keep argparse's last-wins.
    """

    def __init__(self, *args: Any, hint: str = "give it once", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hint = hint

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given: set[str] = namespace.__dict__.setdefault(_GIVEN, set())
        if self.dest in given:
            raise argparse.ArgumentError(
                self, f"given twice: it takes one value, not the last of several; {self.hint}"
            )
        given.add(self.dest)
        setattr(namespace, self.dest, values)


class _EachOnce(argparse.Action):
    """Collect the values of a repeatable option, refusing any key given twice: a repeated
    key would otherwise win silently (last value) or be listed twice. Subclasses say what
    the keys of one value are (:meth:`_keys`) and how a repeat is refused (:meth:`_repeat`)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = list(getattr(namespace, self.dest, None) or [])
        keys = [key for value in given for key in self._keys(value)]
        for key in self._keys(values):
            if key in keys:
                raise argparse.ArgumentError(self, self._repeat(key))
            keys.append(key)
        setattr(namespace, self.dest, [*given, values])

    def _keys(self, value: Any) -> list[Any]:
        raise NotImplementedError

    def _repeat(self, key: Any) -> str:
        raise NotImplementedError


class _EachKeyOnce(_EachOnce):
    """``KEY=VALUE`` pairs (``--param``, ``--embeddings-param``), each key once: the pairs
    become a dict, where a repeated key's last value would win silently, as a repeated
    single-valued option's would under plain argparse."""

    def _keys(self, value: tuple[str, Any]) -> list[str]:
        return [value[0]]

    def _repeat(self, key: str) -> str:
        return f"key {key!r} given twice: each key takes one value, not the last of several"


class _EachNameOnce(_EachOnce):
    """``--keep-fields`` names (comma-separated, the option repeatable), each name once:
    ``--keep-fields id,id`` listed ``id`` twice in the report. A repeat is refused, as a
    repeated ``--param`` key is, rather than dropped: the command line says one thing once.
    ``--field`` (``split=False``: one name per occurrence, a JSON key may hold a comma)
    likewise: each ``--field`` is privatized, and a record's spend is their sum."""

    def __init__(self, *args: Any, split: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.split = split

    def _keys(self, value: str) -> list[str]:
        """The names of one value (``--keep-fields``: split as the run splits them)."""
        return (_labels([value]) or []) if self.split else [value]

    def _repeat(self, key: str) -> str:
        return f"field {key!r} given twice: name it once"


def _key_value(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.replace("-", "_"), value


#: Shown under ``dxp calibrate --help``.
CALIBRATE_EXAMPLES = """examples:
  dxp calibrate --epsilons 5,10,20,40 --words 100 --vocab-size 100000 --out calib/
  dxp calibrate --epsilons 2,3,5,8 --max-n-w 0.5 --min-s-w 50 --refine 3 --out calib/
  dxp calibrate --mechanism tem --epsilons 1,2,3,5 --vocab-size 20000 --out calib-tem/
  dxp calibrate --words-file my_texts.txt --epsilons 3,5,10 --out calib-mine/  # private"""

#: Shown under ``dxp --help`` and ``dxp privatize --help`` (the README's commands).
EXAMPLES = """examples:
  dxp privatize notes.txt --epsilon 3 --report guarantee.json    # a document per line
  dxp privatize data.jsonl --field text --epsilon 3 -o private.jsonl
  dxp privatize tickets.jsonl --field body --epsilon 3 --mask identifiers -o private.jsonl
  dxp privatize notes.txt --mechanism tem --epsilon 2 --beta 0.001
  dxp calibrate --mechanism madlib --epsilons 5,10,20,40 --words 100 --out calib/
  dxp embeddings list

Epsilon is per unit of the mechanism's distance: a larger epsilon keeps more words
(Madlib at 10 on GloVe 50d keeps rare words and many names unchanged; about 3 meets
the example target of docs/choosing-epsilon.md there). Choose it with `dxp calibrate`."""


#: Shown under ``dxp --help``, ``dxp privatize --help`` and ``dxp calibrate --help``.
#: docs/front-doors.md lists them too.
EXIT_STATUS = """exit status:
  0    success
  1    an error: a bad value (a negative epsilon), bad input data, a failed read or write
  2    a usage error (an unknown, missing or repeated option), or no command given
  129  stopped by SIGHUP (the terminal closed; ignored under nohup)
  130  interrupted by SIGINT (Ctrl-C): says so, then ends killed by SIGINT, which a
       shell reports as 130 and which stops a shell script running dxp in a loop
  141  the reader of stdout left early (| head), as a shell reports SIGPIPE
  143  stopped by SIGTERM (kill)"""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Word-level metric differential privacy for text.",
        epilog=f"{EXAMPLES}\n\n{EXIT_STATUS}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"dxp_plugins {library_version()}")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    parser.set_defaults(handler=_help(parser))

    priv = commands.add_parser(
        "privatize",
        help="privatize plain-text or JSONL files (or stdin)",
        description=(
            "Replace every word of each document by a private word (punctuation and\n"
            "whitespace pass through). Writes private text to stdout or --output."
        ),
        epilog=f"{EXAMPLES}\n\n{EXIT_STATUS}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    priv.add_argument(
        "files",
        nargs="*",
        default=["-"],
        metavar="FILE",
        help="input files; '-' or nothing reads stdin",
    )
    priv.add_argument(
        "-o",
        "--output",
        action=_Once,
        default="-",
        help=(
            "output file (default: stdout), replaced only when the run succeeds; /dev/stdout, "
            "/dev/fd/N, FIFOs and devices are written through (appended to, never replaced)"
        ),
    )
    priv.add_argument(
        "-m", "--mechanism", action=_Once, default="madlib", help="registry name (default: madlib)"
    )
    priv.add_argument(
        "-e",
        "--epsilon",
        action=_Once,
        type=float,
        required=True,
        help="required: privacy parameter per unit of the mechanism's metric, per token "
        "(Madlib, TEM: per unit of embedding distance; BRR: per bit in which two words' codes "
        "differ); no default, calibrate it (dxp calibrate)",
    )
    _add_mechanism_options(priv)
    priv.add_argument(
        "--oov",
        action=_Once,
        default="unk",
        choices=["unk", "raise", "passthrough"],
        help=(
            "out-of-vocabulary words: unk (default) privatizes them from a fixed public point, "
            "so they never appear in the output; raise refuses the run before any noise; "
            "passthrough releases them raw (unprotected, warned, counted)"
        ),
    )
    priv.add_argument(
        "--seed",
        action=_Once,
        type=int,
        help="reproducible seeded noise (NOT for private releases; default: secure)",
    )
    priv.add_argument(
        "--mask",
        action=_Once,
        metavar="NAME",
        help=(
            "replace what a registered mask finds by [...] before privatizing, whole tokens "
            "at a time; what it hides is never released: identifiers (e-mail addresses, "
            "URLs starting http(s):// or www., @handles, numbers written in digits, words "
            "holding digits; NOT bare domains such as yahoo.com, month names, Roman "
            "numerals, number words or names), emails, urls, handles, numbers, or a plugin's "
            "(dxp_plugins_masks; default: none)"
        ),
    )
    selection = priv.add_argument_group(
        "selection (default: every word; as the spaCy component's pos/entities/token_filter)"
    )
    selection.add_argument(
        "--spacy-model",
        action=_Once,
        metavar="NAME",
        help="installed spaCy pipeline that tags the texts (needed by --pos/--entities), "
        f"e.g. {tagger_hint()}",
    )
    selection.add_argument(
        "--pos",
        action="append",
        metavar="TAGS",
        help="privatize only these Universal POS tags, e.g. NOUN,PROPN (repeatable)",
    )
    selection.add_argument(
        "--entities",
        action="append",
        metavar="LABELS",
        help="privatize only tokens in these entity types ('*' for any), e.g. PERSON,ORG",
    )
    selection.add_argument(
        "--token-filter",
        action=_Once,
        metavar="NAME",
        help="registered token filter (dxp_plugins_token_filters)",
    )
    priv.add_argument(
        "--format",
        action=_Once,
        choices=["auto", "text", "jsonl"],
        default="auto",
        help=(
            "input format (auto: .jsonl/.ndjson files are JSONL, and stdin when --field, "
            "--null or --keep-fields is given; text that starts as JSON records is refused)"
        ),
    )
    priv.add_argument(
        "--field",
        action=_EachNameOnce,
        split=False,
        help=(
            f"JSONL field to privatize (default: {DEFAULT_FIELD}), a top-level key; the output "
            "holds only the --fields (and --keep-fields). Repeatable: each field is "
            "privatized, and a record's spend is the sum of its fields' (one document); "
            "each name once"
        ),
    )
    priv.add_argument(
        "--null",
        action=_Once,
        choices=["error", "keep"],
        help=(
            "JSONL: a record whose --field is null (an export's empty value): error (default) "
            "or keep: written with the field null, nothing privatized or spent, counted in "
            "--report as records_with_null_field (records with any null --field). An input "
            "in which no record holds a word in a --field (a wrong --field?) is then "
            "refused, as it is with --keep-fields"
        ),
    )
    priv.add_argument(
        "--keep-fields",
        action=_EachNameOnce,
        metavar="NAMES",
        help=(
            "JSONL: also write these fields of each record ('*' = all) UNCHANGED: not "
            "privatized, not counted; warns and is listed in --report. Copied value for "
            "value (numbers as Python ints and floats, escapes as UTF-8); each name once"
        ),
    )
    priv.add_argument(
        "--unit",
        action=_Once,
        choices=["line", "file"],
        default="line",
        help="plain text: one document per line (default) or per file (not for JSONL)",
    )
    priv.add_argument(
        "--batch-size",
        action=_Once,
        type=int,
        help="documents per mechanism call (default 1000, as spaCy's nlp.pipe; a batch also "
        "closes at 4 Mi characters). Seeded draws "
        "of every mechanism depend on it and on how the input is split into files (each file "
        "is batched separately)",
    )
    priv.add_argument(
        "--report",
        action=_Once,
        metavar="FILE",
        help=(
            "write the guarantee as JSON ('-' for stderr, after the text and any warnings: "
            "for JSON alone give a file, or /dev/fd/3 with 3>report.json), with the largest "
            "document's tokens "
            "and spend; never where the private text goes "
            "(refused). A run that fails after writing documents to stdout (or an -o written "
            'through) still reports them, marked "complete": false, as does one whose reader '
            "left early (| head: exit 141)"
        ),
    )
    priv.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=(
            "progress bar on stderr (default: when stderr is a terminal and the private text "
            "is not written to it; TQDM_DISABLE=1 hides it too)"
        ),
    )
    priv.set_defaults(handler=_privatize)

    _add_calibrate(commands)

    for kind, what in (
        ("embeddings", "embedding loaders"),
        ("mechanisms", "mechanisms"),
        ("masks", "masks (--mask)"),
    ):
        command = commands.add_parser(kind, help=f"{kind[:-1]} registry")
        command.set_defaults(handler=_help(command))
        actions = command.add_subparsers(dest="action", parser_class=_Parser)
        listing = actions.add_parser("list", help=f"list installed {what}")
        listing.add_argument(
            "--code", action=_Once, metavar="FILE.py", help="import FILE.py first (see privatize)"
        )
        listing.add_argument(
            "--json", action="store_true", help="one JSON object of name: summary, for scripts"
        )
        listing.set_defaults(handler=lambda args, kind=kind: _list(kind, as_json=args.json))
    return parser


def _help(parser: argparse.ArgumentParser) -> Any:
    """The handler of a command given without its subcommand: usage and subcommands."""

    def show(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    return show


def _add_mechanism_options(parser: argparse.ArgumentParser) -> None:
    """Embeddings, search and mechanism options shared by ``privatize`` and ``calibrate``
    (and ``--code``, which can register any of them)."""
    parser.add_argument(
        "--code",
        action=_Once,
        metavar="FILE.py",
        help="a Python file imported first, to register your own mask, token filter, "
        "embeddings loader or mechanism by name (dxp.registry.<group>.register); it runs "
        "as your code",
    )
    parser.add_argument(
        "--embeddings",
        action=_Once,
        default="glove-6b-50d",
        help="registry name (default: glove-6b-50d)",
    )
    parser.add_argument(
        "--embeddings-param",
        action=_EachKeyOnce,
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="extra loader argument, e.g. path=vectors.txt (a value that parses as JSON is "
        "decoded: 2024 is an int; '\"2024\"' keeps a str)",
    )
    parser.add_argument(
        "--vocab-size",
        action=_Once,
        type=int,
        metavar="N",
        help="keep the N most frequent words (default: the whole table, 400k for GloVe; "
        "100000 is 2.7x faster)",
    )
    parser.add_argument(
        "--index",
        action=_Once,
        choices=["exact", "hnsw"],
        help="MADLIB: nearest-neighbour search (default: exact)",
    )
    _add_tem_brr_options(parser)
    parser.add_argument(
        "--param",
        action=_EachKeyOnce,
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="extra mechanism parameter (JSON value), e.g. beta=0.001",
    )


def _add_tem_brr_options(parser: argparse.ArgumentParser) -> None:
    tem_brr = parser.add_argument_group("TEM and BRR (same as --param KEY=VALUE)")
    tem_brr.add_argument(
        "--metric", action=_Once, help="TEM: euclidean (default), manhattan, chebyshev or angular"
    )
    tem_brr.add_argument(
        "--beta", action=_Once, type=float, help="TEM: Theorem 4.2's beta (default 0.001)"
    )
    tem_brr.add_argument(
        "--gamma", action=_Once, type=float, help="TEM: explicit truncation radius"
    )
    tem_brr.add_argument("--n-bits", action=_Once, type=int, help="BRR: code length (default 256)")


def _list(kind: str, *, as_json: bool = False) -> int:
    """The registered names and their summaries: a column of names two spaces clear of the
    longest (a plugin's long name ran into its summary at a fixed 24), or JSON."""
    from .. import registry

    listed = {
        name: summary.replace("``", "")  # docstring markup, not for a terminal
        for name, summary in registry.describe(getattr(registry, kind)).items()
    }
    if as_json:
        print(json.dumps(listed, indent=2, ensure_ascii=False))
        return 0
    width = max([25, *(len(name) + 2 for name in listed)])
    for name, summary in listed.items():
        print(f"{name:{width}s}{summary}")
    return 0


def _epsilon_list(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}"
        ) from None
    if not values:
        raise argparse.ArgumentTypeError("give at least one epsilon")
    return values


def _add_calibrate(commands: Any) -> None:
    cal = commands.add_parser(
        "calibrate",
        help="plausible-deniability statistics (N_w, S_w) to choose epsilon",
        description=(
            "For each word and each epsilon, estimate N_w = Pr[M(w) = w] and S_w (the\n"
            "smallest output set holding 1 - eta of the mass), exactly where the mechanism\n"
            "has a closed form and by Monte Carlo otherwise. Writes calibration.csv (per\n"
            "word), summary.csv, summary.json and figures to --out. With --max-n-w /\n"
            "--min-s-w it also reports the largest epsilon meeting that target (Feyisetan\n"
            "et al. 2020, Section 4.1). The words are a sample of the public vocabulary\n"
            "(--words, --word-pool, --word-seed), or the words your texts use (--words-file)."
        ),
        epilog=f"{CALIBRATE_EXAMPLES}\n\n{EXIT_STATUS}",  # raw: the table keeps its columns
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cal.add_argument(
        "-m", "--mechanism", action=_Once, default="madlib", help="registry name (default: madlib)"
    )
    cal.add_argument(
        "--epsilons",
        action=_Once,
        hint="give every value in one comma-separated list, e.g. --epsilons 5,10,20",
        type=_epsilon_list,
        required=True,
        metavar="E1,E2,...",
        help="epsilon values to evaluate, e.g. 5,10,20,40",
    )
    cal.add_argument(
        "-o",
        "--out",
        action=_Once,
        required=True,
        metavar="DIR",
        help="output folder (created)",
    )
    cal.add_argument(
        "--words",
        action=_Once,
        type=int,
        help=f"words sampled (default: {DEFAULT_WORDS})",
    )
    cal.add_argument(
        "--word-pool",
        action=_Once,
        type=int,
        help="sample among the N most frequent words (default: all)",
    )
    cal.add_argument(
        "--word-seed",
        action=_Once,
        type=int,
        help="seed of the public word sample (default 0)",
    )
    cal.add_argument(
        "--words-file",
        action=_Once,
        metavar="FILE",
        help=(
            "calibrate on the words of FILE ('-': stdin) instead of a vocabulary sample: a "
            "list (whitespace-separated, one per line or more) or your texts themselves, "
            "split into tokens and looked up as dxp privatize does (NFKC, lower case; "
            "allow-listed punctuation is no word); words out of the vocabulary are skipped "
            "and counted in a warning. Not with --words, --word-pool or --word-seed. "
            "calibration.csv, summary.csv and summary.json name the words calibrated on: "
            "when they come from private texts, keep --out as private as those texts"
        ),
    )
    cal.add_argument(
        "--samples",
        action=_Once,
        type=int,
        default=1000,
        help="Monte Carlo draws per word (default: 1000)",
    )
    cal.add_argument(
        "--eta",
        action=_Once,
        type=float,
        default=0.05,
        help="S_w holds 1 - eta of the mass (default: 0.05)",
    )
    cal.add_argument(
        "--method",
        action=_Once,
        choices=["auto", "exact", "monte_carlo"],
        default="auto",
        help="exact output law where available (auto, default) or Monte Carlo",
    )
    cal.add_argument(
        "--confidence",
        action=_Once,
        type=float,
        default=0.95,
        help="Monte Carlo: two-sided level of each word's N_w and S_w bounds (default: 0.95)",
    )
    cal.add_argument(
        "--max-n-w", action=_Once, type=float, help="target: worst-case N_w at most this"
    )
    cal.add_argument(
        "--min-s-w", action=_Once, type=float, help="target: worst-case S_w at least this"
    )
    cal.add_argument(
        "--refine",
        action=_Once,
        type=int,
        default=0,
        help="bisection steps above the best epsilon listed (default: 0)",
    )
    _add_mechanism_options(cal)
    cal.add_argument(
        "--seed", action=_Once, type=int, help="seeded mechanism noise (reproducible runs)"
    )
    cal.add_argument(
        "--figures",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write PNG figures (needs matplotlib; default: on)",
    )
    cal.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=(
            "progress bar on stderr (default: a bar when stderr is a terminal, otherwise "
            "one line per epsilon)"
        ),
    )
    cal.set_defaults(handler=_calibrate, oov="unk", epsilon=None)
