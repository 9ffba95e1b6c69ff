"""What every family shares: array interop (``arrays``), device choice (``device``), the
variant registry and dispatch (``registry``), errors (``errors``), the NVRTC loader
(``loader``) and the ``out=`` check (``outputs``). Nothing here imports a family."""
