"""NumPy implementations: the CPU reference and the no-GPU default backend."""
