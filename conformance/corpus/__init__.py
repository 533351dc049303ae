"""The conformance corpus: every family module contributes ``cases()``.

Adding a family: write ``conformance/corpus/<family>.py`` with a ``cases()``
generator and list it in ``FAMILIES``. Case names are ``<group>/<detail>``;
they must be unique (checked here).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from conformance.case import Case

FAMILIES: Sequence[str] = (
    "elementwise",
    "numpy_ufuncs",
    "promotion",
    "jit_cache",
    "jit_paths",
    "errors",
    "structural",
    "gather_scatter",
    "reductions",
    "linalg",
    "numpy_api",
    "donation",
    "control_flow",
    "transform_paths",
    "transform_edge_paths",
    "jit_edge_paths",
    "api_paths",
    "masking",
    "masking_regions",
    "masking_paths",
    "ad_primitives",
    "ad",
    "ad_paths",
    "vmap",
    "vmap_axes",
    "vmap_paths",
    "rule_edges",
    "reliability",
    "random",
    "random_distributions",
    "pmap",
    "pmap_paths",
    "sharding",
    "numpy_surface",
    "numpy_polynomials_histograms",
    "ref",
    "ref_traces",
    "ref_compose",
    "ref_escape",
    "memory_ad",
    "residuals",
    "aot",
    "top_level",
    "lax_surface",
    "lax_solvers_and_approx",
    "special",
    "special_integrals",
    "scipy_stats",
    "host_callbacks",
    "planted",
    "primitive_paths",
    "debug_callback_paths",
    "ref_state_paths",
    "prng_paths",
    "key_array_paths",
    "barrier_paths",
    "scatter_sort_paths",
    "sharded_paths",
    "special_edge_paths",
    "windowed_paths",
    "fft_paths",
    "ref_update_paths",
    "mask_rule_paths",
    "gather_scatter_paths",
    "collective_paths",
    "elementwise_paths",
    "complex_parts_paths",
    "int4_paths",
    "float8_paths",
    "reduction_paths",
    "partial_tangent_paths",
    "structural_paths",
    "indexing_paths",
    "linalg_paths",
    "decomposition_paths",
    "special_callback_paths",
    "along_axis_paths",
    "control_flow_more_paths",
    "control_flow_parity_paths",
    "platform_paths",
    "custom_api_paths",
    "numpy_construct_paths",
    "public_name_paths",
    "numpy_selection_paths",
    "numpy_grad_paths",
    "numpy_conversion_paths",
    "x64_dtype_paths",
    "internal_helpers_paths",
)


def all_cases() -> list[Case]:
    """Every case of every family, in a stable order."""
    cases: list[Case] = []
    seen: set[str] = set()
    for family in FAMILIES:
        module = importlib.import_module(f"conformance.corpus.{family}")
        for case in module.cases():
            if case.name in seen:
                raise ValueError(f"duplicate conformance case name {case.name!r}")
            seen.add(case.name)
            cases.append(case)
    return cases
