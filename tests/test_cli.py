"""The relviz command: datasets, schema, validate and a full synth run with its outputs."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction

import pandas as pd
import pytest

from relviz.checks import check_output
from relviz.cli import main
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
    for name in ("schools", "students"):
        assert len(pd.read_parquet(out / "tables" / f"{name}.parquet")) > 0
    con = sqlite3.connect(out / "synthetic.sqlite")
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    con.close()
    ledger = json.loads((out / "ledger.json").read_text())
    assert Fraction(ledger["rho_spent_exact"]) == Fraction(ledger["rho_total_exact"])
    assert check_output(out) == []
    html = (out / "report.html").read_text()
    assert "curator view (not private)" in html and "ledger" in html.lower()
    assert json.loads((out / "plan.json").read_text())["epsilon"] == 2.0
    # a saved plan keeps its budget unless overridden
    assert main(["synth", "--dataset", "schools", "--plan", str(out / "plan.json"), "--seed", "1",
                 "--out", str(tmp_path / "again"), "--quiet", "--no-report"]) == 0
    assert json.loads((tmp_path / "again" / "ledger.json").read_text())["epsilon"] == 2.0
