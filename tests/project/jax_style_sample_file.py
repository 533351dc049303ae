"""A small test file written the way JAX's own test files are (``jtu.JaxTestCase``,
absl ``parameterized``, ``jax._src`` imports), for tools/run_jax_tests.py's test.

Our own code, not JAX's. Named so that pytest does not collect it: the runner
runs it, on JAX and on refimpl. Each method's expected outcome is in its name.
"""

import functools

import jax
import jax.no_such_public_module
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest, parameterized
from jax._src import api as src_api
from jax._src import core, dtypes
from jax._src import test_util as jtu
from jax._src.errors import UnexpectedTracerError
from jax._src.internal_test_util import lax_test_util
from jax._src.interpreters import mlir
from jax._src.lax import lax as lax_internal
from jax._src.lib import no_such_harness_name  # noqa: F401

# a module-level registration with a JAX internal neither has: does nothing
# while the file loads
mlir.no_such_registration_function("sample")

config = jax.config


class SampleTest(jtu.JaxTestCase):
    @parameterized.parameters([1, 2])
    def test_vmap_sum_passes(self, scale):
        out = jax.vmap(lambda x: jnp.sum(x) * scale)(jnp.ones((3, 4)))
        self.assertAllClose(out, 4.0 * scale * jnp.ones(3))

    def test_planted_failure_fails(self):
        self.assertAllClose(jnp.sin(0.0), 1.0)

    def test_raises_passes(self):
        with self.assertRaises(TypeError):
            jax.jit(lambda x: x)(object())

    def test_array_module_is_refimpl(self):
        # passes on refimpl only: the runner really ran refimpl's jax.numpy
        self.assertIn("refimpl", type(jnp.zeros(1)).__module__)

    def test_internal_name_is_missing(self):
        core.this_name_is_in_neither_jax_nor_refimpl(1)

    def test_public_module_is_missing(self):
        jax.no_such_public_module.f(1)

    def test_check_grads_passes(self):
        jtu.check_grads(jnp.sin, (0.5,), order=2, modes=["fwd", "rev"])

    def test_test_helper_is_refimpls(self):
        # passes on refimpl only: JAX's test helper module slices with the
        # lax its own import names, refimpl's
        (row,) = lax_test_util.args_slicer([jnp.ones((2, 3))], [0])(1)
        self.assertIn("refimpl", type(row).__module__)

    @jtu.no_such_harness_helper
    def test_harness_helper_is_missing(self):
        pass

    def test_internal_error_class_passes(self):
        # jax._src.errors names refimpl's exception classes
        self.assertTrue(issubclass(UnexpectedTracerError, Exception))

    def test_promote_like_jnp_passes(self):
        # jtu.promote_like_jnp promotes refimpl's arrays as jnp does
        add = jtu.promote_like_jnp(np.add, inexact=True)
        out = add(jnp.ones(2, jnp.int8), 2)
        self.assertEqual(out.dtype, np.float32)

    def test_dtype_tables_and_weak_conversion_pass(self):
        # JAX's dtype tables; lax_internal._convert_element_type's weak flag
        self.assertEqual(dtypes.to_inexact_dtype(np.int16), np.float32)
        self.assertEqual(dtypes.default_int_dtype(), np.int32)
        self.assertEqual(dtypes.int_, np.int64)  # the table's unconverted scalar type
        weak = lax_internal._convert_element_type(jnp.ones(2), weak_type=True)
        self.assertTrue(dtypes.is_weakly_typed(weak))

    def test_dot_precision_helper_passes(self):
        # jtu.assert_dot_precision reads the jaxpr of the library under test
        highest = jax.lax.Precision.HIGHEST
        dot = functools.partial(jnp.dot, precision=highest)
        jtu.assert_dot_precision(highest, dot, np.ones(2), np.ones(2))

    def test_moved_internal_name_passes(self):
        # JAX 0.10.2 has api.pmap in jax._src.pmap
        out = src_api.pmap(lambda x: x * 2)(jnp.ones(jax.device_count()))
        self.assertAllClose(out, 2 * jnp.ones(jax.device_count()))


class CacheClearTest(jtu.JaxTestCase):
    def setUp(self):
        super().setUp()
        core.no_such_internal_cache.cache_clear()  # as lax_control_flow_test's setUp

    def test_after_cache_clear_passes(self):
        self.assertEqual(jnp.add(1, 2), 3)


@jtu.with_config(jax_enable_x64=True)
class X64Test(jtu.JaxTestCase):
    def test_x64_mirrored_passes(self):
        self.assertEqual(jnp.zeros(1).dtype, jnp.float64)


if __name__ == "__main__":
    absltest.main(testLoader=jtu.JaxTestLoader())
