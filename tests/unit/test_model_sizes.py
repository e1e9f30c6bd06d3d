"""The zoo's size table agrees with the models themselves."""

from __future__ import annotations

import pytest

from dlbench.backends.pytorch import model_summary
from dlbench.config.catalog import MODELS
from dlbench.config.model_sizes import MODEL_SIZES


def test_every_model_has_an_entry() -> None:
    assert set(MODEL_SIZES) == set(MODELS)


@pytest.mark.parametrize("model_id", sorted(MODELS))
def test_sizes_are_recounted(model_id: str) -> None:
    counted = model_summary(model_id)
    expected = MODEL_SIZES[model_id]
    assert counted == (expected[0], None if expected[1] is None else float(expected[1])), (
        f"update src/dlbench/config/model_sizes.py: {model_id!r}: {counted}"
    )
    if MODELS[model_id].reference_params is not None:
        assert expected[0] == MODELS[model_id].reference_params
