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
                                               ({"init_share": "half"}, "init_share")])
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


def test_auto_degree_start_share_follows_the_start_noise() -> None:
    """``init_share="auto"``: s = (1 + 0.005/r)^−2 with r = the degree CDF's noise scale over the
    number of parents (σ·√16 for 16 exact bins under the entity unit), clipped to [0.7, 0.95].
    A noisy start on few parents takes more; many parents or a large ρ leave the 0.7 floor; a
    public parent or no released parent count gives the floor; a number is used as is."""
    from fractions import Fraction

    from relviz.privacy.mechanisms import gaussian_sigma

    schema = tiny_schema(caps={"persons.hid->households": 15})  # entity unit, 16 exact bins
    fk = schema.foreign_key("persons.hid->households")
    m = multipliers(schema)
    bia = get("biadjacency")
    rho = Fraction(1, 400)
    sigma = gaussian_sigma(m.degree_release(fk.name, with_null=False), rho)
    r = sigma * 4 / 205
    want = min(max(Fraction(int(-(-100 // (1 + 0.005 / r) ** 2)), 100), Fraction(7, 10)), Fraction(19, 20))
    got = bia.degree_start_share(schema, fk, rho, multipliers=m, parents=205.0)
    assert got == want and Fraction(7, 10) < got <= Fraction(19, 20)
    assert bia.degree_start_share(schema, fk, rho, multipliers=m, parents=20_000.0) == Fraction(7, 10)
    assert bia.degree_start_share(schema, fk, rho * 10_000, multipliers=m, parents=205.0) == Fraction(7, 10)
    assert bia.degree_start_share(schema, fk, rho / 100, multipliers=m, parents=205.0) == Fraction(19, 20)
    shares = [bia.degree_start_share(schema, fk, rho * k, multipliers=m, parents=205.0) for k in (1, 2, 4, 8)]
    assert shares == sorted(shares, reverse=True)  # more budget, less needed for the start
    assert bia.degree_start_share(schema, fk, rho, multipliers=m, parents=None) == Fraction(7, 10)
    assert get("biadjacency", init_share=0.8).degree_start_share(
        schema, fk, rho, multipliers=m, parents=205.0) == Fraction(4, 5)
    # public parent: r = σ/μ with μ = children/parents, the counts' scale
    pub = schema.foreign_key("households.region->regions")
    sigma_c = gaussian_sigma(m.parent_counts(pub.name), rho)
    r_pub = sigma_c / (60 / 3)
    want_pub = min(max(Fraction(int(-(-100 // (1 + 0.005 / r_pub) ** 2)), 100), Fraction(7, 10)),
                   Fraction(19, 20))
    assert bia.degree_start_share(schema, pub, rho, multipliers=m, parents=3.0, children=60.0) == want_pub
    assert bia.degree_start_share(schema, pub, rho, multipliers=m, parents=3.0, children=1e9) == Fraction(7, 10)
    assert bia.degree_start_share(schema, pub, rho, multipliers=m, parents=3.0, children=None) == Fraction(7, 10)


def test_degree_start_gives_the_link_count_without_a_release() -> None:
    """Under the entity unit the number of links is private. With the degree start it is the
    start's number of linked synthetic children (released sizes, post-processing): no
    "number of links" entry in the ledger; with ``init="random"`` it is released."""
    from fractions import Fraction

    from relviz.plan import Plan
    from relviz.synthesizer import RelationalSynthesizer
    from tests.privacy.neighbours import fixed_household_db

    db = fixed_household_db(30, seed=1, persons=(1, 3), trips=(0, 2))
    fk = "persons.hid->households"
    for init, released in (("degree", False), ("random", True)):
        plan = (Plan.default(db.schema, 1.0, 1e-6, method="degree")
                .with_method(fk, "biadjacency", init=init, n_iters=2, workloads_per_iter=1))
        syn = RelationalSynthesizer(plan, random_state=0).fit(db)
        assert syn.accountant_.spent() == Fraction(plan.rho_total)  # exact, with either start
        assert syn.accountant_.spent(fk) == plan.rho_of(fk)
        labels = [e.label for e in syn.ledger_ if e.component == fk]
        assert any(lab.startswith("number of links") for lab in labels) == released, labels
        note = next(n for n in syn.accountant_.notes if n.startswith(fk))
        assert ("degree start's number of linked synthetic children" in note) == (not released)
        assert ("of the FK's ρ" in note) == (not released)
