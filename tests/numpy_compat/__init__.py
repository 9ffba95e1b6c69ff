"""NumPy's own tests run against warplab (a package, so that its conftest keeps its own name)."""
