"""The relviz command: datasets, schema, validate and a full synth run with its outputs."""

from __future__ import annotations

import json
import re
import sqlite3
from fractions import Fraction

import pandas as pd
import pytest

import relviz.datasets as datasets
from relviz.cli import main
from relviz.demo_checks import check_output
from tests.conftest import tiny_frames, tiny_schema


def test_datasets_and_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "nycflights13 (default)" in out and "baseball" in out
    assert main(["schema", "--dataset", "schools"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "schools"


def test_validate_reports_every_problem(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    frames = tiny_frames()
    frames["persons"].loc[0, "hid"] = 999
    frames["persons"].loc[1, "sex"] = "X"
    for name, df in frames.items():
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    tiny_schema().to_json(tmp_path / "schema.json")
    assert main(["validate", "--data", str(tmp_path), "--schema", str(tmp_path / "schema.json")]) == 2
    err = capsys.readouterr().err
    assert "[orphan]" in err and "[unknown_category]" in err
    # synth refuses a user's data without a public schema
    with pytest.raises(SystemExit, match="needs --schema"):
        main(["synth", "--data", str(tmp_path), "--out", str(tmp_path / "o")])


def test_synth_writes_every_output(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["synth", "--dataset", "schools", "--epsilon", "2", "--delta", "1e-6", "--seed", "0",
                 "--out", str(out), "--quiet"]) == 0
    summary = capsys.readouterr().out
    assert "ρ spent" in summary and "students" in summary and "degree similarity" in summary
    release, curator = out / "release", out / "curator"
    # release/ holds exactly the files safe to share; curator/ what reads the real data
    assert {p.name for p in out.iterdir()} == {"release", "curator"}
    assert {p.name for p in release.iterdir()} == {"tables", "synthetic.sqlite", "ledger.json",
                                                   "plan.json", "schema.json"}
    assert {p.name for p in curator.iterdir()} == {"report.html", "cap_report.txt", "timings.json"}
    assert f"{release}/ — the differentially private release, safe to share" in summary
    assert f"{curator}/ — for the curator only, do NOT share" in summary
    assert "NOT DIFFERENTIALLY PRIVATE" not in summary
    for name in ("schools", "students"):
        assert len(pd.read_parquet(release / "tables" / f"{name}.parquet")) > 0
    con = sqlite3.connect(release / "synthetic.sqlite")
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    con.close()
    ledger = json.loads((release / "ledger.json").read_text())
    assert Fraction(ledger["rho_spent_exact"]) == Fraction(ledger["rho_total_exact"])
    assert check_output(out) == []
    html = (curator / "report.html").read_text()
    assert "curator view (not private)" in html and "ledger" in html.lower()
    assert "Not differentially private" not in html
    assert json.loads((release / "plan.json").read_text())["epsilon"] == 2.0
    # a saved plan keeps its budget unless overridden
    again = tmp_path / "again"
    assert main(["synth", "--dataset", "schools", "--plan", str(release / "plan.json"), "--seed", "1",
                 "--out", str(again), "--quiet", "--no-report", "--save-model"]) == 0
    assert json.loads((again / "release" / "ledger.json").read_text())["epsilon"] == 2.0
    # --save-model: the release's models, loadable, without the noise seed
    from relviz.synthesizer import RelationalSynthesizer
    model = RelationalSynthesizer.load(again / "release" / "synthesizer.pkl")
    assert model.seed_ is None and not hasattr(model, "cap_report_")
    assert set(model.sample(random_state=0).table_names) == {"schools", "students"}
    # a later run into the same folder without --save-model leaves no stale model behind
    assert main(["synth", "--dataset", "schools", "--plan", str(release / "plan.json"), "--seed", "2",
                 "--out", str(again), "--quiet", "--no-report"]) == 0
    assert not (again / "release" / "synthesizer.pkl").exists()
    assert not (again / "curator" / "report.html").exists()
    assert check_output(again, report=False) == [] and check_output(again) == ["no curator/report.html"]
    # a stray curator file in release/ fails the checks
    (release / "report.html").write_text("real data")
    assert any("unexpected: report.html" in p for p in check_output(out))


def _inferred_csv(tmp_path):  # noqa: ANN001, ANN202
    """The tiny database as CSV files with a schema.json whose persons domains were inferred."""
    from dataclasses import replace

    from relviz.schema import infer_attributes

    frames = tiny_frames()
    for name, df in frames.items():
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    s = tiny_schema()
    persons = s.table("persons")
    s = s.with_table(replace(persons, attributes=infer_attributes(frames["persons"], {"pid", "hid"})))
    s.to_json(tmp_path / "schema.json")
    return s


def test_synth_refuses_inferred_domains_unless_allowed(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    _inferred_csv(tmp_path)
    args = ["synth", "--data", str(tmp_path), "--schema", str(tmp_path / "schema.json"), "--seed", "0",
            "--quiet", "--epsilon", "2"]
    assert main(args + ["--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert "persons.sex" in err and "persons.age" in err and "--allow-inferred-schema" in err
    assert "households" not in err.split("problems):")[1]  # declared domains are not listed
    assert not (tmp_path / "refused").exists()  # nothing written
    out = tmp_path / "allowed"
    assert main(args + ["--out", str(out), "--allow-inferred-schema"]) == 0
    summary = capsys.readouterr().out
    assert "WARNING — NOT DIFFERENTIALLY PRIVATE" in summary and "persons.sex" in summary
    assert f"{out / 'release'}/ — NOT differentially private" in summary
    ledger = json.loads((out / "release" / "ledger.json").read_text())
    assert any(n.startswith("NOT DIFFERENTIALLY PRIVATE") and "domains came from the data" in n
               for n in ledger["notes"])
    assert "Not differentially private." in (out / "curator" / "report.html").read_text()
    assert any("NOT DIFFERENTIALLY PRIVATE" in p for p in check_output(out))


def test_synth_preset_baseline_80_20(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["synth", "--dataset", "schools", "--preset", "baseline-80-20", "--epsilon", "1",
                 "--seed", "0", "--out", str(out), "--quiet", "--no-report"]) == 0
    plan = json.loads((out / "release" / "plan.json").read_text())
    shares = {c["kind"]: Fraction(0) for c in plan["components"]}
    for c in plan["components"]:
        shares[c["kind"]] += Fraction(c["share"])
    assert shares == {"table": Fraction(4, 5), "edge": Fraction(1, 5)}
    assert {c["method"] for c in plan["components"] if c["kind"] == "edge"} == {"degree"}
    printed = capsys.readouterr().out  # --no-report drops the real tables before sampling
    assert not any(k[0] == "schools" for k in datasets._LOADED)  # the loader's cached copy too;
    db = datasets.load("schools")  # the summary still shows their row counts (read before)
    for t in db.schema.table_names:
        assert re.search(rf"\b{t}\s+{len(db[t]):,} → ", printed), (t, printed)
    assert main(["synth", "--dataset", "schools", "--preset", "baseline-80-20", "--plan",
                 str(out / "release" / "plan.json"), "--out", str(tmp_path / "x"), "--quiet"]) == 2
    assert "not both" in capsys.readouterr().err


def test_synth_public_link_and_link_choose_fk_attribute(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """--public-link sets the linker of every FK to a public parent; --link one FK's; a bad
    --link is refused in words with exit status 2."""
    out = tmp_path / "out"
    assert main(["synth", "--dataset", "schools", "--public-link", "fk-attribute", "--epsilon", "2",
                 "--seed", "0", "--out", str(out), "--quiet", "--no-report"]) == 0
    plan = json.loads((out / "release" / "plan.json").read_text())
    assert {c["method"] for c in plan["components"] if c["kind"] == "edge"} == {"fk-attribute"}
    syn = pd.read_parquet(out / "release" / "tables" / "students.parquet")
    assert "school→schools" not in syn.columns and syn["school"].notna().all()
    assert main(["synth", "--dataset", "schools", "--link", "students.school->schools=fk-attribute",
                 "--epsilon", "2", "--seed", "0", "--out", str(tmp_path / "o2"), "--quiet",
                 "--no-report"]) == 0
    capsys.readouterr()
    assert main(["synth", "--dataset", "schools", "--link", "students.school->nowhere=degree",
                 "--out", str(tmp_path / "o3"), "--quiet"]) == 2
    assert "--link students.school->nowhere=degree" in capsys.readouterr().err


# -- database methods (PrivLava, Denorm) on a small census stand-in -------------------------------

CENSUS_FK = "persons.household_id->households"


def _census_files(tmp_path, *, caps: bool) -> tuple[str, str]:
    """The census stand-in (300 households) as a SQLite file and its schema JSON, with or without
    the declared cap τ."""
    from dataclasses import replace

    from relviz import datasets

    db = datasets.load("census", n_households=300, seed=0)
    data = tmp_path / "census.sqlite"
    if not data.exists():
        db.to_sqlite(data)
    schema = db.schema if caps else db.schema.with_privacy_unit(replace(db.schema.privacy_unit, caps={}))
    path = tmp_path / ("schema.json" if caps else "schema_nocaps.json")
    schema.to_json(path)
    return str(data), str(path)


def test_synth_privlava_without_caps_is_refused_in_words(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = _census_files(tmp_path, caps=False)
    out = tmp_path / "out"
    assert main(["synth", "--data", data, "--schema", schema, "--method", "privlava",
                 "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "[missing_cap]" in err and "PrivLava needs a public group-size cap" in err
    assert f"({CENSUS_FK} has none)" in err and "--dp-caps RHO" in err
    assert "Traceback" not in err and not out.exists()
    assert main(["synth", "--data", data, "--schema", schema, "--method", "privlava", "--dp-caps",
                 "-1", "--out", str(out), "--quiet"]) == 2
    assert "positive" in capsys.readouterr().err


@pytest.mark.slow
def test_synth_privlava_with_dp_caps(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--dp-caps`` releases τ before the run (charged to the ledger); a small PrivLava plan
    (``--plan``: few EM iterations) runs end to end and the summary lists the ledger."""
    from relviz import datasets
    from relviz.plan import Plan

    data, schema = _census_files(tmp_path, caps=False)
    plan = Plan.default(datasets.load("census", n_households=300, seed=0).schema, 8.0, 1e-6,
                        method="privlava").with_params(CENSUS_FK, T=1, T_C=0, n_C=5, k_max=2, iters=20)
    plan.to_json(tmp_path / "plan.json")
    out = tmp_path / "out"
    assert main(["synth", "--data", data, "--schema", schema, "--plan", str(tmp_path / "plan.json"),
                 "--dp-caps", "0.5", "--seed", "0", "--out", str(out), "--quiet", "--no-report"]) == 0
    cap = capsys.readouterr()
    assert "--dp-caps: τ = " in cap.err and CENSUS_FK in cap.err
    summary = cap.out
    assert "ledger (" in summary and "caps" in summary and CENSUS_FK in summary
    ledger = json.loads((out / "release" / "ledger.json").read_text())
    labels = [e["label"] for e in ledger["entries"]]
    assert labels[0].startswith(f"degree cap of {CENSUS_FK}: DP 0.99-quantile")
    assert any(lb.startswith("Alg. 1 M3") for lb in labels) and any(lb.startswith("Alg. 2 line 1")
                                                                   for lb in labels)
    assert json.loads((out / "release" / "schema.json").read_text())["privacy_unit"]["caps"][CENSUS_FK] >= 1
    con = sqlite3.connect(out / "release" / "synthetic.sqlite")
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    con.close()


@pytest.mark.slow
def test_synth_denorm(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    data, schema = _census_files(tmp_path, caps=True)
    out = tmp_path / "out"
    assert main(["synth", "--data", data, "--schema", schema, "--method", "denorm", "--epsilon", "4",
                 "--seed", "0", "--out", str(out), "--quiet", "--no-report"]) == 0
    summary = capsys.readouterr().out
    assert "ledger (" in summary and "persons " in summary and CENSUS_FK in summary
    plan = json.loads((out / "release" / "plan.json").read_text())
    assert {c["method"] for c in plan["components"] if c["kind"] == "edge"} == {"denorm"}
    assert len(pd.read_parquet(out / "release" / "tables" / "persons.parquet")) > 0


def _accept(schema_json: str) -> dict:
    """What a curator does after reviewing a proposed schema: drop every "inferred" mark."""
    d = json.loads(schema_json)
    for t in d["tables"]:
        for a in t["attributes"]:
            a.pop("provenance", None)
        for f in (t.get("key_format") or {}).values():
            f.pop("provenance", None)
    for fk in d["foreign_keys"]:
        fk.pop("nullable_provenance", None)
    return d


def test_schema_proposals_accepted_then_synth(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """relviz schema → accept the proposals → relviz validate → relviz synth, on CSV files shaped
    like a user's TPC-H export (dates as text, names, phones, comments, 5- and 25-row lookup
    tables, text keys like "N10156")."""
    from tests.messy_data import messy_csv, tpch_like

    frames = {**tpch_like(), **{k: v for k, v in messy_csv().items() if k in ("planes", "flights")}}
    data = tmp_path / "data"
    data.mkdir()
    for name, df in frames.items():
        df.to_csv(data / f"{name}.csv", index=False)
    assert main(["schema", "--data", str(data)]) == 0
    cap = capsys.readouterr()
    proposed = json.loads(cap.out)
    kinds = {(p["table"], p["column"]): p["kind"] for p in proposed["proposals"]}
    assert kinds[("customer", "c_phone")] == "excluded" and kinds[("orders", "o_orderdate")] == "datetime"
    assert kinds[("region", None)] == "public_table"
    tables = {t["name"]: t for t in proposed["tables"]}
    assert "c_phone" in tables["customer"]["exclude"] and tables["region"]["public"]
    assert tables["planes"]["key_format"]["tailnum"]["prefix"] == "N"
    # the same proposals, explained, on stderr (stdout stays the JSON to save)
    assert "proposals read from the data (curator view, not private)" in cap.err
    assert re.search(r"c_phone\s+excluded\s+exclude: personal data", cap.err)
    assert "region (public)" in cap.err and "marked \"inferred\"" in cap.err
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(_accept(cap.out)))
    assert main(["validate", "--data", str(data), "--schema", str(schema)]) == 0
    out_v = capsys.readouterr().out
    assert "excluded (not modelled): customer: c_name, c_address, c_phone, c_email, c_comment" in out_v
    out = tmp_path / "out"
    assert main(["synth", "--data", str(data), "--schema", str(schema), "--mechanism", "independent",
                 "--epsilon", "2", "--seed", "0", "--out", str(out), "--quiet", "--no-report"]) == 0
    summary = capsys.readouterr().out
    assert "excluded columns" in summary and "customer: c_name, c_address" in summary
    assert "NOT DIFFERENTIALLY PRIVATE" not in summary
    tables_dir = out / "release" / "tables"
    customer = pd.read_parquet(tables_dir / "customer.parquet")
    assert "c_phone" not in customer.columns and "c_acctbal" in customer.columns
    orders = pd.read_parquet(tables_dir / "orders.parquet")
    assert (orders["o_orderdate"] == orders["o_orderdate"].dt.normalize()).all()
    assert (orders["o_distance"] % 1 == 0).all()
    flights = pd.read_parquet(tables_dir / "flights.parquet")
    assert flights["tailnum"].str.fullmatch(r"N\d{5}").all()
    assert len(pd.read_parquet(tables_dir / "region.parquet")) == 5
    released = json.loads((out / "release" / "schema.json").read_text())
    assert "proposals" not in released  # read from the data: curator material only
    con = sqlite3.connect(out / "release" / "synthetic.sqlite")
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", con.execute("SELECT o_orderdate FROM orders").fetchone()[0])
    con.close()


def test_drop_undeclared(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    frames = tiny_frames()
    frames["persons"]["notes"] = "free text about a person"
    for name, df in frames.items():
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    tiny_schema().to_json(tmp_path / "schema.json")
    base = ["--data", str(tmp_path), "--schema", str(tmp_path / "schema.json")]
    assert main(["validate", *base]) == 2
    err = capsys.readouterr().err
    assert "[undeclared_column] persons.notes" in err and "--drop-undeclared" in err
    assert main(["validate", *base, "--drop-undeclared"]) == 0
    cap = capsys.readouterr()
    assert "note: --drop-undeclared: excluded persons: notes" in cap.err
    assert "excluded (not modelled): persons: notes" in cap.out
    out = tmp_path / "out"
    assert main(["synth", *base, "--drop-undeclared", "--mechanism", "independent", "--seed", "0",
                 "--out", str(out), "--quiet", "--no-report"]) == 0
    assert "persons: notes" in capsys.readouterr().out
    assert "notes" not in pd.read_parquet(out / "release" / "tables" / "persons.parquet").columns
    released = json.loads((out / "release" / "schema.json").read_text())
    assert [t["exclude"] for t in released["tables"] if t["name"] == "persons"] == [["notes"]]
