"""Small databases shaped like what a new user brings (issue 15): a TPC-H-like one and a messy
CSV-like one, built by hand from a seed (no downloads).

* :func:`tpch_like`: ``region`` (5 rows) ← ``nation`` (25) ← ``customer`` (200) ← ``orders``
  (600). Customers have unique names (``"Customer#000000001"``), addresses, phones
  (``"25-989-741-2988"``), e-mails, a free-text comment, a market segment (5 values), a balance
  and a sign-up time as Unix epoch seconds; orders have dates as ISO text (``"1996-01-02"``), a
  timestamp as ISO text with a time of day, a whole-valued float distance, a discount in steps of
  0.01, a status and a comment.
* :func:`messy_csv`: ``schools`` (40 rows) whose key ``school`` repeats two values, with
  ``students`` (300) referring to it; ``planes`` (60) keyed by tail numbers such as ``"N10156"``
  with ``flights`` (400) referring to them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

WORDS = ("quickly regular accounts sleep furiously final deposits haggle carefully ironic "
         "packages boost slyly express requests nag blithely bold pinto beans wake").split()


def _sentences(rng: np.random.Generator, n: int, lo: int = 6, hi: int = 14) -> list[str]:
    return [" ".join(rng.choice(WORDS, rng.integers(lo, hi))) for _ in range(n)]


def tpch_like(seed: int = 0) -> dict[str, pd.DataFrame]:
    """The TPC-H-like database (see the module docstring)."""
    rng = np.random.default_rng(seed)
    region = pd.DataFrame({"r_regionkey": np.arange(5),
                           "r_name": ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"],
                           "r_comment": _sentences(rng, 5)})
    nation = pd.DataFrame({"n_nationkey": np.arange(25), "n_name": [f"NATION{i:02d}" for i in range(25)],
                           "n_regionkey": np.arange(25) % 5, "n_comment": _sentences(rng, 25)})
    n_c = 200
    customer = pd.DataFrame({
        "c_custkey": np.arange(1, n_c + 1),
        "c_name": [f"Customer#{i:09d}" for i in range(1, n_c + 1)],
        "c_address": ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz0123456789 ,"), 20))
                      for _ in range(n_c)],
        "c_nationkey": rng.integers(0, 25, n_c),
        "c_phone": [f"{rng.integers(10, 35)}-{rng.integers(100, 999)}-{rng.integers(100, 999)}-"
                    f"{rng.integers(1000, 9999)}" for _ in range(n_c)],
        "c_email": [f"user{i}@example.org" for i in range(n_c)],
        "c_acctbal": rng.uniform(-999.99, 9999.99, n_c).round(2),
        "c_mktsegment": rng.choice(["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"], n_c),
        "c_signup_time": rng.integers(1_356_998_400, 1_388_534_400, n_c),  # 2013 in epoch seconds
        "c_comment": _sentences(rng, n_c),
    })
    n_o = 600
    days = rng.integers(0, 2400, n_o)
    orderdate = pd.Timestamp("1992-01-01") + pd.to_timedelta(days, unit="D")
    stamp = orderdate + pd.to_timedelta(rng.integers(0, 86_400, n_o), unit="s")
    orders = pd.DataFrame({
        "o_orderkey": np.arange(1, n_o + 1) * 4,
        "o_custkey": rng.integers(1, n_c + 1, n_o),
        "o_orderdate": orderdate.strftime("%Y-%m-%d"),
        "o_entered": stamp.strftime("%Y-%m-%dT%H:%M:%S"),
        "o_distance": rng.integers(17, 4983, n_o).astype(float),
        "o_discount": rng.integers(0, 11, n_o) / 100,
        "o_status": rng.choice(["F", "O", "P"], n_o),
        "o_comment": _sentences(rng, n_o),
    })
    return {"region": region, "nation": nation, "customer": customer, "orders": orders}


def messy_csv(seed: int = 0) -> dict[str, pd.DataFrame]:
    """The messy CSV-like database (see the module docstring)."""
    rng = np.random.default_rng(seed)
    names = [f"School {chr(65 + i // 26)}{chr(65 + i % 26)}" for i in range(38)]
    schools = pd.DataFrame({"school": names + [names[3], names[17]],   # two duplicate key values
                            "schgend": rng.choice(["mixed", "boys", "girls"], 40),
                            "schavg": rng.normal(0, 0.3, 40).round(3)})
    students = pd.DataFrame({"student_id": np.arange(1, 301), "school": rng.choice(names, 300),
                             "sex": rng.choice(["F", "M"], 300),
                             "normexam": rng.normal(0, 1, 300).round(3)})
    tails = sorted({f"N{rng.integers(10000, 99999)}" for _ in range(70)})[:60]
    planes = pd.DataFrame({"tailnum": tails, "seats": rng.choice([55, 100, 140, 180, 375], 60),
                           "year": rng.integers(1990, 2013, 60)})
    flights = pd.DataFrame({"flight_id": np.arange(1, 401), "tailnum": rng.choice(tails, 400),
                            "dep_delay": rng.normal(10, 20, 400).round(1)})
    return {"schools": schools, "students": students, "planes": planes, "flights": flights}
