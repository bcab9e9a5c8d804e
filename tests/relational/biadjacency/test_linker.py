"""The bi-adjacency methods as relviz methods (relviz.relational.biadjacency.linker): hyper-parameters
and what they declare before a run."""

from __future__ import annotations

import pytest

from relviz.errors import ParameterError
from relviz.privacy.sensitivity import multipliers
from relviz.relational import get, get_relation
from tests.conftest import tiny_schema


@pytest.mark.parametrize(("params", "name"), [({"init": "zero"}, "init"), ({"init_share": 1.5}, "init_share"),
                                               ({"count_share": 0.0}, "count_share"),
                                               ({"init_share": 0.6, "count_share": 0.5}, "count_share")])
def test_bad_hyper_parameters_are_named(params: dict, name: str) -> None:
    with pytest.raises(ParameterError) as e:
        get("biadjacency", **params)
    assert e.value.parameter == name and isinstance(e.value, ValueError)
    with pytest.raises(ParameterError) as e:
        get_relation("biadjacency", count_share=2.0)
    assert e.value.parameter == "count_share"


def test_no_noise_scale_before_the_run() -> None:
    s = tiny_schema()
    fk = s.foreign_key("persons.hid->households")
    assert get("biadjacency").noise_scales(s, fk, 0.1, multipliers=multipliers(s)) == {}
