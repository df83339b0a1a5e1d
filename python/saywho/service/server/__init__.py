"""saywho's HTTP service: OpenAI's /v1/audio API, with speakers.

``saywho serve`` (pip install "saywho[server]") answers
``POST /v1/audio/transcriptions`` and ``/translations`` field for field as
OpenAI's API does, adds ``diarized_json`` speakers and words, and keeps long
jobs in SQLite on disk (docs/server.md). FastAPI and uvicorn are imported
only inside this package, never by ``import saywho``.
"""
