"""Cross-implementation conformance testing: one corpus, every implementation.

A *case* is data plus a function written against an implementation-neutral
``Namespace`` (``ns.np_``, ``ns.lax_``, ``ns.jit``, ``ns.device_put``,
``ns.mask``, ...), with an expectation: a NumPy oracle, an expected error, or
"agree with the reference implementation". The same case runs on ``ref``
(refimpl's interpreter), ``pjrt`` (refimpl's PJRT path) and ``jax``; an
``Implementation`` subclass adds any other JAX-like system. Every difference
is reported; intended ones are listed in ``conformance.known``.

Command line: ``python -m conformance --help``. Python::

    import conformance
    suite = conformance.run(impls=["ref"], quick=True)
    print(conformance.summary_text(suite))

See conformance/README.md for the case format and a worked example of
adding an implementation.
"""

from conformance.api import load_case_file, run, select_cases
from conformance.case import (
    AGREE,
    Case,
    Domain,
    Oracle,
    Raw,
    fn_case,
    rng_for,
    sample,
    script_case,
)
from conformance.compare import Tolerance
from conformance.implementations import (
    Implementation,
    JaxImplementation,
    PjrtImplementation,
    RefImplementation,
    register,
)
from conformance.namespace import Namespace, Unsupported
from conformance.observe import ANY, ErrorObs, ExpectArray, Raises, Weak
from conformance.report import summary_text
from conformance.runner import Result, SuiteResult, run_cases

__all__ = [
    "AGREE",
    "ANY",
    "Case",
    "Domain",
    "ErrorObs",
    "ExpectArray",
    "Implementation",
    "JaxImplementation",
    "Namespace",
    "Oracle",
    "PjrtImplementation",
    "Raises",
    "Raw",
    "RefImplementation",
    "Result",
    "SuiteResult",
    "Tolerance",
    "Unsupported",
    "Weak",
    "fn_case",
    "load_case_file",
    "register",
    "rng_for",
    "run",
    "run_cases",
    "sample",
    "script_case",
    "select_cases",
    "summary_text",
]
