"""anonymize/: hierarchies, privacy models, the optimal lattice search, quality, transforms."""
