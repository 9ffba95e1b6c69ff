"""The measurement harness every family uses: timing, statistics, results JSON, data, ceilings,
the comparator providers' shape, and what every campaign shares (``campaign``). Each family's
own campaign lives in its folder (``families/<family>/bench.py``)."""
