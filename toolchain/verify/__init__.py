"""`devkit verify`, `test-ops`, `check-kernels`: a fresh environment with the reference runtime and the checks run in it."""
