"""The zoo's size table agrees with the models themselves."""

from __future__ import annotations

import warnings

import pytest

from dlbench.backends.pytorch import model_summary
from dlbench.config.catalog import MODELS
from dlbench.config.model_sizes import MODEL_SIZES


def test_every_entry_is_a_model() -> None:
    assert set(MODEL_SIZES) <= set(MODELS), "entries of models that are gone"
    assert "resnet50" in MODEL_SIZES


#: Models whose count takes long on a CPU (toy_lstm: about a minute on two cores).
_SLOW_TO_COUNT = frozenset({"toy_lstm"})


@pytest.mark.parametrize("model_id", [
    pytest.param(model_id, marks=pytest.mark.slow) if model_id in _SLOW_TO_COUNT else model_id
    for model_id in sorted(MODELS)])
def test_sizes_are_recounted(model_id: str) -> None:
    counted = model_summary(model_id)
    line = f"update src/dlbench/config/model_sizes.py: {model_id!r}: {counted}"
    reference = MODELS[model_id].reference_params
    if reference is not None:
        assert counted[0] == reference
    if model_id not in MODEL_SIZES:
        # a cache, not a registration: `dlbench help --models` shows "-" until it is added
        warnings.warn(line, stacklevel=1)
        return
    expected = MODEL_SIZES[model_id]
    assert counted == (expected[0], None if expected[1] is None else float(expected[1])), line


def test_a_model_without_an_entry_is_counted_and_warned_about(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(MODEL_SIZES, "toy")
    with pytest.warns(UserWarning, match=r"model_sizes\.py: 'toy': \(9610, 18944\.0\)"):
        test_sizes_are_recounted("toy")
