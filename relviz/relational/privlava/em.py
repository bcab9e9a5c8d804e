"""PrivLava's group model and Algorithm 1 (EM with noisy M-steps), vectorised.

Cai, Xiao & Cormode, "PrivLava: Synthesizing Relational Data with Foreign Keys under Differential
Privacy", SIGMOD 2023: the group model of §4.1 (Eq. 2–4) and Algorithm 1 of §4.2 with the EM
derivation of App. A; documented in docs/methods/privlava.md. One EM iteration:

* **E-step** (E1–E3): ``ℓ_G(z) = log p_Z(z) + log p_size(|G| | z) + Σ_{t∈G} Σ_{C ∋ Z} θ_C[(t,z)_C]
  − |G|·log p_θ(z)`` for every group ``G`` and composite latent state ``z = (z₁, z₂)``, then the
  posterior ``q_G = softmax(ℓ_G)``. The sum over a group's tuples is one sparse–dense product per
  clique: ``H_C`` (groups × cells of the clique's observed part, the group histograms, built once
  per attribute set) times ``Θ_C`` (cells × latent states); groups are processed in chunks so
  the ``N × K`` posterior is never held whole.
* **M-step** (M1–M3), streamed over the same chunks: ``cnt(z) = Σ_G w_G(z)``,
  ``cnt(s, z) = Σ_G w_G(z)[|G| = s]`` and every latent marginal ``H_{S_A}ᵀ w`` (summed over the
  latent axis not in the marginal), each released with the Gaussian mechanism through the run's
  budget; ``w = q`` (soft, default) or one-hot ``argmax q`` (hard), docs/methods/privlava.md §2. M4 (the θ fit) is done
  by the caller with :func:`relviz.relational.privlava.pgm.fit_model`.

The first E-step of a run breaks the symmetry of ``θ = 0`` with data-independent randomness keyed
per group (a keyed hash of the parent's primary key), so a group's draw does not depend on which
other groups exist (PrivLava §4.3, Alg. 2 line 6; docs/methods/privlava.md §2). relviz adds a
share ``size_init`` of that start on the ``Z₁`` types of the group's size class, and a share
``attr_init`` whose ``Z₂`` follows a keyed random projection of the group's child histograms
(:func:`projection_start`); both are functions of the group alone, so the sensitivities are
unchanged (docs/methods/privlava.md §2).
"""

from __future__ import annotations

import functools
import warnings
import zlib
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from relviz.privacy.budget import Budget
from relviz.privacy.measure import splitmix64 as _splitmix64
from relviz.privacy.postprocessing import fit_margins

__all__ = ["Groups", "LatentSpec", "EMState", "e_step", "m_step", "Z1", "Z2"]

CHUNK = 65_536
FLOOR = 1e-12
#: Inverse temperature of :func:`projection_start` (its scores are ≈ standard normal: β = 3 puts
#: about two thirds of a group's start on its best of k = 5 states).
PROJECTION_BETA = 3.0


def Z1(fk: str) -> str:  # noqa: N802 - the paper's symbol
    """Name of the first latent attribute of FK ``fk``."""
    return f"__Z1[{fk}]"


def Z2(fk: str) -> str:  # noqa: N802
    return f"__Z2[{fk}]"


def keyed_uniforms(keys: np.ndarray, n: int, salt: int) -> np.ndarray:
    """``(len(keys), n)`` uniforms in (0, 1), a function of each key (and ``salt``) alone."""
    with np.errstate(over="ignore"):
        base = _splitmix64(keys.astype(np.uint64) ^ np.uint64(salt & 0xFFFFFFFFFFFFFFFF))
        j = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0xD1B54A32D192ED03)
        h = _splitmix64(base[:, None] ^ j[None, :])
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


@dataclass
class Groups:
    """The child relation grouped by its parent along one FK (PrivLava §4.1).

    Attributes:
        codes: ``(n, d)`` int64 child codes (own attributes and inherited latent columns).
        attrs: Column names of ``codes``.
        domain: ``{attribute: size}``.
        group: ``(n,)`` int64 group of each child row (0…N−1).
        size: ``(N,)`` int64 group sizes.
        parent: ``(N,)`` int64 parent row of each group.
        keys: ``(N,)`` uint64 keyed hash of each group's parent key (for the first E-step's draws).
        contrib: ``(n,)`` bool or None: the rows that count in the latent marginals (at most
            ``τ_contrib`` per group, chosen by a keyed hash of the child's key; the authors'
            ``tau_contrib`` of the PrivLava code, docs/methods/privlava.md §5); None: every row.
    """

    codes: np.ndarray
    attrs: tuple[str, ...]
    domain: dict[str, int]
    group: np.ndarray
    size: np.ndarray
    parent: np.ndarray
    keys: np.ndarray
    contrib: np.ndarray | None = None
    _hist: dict[tuple[str, ...], sp.csr_matrix] = field(default_factory=dict, repr=False)
    _chist: dict[tuple[str, ...], sp.csr_matrix] = field(default_factory=dict, repr=False)

    @property
    def n_groups(self) -> int:
        return len(self.size)

    def flat(self, attrs: tuple[str, ...]) -> np.ndarray:
        """Flat C-order cell of every child row in the marginal on ``attrs``."""
        if not attrs:
            return np.zeros(len(self.group), dtype=np.int64)
        cols = [self.codes[:, self.attrs.index(a)] for a in attrs]
        return np.ravel_multi_index(cols, tuple(self.domain[a] for a in attrs)).astype(np.int64)

    def histograms(self, attrs: tuple[str, ...]) -> sp.csr_matrix:
        """``H``: groups × cells of ``attrs``, the per-group counts (cached)."""
        if attrs not in self._hist:
            cells = int(np.prod([self.domain[a] for a in attrs])) if attrs else 1
            data = np.ones(len(self.group), dtype=np.float32)
            self._hist[attrs] = sp.csr_matrix((data, (self.group, self.flat(attrs))),
                                              shape=(self.n_groups, cells))
            self._hist[attrs].sum_duplicates()
        return self._hist[attrs]

    def contributing(self, attrs: tuple[str, ...]) -> sp.csr_matrix:
        """``H`` restricted to the contributing rows (the latent marginals' counts)."""
        if self.contrib is None:
            return self.histograms(attrs)
        if attrs not in self._chist:
            cells = int(np.prod([self.domain[a] for a in attrs])) if attrs else 1
            keep = self.contrib
            data = np.ones(int(keep.sum()), dtype=np.float32)
            self._chist[attrs] = sp.csr_matrix((data, (self.group[keep], self.flat(attrs)[keep])),
                                               shape=(self.n_groups, cells))
            self._chist[attrs].sum_duplicates()
        return self._chist[attrs]

    @property
    def contrib_size(self) -> np.ndarray:
        """``(N,)`` contributing rows per group (``min(|G|, τ_contrib)``)."""
        if self.contrib is None:
            return self.size
        return np.bincount(self.group[self.contrib], minlength=self.n_groups).astype(np.int64)


@dataclass
class LatentSpec:
    """The latent pair of one FK and the group-size domain.

    Attributes:
        z1, z2: Names of the latent attributes; ``k``: their domain size (``K = k²`` states).
        s_min, tau: The group-size domain ``𝒮 = {s_min, …, τ}`` (``s_min`` = 0 when childless
            parents are groups of size 0, PrivLava §5.3; docs/methods/privlava.md §1).
        size_init: Share in [0, 1) of each group's first-E-step responsibility put on the
            ``Z₁`` state of its size class (:func:`size_states`); 0: the paper's
            data-independent draw alone (docs/methods/privlava.md §2).
        attr_init: Share in [0, 1) of the first E-step's responsibility whose ``Z₂`` follows
            :func:`projection_start` (its ``Z₁`` keeps the start above); 0: none.
        center: ``{attribute: (|A|,) probabilities}`` that :func:`projection_start` centres the
            group histograms on: the child's *released* 1-way marginals (post-processing of
            Alg. 2 line 1's noisy measurements); None or a missing attribute: uniform.
    """

    z1: str
    z2: str
    k: int
    s_min: int
    tau: int
    size_init: float = 0.0
    attr_init: float = 0.0
    center: dict[str, np.ndarray] | None = None

    @property
    def K(self) -> int:  # noqa: N802 - the paper's symbol
        return self.k * self.k

    @property
    def sizes(self) -> int:
        return self.tau - self.s_min + 1


@dataclass
class EMState:
    """Parameters of the group model: ``p_Z`` ``(K,)``, ``p_size`` ``(|𝒮|, K)`` (columns sum to
    1), the fitted tuple model (``mbi`` model, or ``None`` before the first fit), the last
    E-step's hard assignment ``z_G`` of every real group (``z_hard``, int64 ``(groups,)``) and
    the parent rows those groups are (``parents``, int64 ``(groups,)``, row positions in the
    parent table). Neither is a release: they are read once, to augment the parent for its
    accounted single-relation model (PrivLava §4.4), and then cleared, so a fitted model holds
    released values only."""

    p_z: np.ndarray
    p_size: np.ndarray
    model: object | None = None
    z_hard: np.ndarray | None = None
    parents: np.ndarray | None = None
    first: bool = True


def _theta_blocks(potentials, spec: LatentSpec) -> list[tuple[tuple[str, ...], np.ndarray]]:  # noqa: ANN001
    """Per clique with a latent attribute: (observed attributes, ``(cells, K)`` block of θ)."""
    out = []
    k = spec.k
    for attrs, vals in potentials:
        lat = [a for a in attrs if a in (spec.z1, spec.z2)]
        if not lat:
            continue
        obs = [a for a in attrs if a not in lat]
        lat_sorted = [a for a in (spec.z1, spec.z2) if a in lat]
        order = [attrs.index(a) for a in obs + lat_sorted]
        v = np.transpose(vals, order)
        cells = int(np.prod(v.shape[: len(obs)])) if obs else 1
        v = v.reshape(cells, -1)
        if lat_sorted == [spec.z1]:
            v = np.repeat(v, k, axis=1)
        elif lat_sorted == [spec.z2]:
            v = np.tile(v, (1, k))
        out.append((tuple(obs), v.astype(np.float32)))
    return out


def _torch_scores(groups: Groups, blocks, rows: slice, size: np.ndarray, K: int, device) -> np.ndarray:  # noqa: ANN001, N803
    """``Σ_C H_C Θ_C`` for the groups in ``rows`` with torch on ``device`` (sparse CSR × dense)."""
    import torch

    out = torch.zeros((len(size), K), dtype=torch.float32, device=device)
    for obs, theta in blocks:
        th = torch.as_tensor(theta, device=device)
        if obs:
            h = groups.histograms(obs)[rows]
            with warnings.catch_warnings():  # torch calls its CSR support "beta"
                warnings.simplefilter("ignore", UserWarning)
                ht = torch.sparse_csr_tensor(torch.as_tensor(h.indptr, dtype=torch.int64),
                                             torch.as_tensor(h.indices, dtype=torch.int64),
                                             torch.as_tensor(h.data, dtype=torch.float32),
                                             size=h.shape, device=device)
            out += ht @ th
        else:
            out += torch.as_tensor(size, dtype=torch.float32, device=device)[:, None] * th[0][None, :]
    return out.cpu().numpy()


def _posteriors(groups: Groups, state: EMState, spec: LatentSpec, blocks, log_pz_tuple: np.ndarray,  # noqa: ANN001
                rows: slice, salt: int, device=None) -> np.ndarray:  # noqa: ANN001
    """``q_G`` for the groups in ``rows`` (``(b, K)`` float32); the scoring runs with torch on
    ``device`` when one is given, else with scipy.sparse."""
    size = groups.size[rows]
    if state.first:  # PrivLava Alg. 2 line 6: break the θ = 0 symmetry with keyed Dirichlet(1) draws
        e = -np.log(keyed_uniforms(groups.keys[rows], spec.K, salt))
        q = e / e.sum(axis=1, keepdims=True)
        if spec.size_init > 0:  # relviz: start Z₁ on the group's size class
            on = (np.arange(spec.K)[None, :] // spec.k) == size_states(spec)[size - spec.s_min][:, None]
            qs = np.where(on, e, 0.0)
            q = (1.0 - spec.size_init) * q + spec.size_init * qs / qs.sum(axis=1, keepdims=True)
        if spec.attr_init > 0:  # relviz: start Z₂ on a keyed random projection of the group
            q2 = projection_start(groups, spec, rows, salt)
            q1 = q.reshape(-1, spec.k, spec.k).sum(axis=2)
            q = (1.0 - spec.attr_init) * q + spec.attr_init * (q1[:, :, None] * q2[:, None, :]).reshape(q.shape)
        return q.astype(np.float32)
    if device is not None:
        score = _torch_scores(groups, blocks, rows, size, spec.K, device)
        blocks = []
    else:
        score = np.zeros((len(size), spec.K), dtype=np.float32)
    for obs, theta in blocks:
        if obs:
            score += groups.histograms(obs)[rows] @ theta
        else:
            score += size[:, None].astype(np.float32) * theta[0][None, :]
    log_pz = np.log(np.maximum(state.p_z, FLOOR)).astype(np.float32)
    log_ps = np.log(np.maximum(state.p_size, FLOOR)).astype(np.float32)
    score += log_pz[None, :] + log_ps[size - spec.s_min]
    score -= size[:, None].astype(np.float32) * log_pz_tuple[None, :].astype(np.float32)
    score -= score.max(axis=1, keepdims=True)
    q = np.exp(score)
    return q / q.sum(axis=1, keepdims=True)


def projection_start(groups: Groups, spec: LatentSpec, rows: slice, salt: int,
                     beta: float = PROJECTION_BETA) -> np.ndarray:
    """The attribute-informed start of ``Z₂`` (relviz; docs/methods/privlava.md §2).

    ``q₂(G) = softmax(β·s_G)`` with ``s_G = Σ_A (H_A[G] − |G|·p̂_A)·R_A / √(|G|·d)``: the group's
    histogram of each of the ``d`` child attributes ``A`` (``H_A[G]``, counts), centred on the
    released 1-way marginal ``p̂_A`` (``spec.center``; uniform without one) so that no state is
    favoured on average, projected on ``k`` directions ``R_A`` (``(|A|, k)`` standard normal,
    drawn from ``salt`` and the attribute's name alone, hence data-independent). Each
    ``s_G(z₂)`` then has mean ≈ 0 and variance ≈ 1 over the groups, so ``β`` sets how decided
    the start is. A function of the group alone (and of public or released values), like every
    posterior: the sensitivities of docs/methods/privlava.md §4 hold unchanged.

    Args:
        rows: The groups to score (a chunk of ``0…N−1``). salt: Key of the directions.

    Returns:
        ``(len(rows), k)`` float64 rows summing to 1.
    """
    b = rows.stop - rows.start
    score = np.zeros((b, spec.k))
    d = max(len(groups.attrs), 1)
    for a in groups.attrs:
        r = _directions(salt & 0xFFFFFFFF, a, groups.domain[a], spec.k)
        p = (spec.center or {}).get(a)
        p = np.full(groups.domain[a], 1.0 / groups.domain[a]) if p is None else p
        score += groups.histograms((a,))[rows] @ r - groups.size[rows][:, None] * (p @ r)[None, :]
    score /= np.sqrt(np.maximum(groups.size[rows], 1) * d)[:, None]
    score = beta * score
    score -= score.max(axis=1, keepdims=True)
    q = np.exp(score)
    return q / q.sum(axis=1, keepdims=True)


@functools.lru_cache(maxsize=256)
def _directions(salt: int, attribute: str, size: int, k: int) -> np.ndarray:
    """``(size, k)`` standard-normal directions of :func:`projection_start`, keyed by ``salt`` and
    the attribute's name (drawn once per fit, not once per chunk of groups)."""
    rng = np.random.default_rng([salt, zlib.crc32(attribute.encode())])
    r = rng.standard_normal((size, k))
    r.setflags(write=False)
    return r


def e_step(groups: Groups, state: EMState, spec: LatentSpec, potentials, log_pz_tuple: np.ndarray,  # noqa: ANN001
           latent: list[tuple[tuple[str, ...], tuple[str, ...]]], *, hard: bool, salt: int,
           device=None) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:  # noqa: ANN001
    """E-step and the exact (pre-noise) M-step statistics, streamed over chunks of groups.

    Args:
        potentials: ``[(attributes, θ_C)]`` of the current tuple model (ignored on the first call).
        log_pz_tuple: ``(K,)`` ``log p_θ(z)``, the tuple-level latent marginal (E1).
        latent: ``[(S_A, S_Z)]`` of every latent marginal to count (M3).
        hard: Count with one-hot ``argmax q`` instead of ``q`` (docs/methods/privlava.md §2).
        salt: Key of the first-iteration draws.
        device: A ``torch.device`` for the scoring (CUDA when present under ``device="auto"``);
            None: scipy.sparse on the CPU.

    Returns:
        ``(cnt(z) (K,), cnt(s, z) (|𝒮|, K), [latent marginal counts, flat C order over
        S_A + S_Z], z_G (N,))``. These are exact private statistics: release them only through
        :func:`m_step`.
    """
    blocks = [] if state.first else _theta_blocks(potentials, spec)
    K, k = spec.K, spec.k
    cnt_z = np.zeros(K)
    cnt_sz = np.zeros((spec.sizes, K))
    lat_counts = [np.zeros((int(np.prod([groups.domain[a] for a in sa])) if sa else 1, K))
                  for sa, _ in latent]
    z_hard = np.empty(groups.n_groups, dtype=np.int64)
    csize = groups.contrib_size
    for start in range(0, groups.n_groups, CHUNK):
        rows = slice(start, min(start + CHUNK, groups.n_groups))
        q = _posteriors(groups, state, spec, blocks, log_pz_tuple, rows, salt, device)
        z = q.argmax(axis=1)
        z_hard[rows] = z
        if hard:
            w = np.zeros_like(q)
            w[np.arange(len(z)), z] = 1.0
        else:
            w = q
        w64 = w.astype(np.float64)
        cnt_z += w64.sum(axis=0)
        np.add.at(cnt_sz, groups.size[rows] - spec.s_min, w64)
        size = csize[rows].astype(np.float64)
        for i, (sa, _) in enumerate(latent):
            if sa:
                lat_counts[i] += groups.contributing(sa)[rows].T.astype(np.float64) @ w64
            else:
                lat_counts[i][0] += size @ w64
    out = []
    for (_, sz), c in zip(latent, lat_counts):
        c3 = c.reshape(-1, k, k)
        if sz == (spec.z1,):
            c3 = c3.sum(axis=2)
        elif sz == (spec.z2,):
            c3 = c3.sum(axis=1)
        out.append(c3.reshape(-1))
    return cnt_z, cnt_sz, out, z_hard


@dataclass(frozen=True)
class NoiseScales:
    """ρ per release of Algorithm 1 and their sensitivities (docs/methods/privlava.md §4)."""

    rho_z: Fraction
    rho_size: Fraction
    rho_latent: Fraction  # per latent marginal
    delta_cnt: float
    delta_latent: float


def size_bins(spec: LatentSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Public bins of the group-size domain ``{s_min…τ}``: one per size below 16, geometric above
    (the degree baseline's bins, ``relviz.relational.degree.degree_bin_edges``; relviz's: with
    τ = 1,500 a per-size table spreads its noise over 1,500 cells per latent state).

    Returns:
        ``(bin of each size (|𝒮|,), width of each bin, mean size of each bin)``.
    """
    from relviz.relational.degree import degree_bin_edges

    edges = degree_bin_edges(spec.tau)
    sizes = np.arange(spec.s_min, spec.tau + 1)
    raw = np.searchsorted(edges, sizes, side="right") - 1
    used, bin_of = np.unique(raw, return_inverse=True)
    width = np.bincount(bin_of).astype(np.float64)
    mean = np.bincount(bin_of, weights=sizes.astype(np.float64)) / width
    return bin_of.astype(np.int64), width, mean


def size_states(spec: LatentSpec) -> np.ndarray:
    """``(|𝒮|,)`` the ``Z₁`` state of each group size for the size-informed first E-step: the
    public size bins of :func:`size_bins`, in order, cut into at most ``k`` runs of equal
    numbers of bins (public: only ``τ``, ``s_min`` and ``k``)."""
    bin_of, _, _ = size_bins(spec)
    nb = int(bin_of.max()) + 1
    return (bin_of * min(spec.k, nb)) // nb


def _pooled(cnt: np.ndarray) -> np.ndarray:
    s = cnt.sum()
    return cnt / s if s > 0 else np.full(len(cnt), 1.0 / len(cnt))


def m_step(stats, spec: LatentSpec, scales: NoiseScales, budget: Budget, iteration: str, *,  # noqa: ANN001
           n_children: float | None = None, n_groups: float | None = None,
           tau_contrib: int | None = None, size_log: list | None = None
           ) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, float]]]:
    """M1–M3: release the E-step statistics with Gaussian noise and update ``p_Z``, ``p_size``.

    Post-processing (free; relviz's, replacing the paper's clip-at-0, which spreads the positive
    part of the noise over every empty cell and inflates group sizes when ``τ`` is large): the
    noisy ``cnt(z)`` is projected onto ``{x ≥ 0, Σx = N}`` with ``N`` the number of groups (public
    when every parent is a group of a public parent, else the noisy sum), and the noisy
    ``cnt(s, z)`` onto ``{x ≥ 0, Σ_{s,z} x = Σ_z cnt*(z), Σ_{s,z} s·x = ñ}`` with ``ñ`` the noisy
    number of grouped children from Algorithm 2 line 1 (Euclidean projections,
    ``relviz.privacy.postprocessing``).

    Args:
        n_children: Noisy (or public) number of children in groups, for the size moment.
        n_groups: Public number of groups, when known.
        tau_contrib: When the latent marginals count at most this many rows per group, their
            noisy counts (and σ) are rescaled by ``Σ s·cnt*(s,·) / Σ min(s, τ_c)·cnt*(s,·)`` (from
            the released sizes: post-processing) so that they sum like the tuple model's total.
        size_log: When given, ``(noisy Σ_z cnt(bin, z), number of groups)`` of this iteration is
            appended (for :func:`pooled_group_sizes`).

    Returns:
        ``(p_Z, p_size, [(noisy latent marginal, σ_ℓ)])``.
    """
    from relviz.privacy.postprocessing import project_counts, project_counts_moment

    cnt_z, cnt_sz, latent, _ = stats
    src = "PrivLava (Cai, Xiao & Cormode 2023) Algorithm 1"
    noisy_z, _ = budget.gaussian(cnt_z, rho=scales.rho_z, sensitivity=scales.delta_cnt,
                                 label=f"Alg. 1 M1 latent-state counts cnt(z) ({iteration})",
                                 source=src + " M1", integer=False)
    total_groups = float(n_groups) if n_groups is not None else max(float(noisy_z.sum()), 1.0)
    noisy_z = project_counts(noisy_z, total_groups)
    p_z = _pooled(noisy_z)
    bin_of, width, mean = size_bins(spec)
    n_bins = len(width)
    cnt_bz = np.zeros((n_bins, spec.K))
    np.add.at(cnt_bz, bin_of, cnt_sz)
    noisy_bz, _ = budget.gaussian(cnt_bz.ravel(), rho=scales.rho_size, sensitivity=scales.delta_cnt,
                                  label=f"Alg. 1 M2 group-size counts cnt(s, z) ({iteration}"
                                        + (f", {n_bins} size bins)" if n_bins < spec.sizes else ")"),
                                  source=src + " M2", integer=False)
    if size_log is not None:
        size_log.append((noisy_bz.reshape(n_bins, spec.K).sum(axis=1), total_groups))
    sizes = np.repeat(mean, spec.K)
    if n_children is not None:
        noisy_bz = project_counts_moment(noisy_bz, total_groups, sizes,
                                         float(n_children)).reshape(n_bins, spec.K)
    else:
        noisy_bz = project_counts(noisy_bz, total_groups).reshape(n_bins, spec.K)
    noisy_sz = noisy_bz[bin_of] / width[bin_of][:, None]  # uniform within a public bin
    col = noisy_sz.sum(axis=0)
    pooled = _pooled(noisy_sz.sum(axis=1))
    p_size = np.where(col[None, :] > 0, noisy_sz / np.where(col > 0, col, 1.0)[None, :],
                      pooled[:, None])
    out = []
    scale = 1.0
    if tau_contrib is not None:
        s_vals = np.arange(spec.s_min, spec.tau + 1, dtype=np.float64)
        full = float((s_vals[:, None] * noisy_sz).sum())
        part = float((np.minimum(s_vals, tau_contrib)[:, None] * noisy_sz).sum())
        scale = full / part if part > 0 and full > 0 else 1.0
    if latent:
        vec = np.concatenate(latent)
        m = len(latent)
        noisy, sigma = budget.gaussian(
            vec, rho=scales.rho_latent * m, sensitivity=scales.delta_latent * float(np.sqrt(m)),
            label=f"Alg. 1 M3 {m} latent marginals ({iteration})", source=src + " M3",
            integer=False)
        for piece in np.split(noisy, np.cumsum([len(x) for x in latent])[:-1]):
            out.append((piece * scale, sigma * scale))
    return p_z, p_size, out


def pooled_group_sizes(p_size: np.ndarray, p_z: np.ndarray, spec: LatentSpec, size_log: list,
                       n_children: float | None = None, iters: int = 200) -> np.ndarray:
    """``p_size(s | z)`` re-fitted to the group-size histogram pooled over every EM iteration
    (relviz's post-processing; no release).

    Every iteration's M2 release ``cnt(s, z)`` sums over ``z`` to the same vector, the number of
    groups of each size (each group's assignment weights sum to 1, soft or hard), so the ``T +
    T_C`` noisy sums are independent measurements of it: their mean has ``1/√(T + T_C)`` the noise
    of the last one, which alone sets the paper's ``p_size`` (Cai, Xiao & Cormode, SIGMOD 2023,
    §4.2 M2). The mean is projected like M2 (number of groups; ñ as first moment), then the
    binned joint ``p(bin, z) = p(bin | z)·p_Z(z)`` is scaled by iterative proportional fitting to
    that size marginal and to ``p_Z``, and spread uniformly within each public bin, as M2 does.

    Args:
        p_size: ``(|𝒮|, K)`` the last M2's ``p(s | z)`` (columns sum to 1).
        p_z: ``(K,)`` latent-state probabilities.
        size_log: ``[(noisy Σ_z cnt(bin, z), number of groups)]`` per iteration (``m_step``).
        n_children: Noisy number of grouped children (the size moment), or None.

    Returns:
        ``(|𝒮|, K)`` float64, columns summing to 1; ``p_size`` unchanged when ``size_log`` is empty.
    """
    from relviz.privacy.postprocessing import project_counts, project_counts_moment

    if not size_log:
        return p_size
    bin_of, width, mean = size_bins(spec)
    n_bins = len(width)
    hist = np.mean([h for h, _ in size_log], axis=0)
    total = float(np.mean([t for _, t in size_log]))
    hist = project_counts_moment(hist, total, mean, float(n_children)) if n_children is not None \
        else project_counts(hist, total)
    if hist.sum() <= 0:
        return p_size
    target = hist / hist.sum()
    joint = np.zeros((n_bins, spec.K))
    np.add.at(joint, bin_of, p_size)
    pz = np.maximum(np.asarray(p_z, dtype=np.float64), 0.0)
    pz = pz / pz.sum() if pz.sum() > 0 else np.full(spec.K, 1.0 / spec.K)
    joint = fit_margins(joint * pz[None, :] + 1e-12 * (target[:, None] > 0), target, pz, iters)
    col = joint.sum(axis=0)
    cond = np.divide(joint, col[None, :], out=np.zeros_like(joint), where=col[None, :] > 0)
    cond[:, col <= 0] = target[:, None]  # a state with no mass: the pooled marginal
    return cond[bin_of] / width[bin_of][:, None]
