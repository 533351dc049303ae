"""Program transformations: jit (signature cache), scan unrolling, masking."""
