"""What every family shares: array interop (``arrays``), device choice (``device``), the
variant registry and dispatch (``registry``), errors (``errors``), the NVRTC loader
(``loader``), the ``out=`` check (``outputs``) and the small-call plan caches
(``fastpath``). Nothing here imports a family."""
