"""Speed goal (issue 2): one posterior update plus full selection.

N=1056 with ~20k comparisons ≤ 0.1 s; N=3000 ≤ 1 s; memory O(N²). Measured as a ratio against a
plain dense Newton baseline in the same run: the full Hessian by torch.autograd.functional.hessian
of the whole log-posterior, Newton from zero (no structure, no warm start).

The update being timed is what the loop does each round: a batch of 100 new comparisons arrives,
the Laplace posterior is refit warm-started from the previous one, and the next batch of 100 is
selected by probability of reordering over all N(N−1) pairs.

    python -m benchmarks.speed.speed_update_select [--sizes 1056 3000] [--comparisons 20000 40000]
"""

import resource
import time

import torch

from benchmarks import harness
from orchestrator.poe import NegLogPosterior, Observations, PoEConfig, fit_laplace, select_pairs


def make_obs(n, k, seed=0):
    gen = torch.Generator().manual_seed(seed)
    truth = torch.randn(n, generator=gen, dtype=torch.float64)
    first = torch.randint(0, n, (k,), generator=gen)
    second = (first + torch.randint(1, n, (k,), generator=gen)) % n
    logit = 2 * (truth[first] - truth[second]) + 0.5 * torch.randn(k, generator=gen, dtype=torch.float64)
    return Observations(n, first, second, torch.sigmoid(logit))


def dense_newton_baseline(obs, tol=1e-7):
    """Newton from zero with the dense autograd Hessian of the whole objective."""
    objective = NegLogPosterior(obs, PoEConfig())
    theta = objective.initial()
    for _ in range(100):
        grad = torch.autograd.functional.jacobian(objective.value, theta)
        if float(grad.abs().max()) < tol:
            break
        hess = torch.autograd.functional.hessian(objective.value, theta)
        theta = theta - torch.linalg.solve(hess, grad)
    cov = torch.linalg.inv(hess)
    return theta, cov


def timed(fn, repeats):
    best = float("inf")
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main():
    ap = harness.parser(__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1056, 3000])
    ap.add_argument("--comparisons", type=int, nargs="+", default=[20000, 40000])
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--baseline-max-n", type=int, default=1056, help="skip the (slow) dense baseline above this N")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    for n, k in zip(args.sizes, args.comparisons):
        obs = make_obs(n, k)
        prev_obs = Observations(n, obs.first[: -args.batch], obs.second[: -args.batch], obs.prob[: -args.batch])
        previous = fit_laplace(prev_obs)
        available = torch.ones(n, n, dtype=torch.bool)

        def update_and_select():
            post = fit_laplace(obs, warm_start=previous)
            pairs = select_pairs(post, "reorder", available, args.batch, generator=torch.Generator().manual_seed(0))
            return post, pairs

        t_fit, post = timed(lambda: fit_laplace(obs, warm_start=previous), 3)
        t_sel, _ = timed(lambda: select_pairs(post, "reorder", available, args.batch, generator=torch.Generator().manual_seed(0)), 3)
        t_div, _ = timed(lambda: select_pairs(post, "diverse", available, args.batch, generator=torch.Generator().manual_seed(0)), 1)
        t_total, (post, _) = timed(update_and_select, 3)
        line = (
            f"N={n} K={k}: update+select {t_total:.3f} s (fit {t_fit:.3f} s, {post.n_iter} Newton steps; "
            f"reorder top-{args.batch} {t_sel:.3f} s; diverse batch {t_div:.3f} s)"
        )
        if n <= args.baseline_max_n:
            t_base, (theta, cov) = timed(lambda: dense_newton_baseline(obs), 1)
            err = float((theta[:n] - post.mean).abs().max())
            line += f"; dense autograd Newton baseline {t_base:.3f} s → speed-up ×{t_base / t_total:.1f} (max |Δμ| {err:.1e})"
        print(line)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mib:.0f} MiB (an N×N float64 matrix at N={max(args.sizes)} is {max(args.sizes) ** 2 * 8 / 2**20:.0f} MiB)")


if __name__ == "__main__":
    harness.run(main, __file__)
