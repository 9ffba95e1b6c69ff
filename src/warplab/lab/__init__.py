"""The measurement lab: what measures the library, beside it.

``warplab.lab`` holds the harness (``harness/``: events, phases, statistics, results JSON,
ceilings, compare), one campaign per family (``campaigns/<family>/``: what to time, the
comparators, the CLI subcommand), the report (``report/``) and the ``warplab`` command's
measuring subcommands (``cli.py``, ``commands.py``, ``console.py``). It needs the ``lab``
extra (``pip install 'warplab[lab]'``: rich and matplotlib). The library (``warplab``)
never imports it.
"""
