"""The reference backend: the reference array type and eager dispatch (NumPy)."""
