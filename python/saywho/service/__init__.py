"""saywho as a service: the OpenAI-compatible server (server/) and many files
in one run (batch/; on a Ray cluster through saywho.ray)."""
