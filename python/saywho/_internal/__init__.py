"""What the rest stands on: the one loader of the C extension, devices,
memory figures, timing, the environment's one reader, the BLAS choice and
the base of every object that holds a Runtime. Not a public API."""
