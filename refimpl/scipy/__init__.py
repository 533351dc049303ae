"""``refimpl.scipy``: the parts of ``jax.scipy`` refimpl provides."""
