"""Input validation shared by every entry point (PRIVACY.md 23, 25, 26)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dxp_plugins._validation import (
    MAX_EPSILON,
    MIN_EPSILON,
    check_epsilon,
    check_matrix,
    check_text,
)


@pytest.mark.parametrize(
    "value", [1, 0.5, 10.0, np.float32(2.0), np.int64(3), MIN_EPSILON, MAX_EPSILON]
)
def test_epsilon_accepts_finite_positive_reals(value):
    assert check_epsilon(value) == float(value)


@pytest.mark.parametrize("value", [True, False, np.bool_(True), "1.0", None, [1.0], 1 + 0j])
def test_epsilon_rejects_non_reals(value):
    with pytest.raises(TypeError):
        check_epsilon(value)


@pytest.mark.parametrize(
    "value",
    [
        0,
        0.0,
        -1.0,
        math.nan,
        math.inf,
        -math.inf,
        1e-300,
        MAX_EPSILON * 1.01,
        pytest.param(10**400, id="10**400"),
    ],
)
def test_epsilon_rejects_out_of_range(value):
    with pytest.raises(ValueError):
        check_epsilon(value)


def test_epsilon_bounds_keep_derived_quantities_finite():
    assert math.isfinite(math.exp(MAX_EPSILON)) and math.isfinite(2.0 / MIN_EPSILON)


def test_text_decodes_bytes_strictly():
    assert check_text("héllo".encode()) == "héllo"
    with pytest.raises(ValueError) as error:
        check_text(b"secret \xff word")
    assert "secret" not in str(error.value) and "xff" not in str(error.value)
    with pytest.raises(TypeError):
        check_text(42)
    with pytest.raises(ValueError, match="lone surrogate at character 7") as error:
        check_text("secret \ud800 word")  # a JSON escape can produce one; no UTF-8 form
    assert "secret" not in str(error.value) and "ud800" not in str(error.value)


@pytest.mark.parametrize(
    "matrix",
    [
        np.zeros(3),
        np.zeros((0, 2)),
        np.zeros((2, 0)),
        np.array([[0.0, np.nan]]),
        np.array([[np.inf, 0.0]]),
        np.array([[1e39, 0.0]]),  # finite in float64, inf as float32
        np.array([["a", "b"]]),
        [[1.0, 2.0], [3.0]],
    ],
)
def test_matrix_rejects_bad_input(matrix):
    with pytest.raises(ValueError):
        check_matrix(matrix)
