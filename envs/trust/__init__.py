"""Trust probes: evidence that an environment's resets are clean, its sessions isolated and its rewards honest."""
