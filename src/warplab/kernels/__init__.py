"""CUDA C++ sources (one ``.cu`` per family) and their NVRTC loader."""
