"""Program transformations: jit (signature cache), scan unrolling, masking."""

from refimpl.transforms.scan import unroll_scans

__all__ = ["unroll_scans"]
