"""A thin adapter over Private-PGM (``mbi``) for PrivLava's latent-variable models.

PrivLava (Cai, Xiao & Cormode, "PrivLava: Synthesizing Relational Data with Foreign Keys under
Differential Privacy", SIGMOD 2023) fits its tuple model ``p_θ(t, z)`` (§4.1, Eq. 1) with the
gradient-based estimator of Private-PGM extended to latent marginals (§4.2, App. A): latent
marginals are treated like observed ones once their noisy counts exist. ``mbi`` does the fit
(mirror descent, warm-started, with the noisy total); this module adds what ``mbi`` does not
offer and PrivLava needs, which is why it is relviz's own code:

* :func:`clique_potentials` — the fitted log-potentials ``θ_C`` as numpy arrays in a fixed axis
  order, for the E-step scoring (PrivLava §4.2, the E-step) and the latent posteriors of public tuples (PrivLava §5.3);
* :func:`conditional_sample` — exact forward sampling from ``p_θ(· | evidence)`` with the
  evidence at the root of the junction tree (PrivLava §4.5, "junction tree representation"): every
  junction-tree clique is visited breadth-first from a clique holding the evidence, and each new
  attribute is drawn from its conditional given the attributes already drawn in that clique;
* :func:`sample_categorical` — vectorised inverse-CDF draws, one distribution per row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from relviz.mbi_runtime import import_mbi

__all__ = ["mbi", "fit_model", "clique_potentials", "model_marginal", "conditional_sample",
           "sample_categorical", "Calibrated", "calibrated"]


def mbi():  # noqa: ANN201
    """Import ``mbi`` with float64 JAX (``relviz.mbi_runtime.import_mbi``)."""
    return import_mbi()


def fit_model(domain: Mapping[str, int], measurements: Sequence[tuple[tuple[str, ...], np.ndarray, float]],
              total: float, *, warm=None, iters: int = 500, callback=None):  # noqa: ANN001, ANN201
    """Mirror descent on the PGM loss ``Σ_M ‖ñ·μ_θ(S_M) − ŷ_M‖² / σ_M²`` (PrivLava §4.2 and App. A; docs/methods/privlava.md §2).

    Args:
        domain: ``{attribute: size}`` in model order (latent attributes included).
        measurements: ``(attributes, noisy counts (flat, C order over those attributes), σ)``.
        total: The noisy total ``ñ`` (never the true count, docs/methods/privlava.md §2).
        warm: A previous model (its potentials are expanded to new cliques, new cells start at 0).
        iters: Mirror-descent iterations.

    Returns:
        ``mbi.MarkovRandomField``.
    """
    m = mbi()
    dom = m.Domain(tuple(domain), tuple(int(v) for v in domain.values()))
    meas = [m.LinearMeasurement(np.asarray(y, dtype=np.float64), tuple(attrs), stddev=float(sigma))
            for attrs, y, sigma in measurements]
    return m.estimation.MirrorDescent().estimate(dom, meas, known_total=float(max(total, 1.0)),
                                                 iters=int(iters), warm_start=warm,
                                                 callback_fn=callback)


def clique_potentials(model) -> list[tuple[tuple[str, ...], np.ndarray]]:  # noqa: ANN001
    """``[(attributes, θ_C)]`` of the fitted model, each array with axes in ``attributes`` order."""
    out = []
    for cl in model.potentials.cliques:
        f = model.potentials[cl]
        out.append((tuple(f.domain.attributes), np.asarray(f.values, dtype=np.float64)))
    return out


def _broadcast(vals: np.ndarray, attrs: Sequence[str], node: Sequence[str]) -> np.ndarray:
    """``vals`` (axes ``attrs``) reshaped to broadcast against an array with axes ``node``."""
    present = [a for a in node if a in attrs]
    v = np.transpose(vals, [list(attrs).index(a) for a in present])
    shape = [v.shape[present.index(a)] if a in attrs else 1 for a in node]
    return v.reshape(shape)


def _logsumexp(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    if not axes:
        return x
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return np.squeeze(out, axis=axes)


class Calibrated:
    """Clique marginals of a fitted model on its junction tree, by sum-product in log space.

    numpy, not ``mbi``'s JAX oracles: PrivLava asks for marginals of many models whose shapes
    change every selection round, and each new shape would cost a JAX compilation.

    Attributes:
        tree: The junction tree (``networkx`` graph of attribute tuples).
        beliefs: ``{clique: probabilities}`` (axes in clique order, each sums to 1).
    """

    def __init__(self, model) -> None:  # noqa: ANN001
        import networkx as nx

        m = mbi()
        self.domain = dict(zip(model.domain.attributes, model.domain.shape))
        tree, _ = m.junction_tree.make_junction_tree(model.domain, [tuple(c) for c in model.cliques])
        self.tree = tree
        nodes = [tuple(n) for n in tree.nodes]
        logpot = {n: np.zeros(tuple(self.domain[a] for a in n)) for n in nodes}
        for attrs, vals in clique_potentials(model):
            node = min((n for n in nodes if set(attrs) <= set(n)), key=len)
            logpot[node] = logpot[node] + _broadcast(vals, attrs, node)
        root = nodes[0]
        parent = {root: None}
        order = [root]
        for u, v in nx.bfs_edges(tree, root):
            parent[v] = u
            order.append(v)
        up: dict[tuple, np.ndarray] = {}  # message child → parent, axes = separator in child order
        acc = {n: logpot[n].copy() for n in nodes}
        for n in reversed(order[1:]):
            p = parent[n]
            sep = [a for a in n if a in p]
            msg = _logsumexp(acc[n], tuple(i for i, a in enumerate(n) if a not in sep))
            up[n] = msg
            acc[p] = acc[p] + _broadcast(msg, sep, p)
        belief = {root: acc[root]}
        for n in order[1:]:
            p = parent[n]
            sep = [a for a in n if a in p]
            sep_p = [a for a in p if a in sep]
            down = _logsumexp(belief[p], tuple(i for i, a in enumerate(p) if a not in sep))
            down = down - _broadcast(up[n], sep, sep_p)
            belief[n] = acc[n] + _broadcast(down, sep_p, n)
        self.beliefs = {}
        for n, b in belief.items():
            b = np.exp(b - b.max())
            self.beliefs[n] = b / b.sum()

    def marginal(self, attrs: Sequence[str]) -> np.ndarray | None:
        """Probabilities on ``attrs`` (axes in ``attrs`` order), or None when no clique holds them."""
        nodes = [n for n in self.beliefs if set(attrs) <= set(n)]
        if not nodes:
            return None
        n = min(nodes, key=len)
        b = self.beliefs[n]
        out = b.sum(axis=tuple(i for i, a in enumerate(n) if a not in attrs))
        present = [a for a in n if a in attrs]
        return np.transpose(out, [present.index(a) for a in attrs])


_CACHE: dict[int, tuple[object, Calibrated]] = {}


def calibrated(model) -> Calibrated:  # noqa: ANN001
    """The (cached) :class:`Calibrated` view of ``model``."""
    hit = _CACHE.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    cal = Calibrated(model)
    if len(_CACHE) > 8:
        _CACHE.clear()
    _CACHE[id(model)] = (model, cal)
    return cal


def model_marginal(model, attrs: Sequence[str]) -> np.ndarray:  # noqa: ANN001
    """Probabilities of the model on ``attrs`` (array with axes in ``attrs`` order, sums to 1);
    from the junction-tree beliefs when one clique holds ``attrs``, else ``mbi``'s variable
    elimination."""
    vals = calibrated(model).marginal(tuple(attrs))
    if vals is None:
        f = model.project(tuple(attrs))
        vals = np.asarray(f.transpose(tuple(attrs)).values, dtype=np.float64)
    vals = np.clip(vals, 0.0, None)
    s = vals.sum()
    return vals / s if s > 0 else np.full(vals.shape, 1.0 / vals.size)


def sample_categorical(probs: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per entry of ``rows`` from the distribution ``probs[rows[i]]``.

    Args:
        probs: ``(n_dists, size)`` non-negative weights (a zero row is read as uniform).
        rows: ``(n,)`` int row of ``probs`` per draw.

    Returns:
        ``(n,)`` int64 codes. Vectorised: one ``searchsorted`` on the rows' CDFs offset by their
        row number.
    """
    probs = np.asarray(probs, dtype=np.float64)
    n_d, size = probs.shape
    s = probs.sum(axis=1, keepdims=True)
    p = np.where(s > 0, probs / np.where(s > 0, s, 1.0), 1.0 / size)
    cdf = np.cumsum(p, axis=1)
    cdf[:, -1] = 1.0
    cdf = np.minimum(cdf, 1.0) + np.arange(n_d)[:, None]
    u = rng.random(len(rows)) * (1 - 1e-12) + rows
    idx = np.searchsorted(cdf.ravel(), u, side="right")
    out = idx - rows.astype(np.int64) * size
    return np.clip(out, 0, size - 1).astype(np.int64)


def conditional_sample(model, evidence: Mapping[str, np.ndarray], rng: np.random.Generator,
                       attrs: Sequence[str] | None = None) -> dict[str, np.ndarray]:  # noqa: ANN001
    """Draw the other attributes of ``n`` rows from ``p_θ(· | evidence)`` (PrivLava §4.5).

    Args:
        model: A fitted ``mbi.MarkovRandomField``.
        evidence: ``{attribute: (n,) codes}``; all evidence attributes must lie in one
            junction-tree clique (true for PrivLava's latent pair, which is a measured clique).
        attrs: Attributes to return (default: every model attribute not in the evidence).

    Returns:
        ``{attribute: (n,) int64 codes}``.

    Raises:
        ValueError: the evidence attributes are not in one junction-tree clique.
    """
    cal = calibrated(model)
    jt = cal.tree
    ev = {a: np.asarray(v, dtype=np.int64) for a, v in evidence.items()}
    n = len(next(iter(ev.values()))) if ev else 0
    roots = [c for c in jt.nodes if set(ev) <= set(c)]
    if ev and not roots:
        raise ValueError(f"evidence {sorted(ev)} is not inside one junction-tree clique")
    root = max(roots, key=len) if ev else next(iter(jt.nodes))
    import networkx as nx

    dom = cal.domain
    drawn: dict[str, np.ndarray] = dict(ev)
    order = [root] + [v for _, v in nx.bfs_edges(jt, root)]
    for clique in order:
        clique = tuple(clique)
        new = [a for a in clique if a not in drawn]
        if not new:
            continue
        joint = cal.beliefs[clique]
        for a in new:
            cond = [b for b in clique if b in drawn]
            keep = cond + [a]
            axes = tuple(i for i, b in enumerate(clique) if b not in keep)
            marg = joint.sum(axis=axes) if axes else joint
            present = [b for b in clique if b in keep]
            marg = np.moveaxis(marg, [present.index(b) for b in keep], list(range(len(keep))))
            table = marg.reshape(-1, dom[a])
            if cond:
                flat = np.ravel_multi_index(tuple(drawn[b] for b in cond),
                                            tuple(dom[b] for b in cond))
            else:
                flat = np.zeros(n if ev else 0, dtype=np.int64)
            drawn[a] = sample_categorical(table, flat, rng)
    want = list(attrs) if attrs is not None else [a for a in model.domain.attributes if a not in ev]
    return {a: drawn[a] for a in want}
