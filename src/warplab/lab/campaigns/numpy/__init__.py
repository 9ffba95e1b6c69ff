"""The numpy campaign: warplab's public calls on host input against NumPy's own equivalent,
timed in the same run."""
