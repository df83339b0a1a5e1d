"""The command line (``saywho``, ``python -m saywho``): its options, shared
by ``saywho serve`` and ``saywho batch`` (service/), and the overall line of a
many-file run."""
