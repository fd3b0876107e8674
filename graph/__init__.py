"""Graph build: readers, text processing, artifact, stores. Knows nothing of menus or training."""
