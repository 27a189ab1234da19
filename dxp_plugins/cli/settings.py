"""The shared front-door settings (dxp_plugins.doors) and the mechanism, from the options
``privatize`` and ``calibrate`` share."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..errors import DxpError
from .process import CLIError, _raised_by_this_library

#: Options of one mechanism (dest -> its registry name), passed on as its parameters.
MECHANISM_OPTIONS = {
    "index": "madlib",
    "metric": "tem",
    "beta": "tem",
    "gamma": "tem",
    "n_bits": "brr",
}


#: How the command spells each shared setting in its error messages (doors.DoorSettings).
SETTING_FLAGS: dict[str, str | None] = {
    "epsilon": "--epsilon",
    "mechanism": "--mechanism",
    "mechanism_params": "--param",
    "embeddings": "--embeddings",
    "embeddings_params": "--embeddings-param",
    "vocab_size": "--vocab-size",
    "oov": "--oov",
    "pos": "--pos",
    "entities": "--entities",
    "token_filter": "--token-filter",
    "seed": "--seed",
    "mask": "--mask",
    "accountant": None,  # the command keeps its own ledger
}


def _labels(values: Sequence[str] | None) -> list[str] | None:
    """``--pos NOUN --pos PROPN`` or ``--pos NOUN,PROPN``."""
    if not values:
        return None
    return [label.strip() for value in values for label in value.split(",") if label.strip()]


def _settings(args: argparse.Namespace) -> Any:
    """The settings every front door shares (dxp_plugins.doors), from the options."""
    from ..doors import DoorSettings

    mechanism_params = dict(args.param)
    for option, owner in MECHANISM_OPTIONS.items():
        value = getattr(args, option)
        if value is None:
            continue
        flag = "--" + option.replace("_", "-")
        if args.mechanism != owner:  # other mechanisms: --param KEY=VALUE
            raise CLIError(f"{flag} is a {owner.upper()} option (use --mechanism {owner})")
        if option in mechanism_params and mechanism_params[option] != value:
            raise CLIError(f"{flag} and --param {option}=... disagree: give one")
        mechanism_params[option] = value
    return DoorSettings.create(
        epsilon=args.epsilon,
        mechanism=args.mechanism,
        mechanism_params=mechanism_params,
        embeddings=args.embeddings,
        embeddings_params=dict(args.embeddings_param),
        vocab_size=args.vocab_size,
        oov=args.oov,
        pos=_labels(getattr(args, "pos", None)),
        entities=_labels(getattr(args, "entities", None)),
        token_filter=getattr(args, "token_filter", None),
        seed=args.seed,
        mask=getattr(args, "mask", None),
        names={**SETTING_FLAGS, "epsilon": "--epsilons"}
        if args.command == "calibrate"
        else SETTING_FLAGS,
    )


def _build_mechanism(args: argparse.Namespace, settings: Any = None) -> Any:
    """The mechanism built from the shared settings (and its secure or seeded randomness)."""
    from .._random import RandomSource

    settings = _settings(args) if settings is None else settings
    _load_embeddings(settings)
    try:
        return settings.build_mechanism(RandomSource(settings.seed))
    except TypeError as error:
        raise CLIError(f"{args.mechanism} / {args.embeddings}: {error}") from None


def _load_embeddings(settings: Any) -> None:
    """Load the table (shared with the mechanism built next), so that a plugin loader's own
    failure names the loader. Its message is withheld like any other code's (it may quote the
    file it read); the library's errors and a missing or unreadable file say what they are."""
    try:
        settings.load_embeddings()
    except (DxpError, OSError):
        raise
    except Exception as error:
        if isinstance(error, ValueError | TypeError) and _raised_by_this_library(error):
            raise
        raise CLIError(
            f"--embeddings {settings.embeddings}: its loader failed with "
            f"{type(error).__name__} (details withheld: they may quote what it read)"
        ) from None
