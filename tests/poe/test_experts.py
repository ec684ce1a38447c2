"""Each expert's gradient and curvature against finite differences; the assembled Hessian against
a dense autograd Hessian of the whole objective."""

import pytest
import torch

from orchestrator.poe import NegLogPosterior, Observations, PoEConfig, absolute_moments, expected_curvature, expert_derivatives, get_expert

EXPERTS = ["soft_bt", "beta:0.5,1.5", "ngaussian", "linear"]


@pytest.mark.parametrize("name", EXPERTS)
def test_expert_derivatives_match_finite_differences(name):
    expert = get_expert(name)
    gen = torch.Generator().manual_seed(0)
    d = torch.randn(50, generator=gen, dtype=torch.float64) * 2
    p = torch.rand(50, generator=gen, dtype=torch.float64)
    value, first, second = expert_derivatives(expert, d, p)
    h = 1e-5
    f = lambda x: expert.log_density(x, p)  # noqa: E731
    fd_first = (f(d + h) - f(d - h)) / (2 * h)
    fd_second = (f(d + h) - 2 * f(d) + f(d - h)) / h**2
    torch.testing.assert_close(value, f(d))
    torch.testing.assert_close(first, fd_first, atol=1e-7, rtol=1e-6)
    torch.testing.assert_close(second, fd_second, atol=1e-4, rtol=1e-4)


def test_soft_bt_matches_paper_formula():
    expert = get_expert("soft_bt")
    d = torch.tensor([-1.0, 0.3, 2.0], dtype=torch.float64)
    p = torch.tensor([0.2, 0.5, 0.9], dtype=torch.float64)
    expected = p * torch.log(torch.sigmoid(d)) + (1 - p) * torch.log(1 - torch.sigmoid(d))
    torch.testing.assert_close(expert.log_density(d, p), expected)
    # soft BT curvature is σ(d)σ(−d), whatever p
    torch.testing.assert_close(expected_curvature(expert, d), torch.sigmoid(d) * torch.sigmoid(-d))


def test_phi_gaussian_matches_eq2():
    expert = get_expert("ngaussian")
    d = torch.tensor([-0.7, 0.0, 1.1], dtype=torch.float64)
    p = torch.tensor([0.1, 0.5, 0.8], dtype=torch.float64)
    normal = torch.distributions.Normal(torch.tensor(0.0, dtype=torch.float64), 1.0)
    expected = normal.log_prob(d) + torch.distributions.Normal(p, 1.0).log_prob(normal.cdf(d))
    # equal up to a constant in d
    diff = expert.log_density(d, p) - expected
    torch.testing.assert_close(diff, diff[0].expand(3))


def test_unknown_expert_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown expert 'nope'"):
        get_expert("nope")
    with pytest.raises(ValueError, match="beta:<alpha>,<beta>"):
        get_expert("beta:x")


def _random_obs(n=6, k=25, absolute=True, seed=1):
    gen = torch.Generator().manual_seed(seed)
    first = torch.randint(0, n, (k,), generator=gen)
    second = (first + torch.randint(1, n, (k,), generator=gen)) % n
    prob = torch.rand(k, generator=gen, dtype=torch.float64)
    if absolute:
        items = torch.arange(n)
        mean = 3 + 4 * torch.rand(n, generator=gen, dtype=torch.float64)
        var = 0.2 + torch.rand(n, generator=gen, dtype=torch.float64)
        return Observations(n, first, second, prob, items, mean, var)
    return Observations(n, first, second, prob)


@pytest.mark.parametrize("name", EXPERTS)
@pytest.mark.parametrize("home", [False, True])
@pytest.mark.parametrize("absolute", [False, True])
def test_assembled_gradient_and_hessian_equal_dense_autograd(name, home, absolute):
    obs = _random_obs(absolute=absolute)
    objective = NegLogPosterior(obs, PoEConfig(expert=get_expert(name), home_advantage=home))
    gen = torch.Generator().manual_seed(7)
    theta = objective.initial() + 0.5 * torch.randn(objective.dim, generator=gen, dtype=torch.float64)
    value, grad, hess = objective.evaluate(theta)
    dense_grad = torch.autograd.functional.jacobian(objective.value, theta)
    dense_hess = torch.autograd.functional.hessian(objective.value, theta)
    torch.testing.assert_close(value, objective.value(theta))
    torch.testing.assert_close(grad, dense_grad)
    torch.testing.assert_close(hess, dense_hess)


def test_absolute_moments():
    probs = torch.tensor([[0.0, 0.5, 0.5, 0.0], [0.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    mean, var = absolute_moments(probs)
    torch.testing.assert_close(mean, torch.tensor([2.5, 3.0], dtype=torch.float64))
    # 0.25 for the first; the one-hot row is floored at the rounding variance 1/12
    torch.testing.assert_close(var, torch.tensor([0.25, 1 / 12], dtype=torch.float64))


@pytest.mark.parametrize("alpha, beta", [(0.0, 0.0), (0.5, 0.5), (2.0, 0.3)])
def test_closed_form_derivatives_equal_autograd(alpha, beta):
    """The σ-Beta experts' closed-form derivatives (the fast path of every posterior fit) are the
    autograd ones."""
    import dataclasses

    from orchestrator.poe.experts import expert_derivatives, sigma_beta

    expert = sigma_beta(alpha, beta)
    d = torch.linspace(-8, 8, 101, dtype=torch.float64)
    p = torch.rand(101, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    fast = expert_derivatives(expert, d, p)
    slow = expert_derivatives(dataclasses.replace(expert, derivatives=None), d, p)
    for a, b in zip(fast, slow):
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-12)
