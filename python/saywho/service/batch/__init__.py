"""saywho batch: many recordings, one index, a run that can stop and go on.

``saywho batch INPUT... -o OUT`` expands its inputs (files, folders, globs,
manifests: :mod:`.inputs`), skips every file the index says is done
(:mod:`.index`), processes the rest with one Pipeline per process
(:mod:`.runner`; on a Ray cluster through :mod:`saywho.ray`), writes each
file's transcripts atomically into its own folder under OUT and appends one
line per file to ``OUT/index.jsonl`` as it finishes. docs/batch.md has the
whole story.
"""

from .index import Index, IndexRecord
from .inputs import Item, expand_inputs
from .runner import run_batch

__all__ = ["Index", "IndexRecord", "Item", "expand_inputs", "run_batch"]
