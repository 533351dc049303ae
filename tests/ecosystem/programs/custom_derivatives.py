"""Custom derivative rules with jax.custom_jvp and jax.custom_vjp."""

from functools import partial

import jax
import jax.numpy as jnp
from jax.test_util import check_grads


def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


print(jax.grad(log1pexp)(100.0))  # nan: the naive derivative overflows


@jax.custom_jvp
def log1pexp_stable(x):
    return jnp.log(1.0 + jnp.exp(x))


@log1pexp_stable.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    ans = log1pexp_stable(x)
    return ans, x_dot * (1 - 1 / (1 + jnp.exp(x)))


print(jax.grad(log1pexp_stable)(100.0), jax.jit(jax.grad(log1pexp_stable))(3.0))
print(jax.vmap(jax.jit(jax.grad(log1pexp_stable)))(jnp.arange(3.0)))


@jax.custom_jvp
def f(x):
    if x > 0:  # Python control flow on the value: fine outside jit
        return jnp.sin(x)
    return jnp.cos(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return f(x), (jnp.cos(x) if x > 0 else -jnp.sin(x)) * t


print(jax.grad(f)(1.0), jax.grad(f)(-1.0), jax.jvp(f, (0.5,), (2.0,)))


@jax.custom_jvp
def g(x, y):
    return jnp.sin(x) * y


g.defjvps(
    lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
    lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot,
)
print(jax.grad(g, argnums=(0, 1))(2.0, 3.0))


@jax.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
print(jax.grad(lambda x: clip_gradient(-0.75, 0.75, jnp.sin(x) * 3.0))(0.0))
print(jax.vmap(jax.grad(lambda x: clip_gradient(-0.5, 0.5, x**2)))(jnp.arange(-2.0, 3.0)))


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_guess):
    def cond_fun(carry):
        x_prev, x = carry
        return jnp.abs(x_prev - x) > 1e-6

    def body_fun(carry):
        _, x = carry
        return x, f(a, x)

    _, x_star = jax.lax.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
    return x_star


def fixed_point_fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)


def fixed_point_rev(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = jax.vjp(lambda a: f(a, x_star), a)
    (a_bar,) = vjp_a(fixed_point(partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
    return a_bar, jnp.zeros_like(x_star)


def rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = jax.vjp(lambda x: f(a, x), x_star)
    return x_star_bar + vjp_x(u)[0]


fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)


def newton_sqrt(a):
    def update(a, x):
        return 0.5 * (x + a / x)

    return fixed_point(update, a, a)


print(newton_sqrt(2.0), jax.grad(newton_sqrt)(2.0), jax.grad(jax.grad(jnp.sqrt))(2.0))
check_grads(log1pexp_stable, (2.0,), order=1, modes=["fwd", "rev"])
check_grads(lambda x: jnp.tanh(x) * x, (0.7,), order=2)
print("check_grads passed")


@jax.custom_gradient
def scaled_identity(x):
    return x, lambda g: (3.0 * g,)


print(jax.grad(lambda x: scaled_identity(x) ** 2)(2.0))
