"""Checks shared by every mechanism, loader and front door (PRIVACY.md 23, 25, 26)."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

#: Smallest and largest accepted epsilon: both keep ``exp(epsilon)`` and ``1/epsilon``
#: finite in float64 with room for the mechanisms' own factors (e.g. TEM's ``2/epsilon``).
MIN_EPSILON = 1e-12
MAX_EPSILON = 700.0
#: Types ``numbers`` counts as real or integral that are not amounts: truth values, and
#: numpy's time deltas (``np.timedelta64`` is a signed integer to numpy: 3 days would be
#: accepted as epsilon = 3).
NOT_NUMBERS = (bool, np.bool_, np.timedelta64, np.datetime64)


def is_real(value: Any) -> bool:
    """A real number (``numbers.Real``), but no bool or time delta."""
    return isinstance(value, numbers.Real) and not isinstance(value, NOT_NUMBERS)


def is_integral(value: Any) -> bool:
    """An integer (``numbers.Integral``), but no bool or time delta."""
    return isinstance(value, numbers.Integral) and not isinstance(value, NOT_NUMBERS)


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """Return ``value`` as a float if it is a finite real in [MIN_EPSILON, MAX_EPSILON].

    bool, str, None, NaN and infinities are rejected with TypeError/ValueError.
    """
    if not is_real(value):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        as_float = float(value)
    except OverflowError:
        as_float = math.inf  # e.g. 10**400
    if not math.isfinite(as_float):
        raise ValueError(f"{name} must be finite, got {as_float}")
    if not MIN_EPSILON <= as_float <= MAX_EPSILON:
        raise ValueError(f"{name} must lie in [{MIN_EPSILON:g}, {MAX_EPSILON:g}], got {as_float:g}")
    return as_float


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int (bool rejected), optionally at least ``minimum``."""
    if not is_integral(value):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    as_int = int(value)
    if minimum is not None and as_int < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {as_int}")
    return as_int


def check_probability(value: Any, name: str, *, open_interval: bool = True) -> float:
    """Return ``value`` as a float in (0, 1) (or [0, 1] when ``open_interval`` is False)."""
    if not is_real(value):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    as_float = float(value)
    low_ok = as_float > 0 if open_interval else as_float >= 0
    high_ok = as_float < 1 if open_interval else as_float <= 1
    if not (math.isfinite(as_float) and low_ok and high_ok):
        interval = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must lie in {interval}, got {as_float:g}")
    return as_float


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_matrix(values: Any, name: str = "vectors") -> np.ndarray:
    """Return a 2-D, non-empty, finite float32 C-contiguous view or copy of ``values``."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a 2-D numeric matrix") from error
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got {array.ndim} dimension(s)")
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{name} must be non-empty, got shape {array.shape}")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"{name} must hold real numbers, got dtype {array.dtype}")
    with np.errstate(over="ignore"):  # values beyond float32 become inf, rejected below
        array = np.ascontiguousarray(array, dtype=np.float32)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (no NaN or inf, also after casting to float32)")
    return array


#: The first bytes of compressed files a user may pass instead of their text.
_COMPRESSED = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"PK\x03\x04": "zip",
}


def _encoding_hint(start: bytes) -> str:
    """What to do about bytes that are not UTF-8, from how they start (never quoting them):
    UTF-16, a compressed file, or another encoding."""
    if start[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return (
            ": it starts with a UTF-16 byte-order mark (convert it to UTF-8, e.g. "
            "iconv -f UTF-16 -t UTF-8)"
        )
    for magic, kind in _COMPRESSED.items():
        if start.startswith(magic):
            return f": it looks {kind}-compressed (decompress it first)"
    return ": in another encoding? convert it to UTF-8 first (e.g. iconv -f WINDOWS-1252 -t UTF-8)"


def check_text(value: Any, name: str = "text") -> str:
    """Return ``value`` as str; bytes are decoded as strict UTF-8 (PRIVACY.md 25). A str
    with a lone surrogate (e.g. from a JSON escape) is refused: it has no UTF-8 form."""
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as error:  # its message would quote the character
                raise ValueError(
                    f"{name} is not valid Unicode (lone surrogate at character {error.start})"
                ) from None
        return str(value)  # a subclass (numpy.str_) is not accepted by spaCy's tokenizer
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as error:
            # The default message quotes the offending byte: report only its position.
            hint = _encoding_hint(bytes(value[:8]))
            raise ValueError(
                f"{name} is not valid UTF-8 (byte offset {error.start}){hint}"
            ) from None
    missing = ""
    nan = isinstance(value, float | np.floating) and math.isnan(value)
    if value is None or nan or _is_pandas_na(value) or _is_nat(value):
        missing = " (a missing value: drop it or fill it, e.g. fillna(''), first)"
    raise TypeError(f"{name} must be str, got {type(value).__name__}{missing}")


def _is_nat(value: Any) -> bool:
    """numpy's not-a-time (``np.datetime64("NaT")``, ``np.timedelta64("NaT")``)."""
    return isinstance(value, np.datetime64 | np.timedelta64) and bool(np.isnat(value))


def _is_pandas_na(value: Any) -> bool:
    """``pandas.NA`` or ``NaT`` (without importing pandas)."""
    return type(value).__name__ in ("NAType", "NaTType") and type(value).__module__.startswith(
        "pandas"
    )


def check_no_fit_params(estimator: object, fit_params: dict[str, Any]) -> None:
    """TypeError for any ``fit_params`` given to ``fit_transform`` of an estimator whose
    ``fit`` takes none, as scikit-learn's own steps refuse them."""
    if fit_params:
        raise TypeError(
            f"{type(estimator).__name__}.fit_transform got unexpected keyword argument(s) "
            f"{', '.join(map(repr, sorted(fit_params)))}"
        )


def is_amount(value: Any) -> bool:
    """A finite real number >= 0 (bools and NaN are not amounts)."""
    if not is_real(value):
        return False
    try:
        return math.isfinite(value) and float(value) >= 0
    except OverflowError:  # an int beyond float: not a finite amount
        return False
