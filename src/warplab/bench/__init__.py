"""The measurement harness every family uses: timing, statistics, results JSON, data, ceilings,
comparators and the campaigns (sweeps)."""
