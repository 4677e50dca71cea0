"""A deliberately plain DelTA reference: Python loops over tokens in float64, written line by line from the paper
(arXiv 2605.21467, Sec. 3.2 and App. F–H; the variants of Tables 2, 3 and 11; restated in `nbs/index.ipynb`),
sharing no code with `delta_repro.coefficients`. The library's step-by-step in-memory estimator and its chunked,
streaming engine are both tested against it."""
import math

import torch


def _sig(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def reference_delta(proxies, advantages, mask, K=1, lam_min=0.8, lam_max=1.2, temperature="adaptive",
                    assignment="soft", contrast="two-sided", range_map=True, normalize=True, eps=1e-8):
    B, T, d = proxies.shape
    P = proxies.double()
    adv = advantages.double()
    if adv.ndim == 1:
        adv = adv[:, None].expand(B, T)
    toks = [(b, t) for b in range(B) for t in range(T) if mask[b, t]]
    side = {bt: (0 if adv[bt] > 0 else 1 if adv[bt] < 0 else None) for bt in toks}
    vec = {bt: P[bt[0], bt[1]] for bt in toks}
    w = {bt: abs(float(adv[bt])) for bt in toks}

    def centroid(s, alpha):
        num = torch.zeros(d, dtype=torch.float64)
        den = 0.0
        for bt in toks:
            if side[bt] == s:
                num += w[bt] * alpha[bt] * vec[bt]
                den += w[bt] * alpha[bt]
        return num / max(den, eps)

    def sqdist(a, b):
        return float(((a - b) ** 2).sum())

    def margins(mu):
        out = {}
        for bt in toks:
            s = side[bt]
            if s is None:
                continue
            v = vec[bt]
            if contrast == "within-side":
                out[bt] = -sqdist(v, mu[s])
            elif s == 0:
                out[bt] = sqdist(v, mu[1]) - sqdist(v, mu[0])
            else:
                out[bt] = sqdist(v, mu[0]) - sqdist(v, mu[1])
        return out

    def side_std(delta):
        g = []
        for s in (0, 1):
            xs = [delta[bt] for bt in delta if side[bt] == s]
            if xs:
                m = sum(xs) / len(xs)
                var = sum((x - m) ** 2 for x in xs) / len(xs)
            else:
                var = 0.0
            g.append(math.sqrt(max(var, eps)))
        return g

    def assign(delta, gamma):
        if assignment == "hard":
            return {bt: (1.0 if delta[bt] > 0 else 0.0) for bt in delta}
        return {bt: _sig(delta[bt] / gamma[side[bt]]) for bt in delta}

    ones = {bt: 1.0 for bt in toks}
    mu = [centroid(0, ones), centroid(1, ones)]
    mu0 = [m.clone() for m in mu]
    delta = margins(mu)
    if assignment == "hard":
        gamma = [0.0, 0.0]
    elif temperature == "adaptive":
        gamma = side_std(delta)
    elif temperature == "distance":
        gamma = [max(sqdist(mu[0], mu[1]), eps)] * 2
    else:
        gamma = [float(temperature)] * 2
    for _ in range(K):
        alpha = assign(delta, gamma)
        alpha_full = {bt: alpha.get(bt, 0.0) for bt in toks}
        mu = [centroid(0, alpha_full), centroid(1, alpha_full)]
        new_delta = margins(mu)
        if assignment == "soft" and temperature == "adaptive":
            gamma = side_std(delta)  # lagged: std of the margins under the previous centroids
        delta = new_delta
    alpha = assign(delta, gamma)

    lam = torch.zeros(B, T, dtype=torch.float64)
    scores = torch.zeros(B, T, dtype=torch.float64)
    marg = torch.zeros(B, T, dtype=torch.float64)
    for bt in toks:
        a = alpha.get(bt, 0.0)
        scores[bt] = a
        marg[bt] = delta.get(bt, 0.0)
        lam[bt] = lam_min + (lam_max - lam_min) * a if range_map else a
    N, Z = len(toks), float(lam.sum())
    if not normalize:
        weights = lam.clone()
    elif Z > eps:
        weights = lam * N / Z
    else:
        weights = mask.double()
    return dict(weights=weights, lam=lam, scores=scores, margins=marg, gamma=torch.tensor(gamma),
                centroids=torch.stack(mu), initial_centroids=torch.stack(mu0))
