"""Masking: shape-polymorphic functions run on padded arrays.

``shape_spec`` parses the shape specs and does the dimension arithmetic (the
primitives use its ``Dim``); ``transform`` is the transformation itself
(``refimpl.mask``). This package imports neither, so that importing
``shape_spec`` from a primitive module does not import the transformation.
"""
