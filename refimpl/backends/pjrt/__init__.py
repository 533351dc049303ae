"""The PJRT backend: lowering to StableHLO, the native runtime, the C++ fast path.

Importing this package imports nothing else: ``backend`` (the executor),
``runtime`` (the native extension and plugin discovery), ``lowering``,
``fast_path`` and ``_native_probe`` (cffi) are loaded only when used.
``python -m refimpl.backends.pjrt doctor`` inspects a plugin with cffi alone.
"""
