"""The batch run: skip what is done, process the rest, write and index each.

The files are processed by an engine that yields one :class:`Outcome` per
file as it finishes: :func:`local_outcomes` (one Pipeline in this process)
or saywho.ray's (actors on a Ray cluster). Everything after that, the
transcript files, the index line and the progress, is this module's, so a
batch writes the same files whichever engine ran it.

Progress, run locally, is what ``saywho`` shows for several files: each
file's own line (saywho.api.stage_progress.ProgressBar: stage, elapsed, ETA) and,
under it after each file, the batch's overall line. On Ray the files run
elsewhere, so only the overall line is drawn.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..._internal.native import _core
from ...api.pipeline import Pipeline
from ...api.stage_progress import ProgressBar, run_stages
from ...cli.total_progress import BatchProgress, estimated_duration
from ...formats.output_names import output_dir
from .index import Index, IndexRecord
from .inputs import Item
from .outcome import Outcome, describe

# the file's own progress line: (its place among the files, the item) -> a bar
FileProgress = Callable[[int, Item], ProgressBar]


def process_item(
    pipeline: Pipeline, item: Item, process_options: dict, bar: ProgressBar | None = None
) -> Outcome:
    """One file through ``pipeline.process``; any failure of the file (not
    of the run: Ctrl-C goes through) becomes the outcome's error. ``bar``
    hears every stage and is closed when the file ends, however it ends."""
    start = time.perf_counter()
    try:
        result = pipeline.process(
            item.path, progress=bar, **{**process_options, **item.overrides()}
        )
    except Exception as e:  # a corrupt or huge file must not stop the batch
        return Outcome(item, None, describe(e), time.perf_counter() - start)
    finally:
        if bar is not None:
            bar.close()
    return Outcome(item, result, None, time.perf_counter() - start)


def local_outcomes(
    items: list[Item],
    pipeline_options: dict,
    process_options: dict,
    file_progress: FileProgress | None = None,
) -> Iterator[Outcome]:
    """One Pipeline, loaded once, over every item in turn."""
    with Pipeline(**pipeline_options) as pipeline:
        for place, item in enumerate(items):
            bar = file_progress(place, item) if file_progress is not None else None
            yield process_item(pipeline, item, process_options, bar)


def file_progress_lines(items: list[Item], process_options: dict, stream: TextIO) -> FileProgress:
    """Each file's own line, labelled as ``saywho`` labels several files
    (``[2/5] name``), over the stages these options run."""
    stages = run_stages(
        process_options.get("diarize", True), bool(process_options.get("known_speakers"))
    )

    def bar(place: int, item: Item) -> ProgressBar:
        label = f"[{place + 1}/{len(items)}] {os.path.basename(item.path)}"
        return ProgressBar(label, stream, stages=stages)

    return bar


def record_outcome(outcome: Outcome, out: Path, write_options: dict) -> IndexRecord:
    """Writes a result's transcript files (each atomically) and returns the
    file's index line; a result that cannot be written is an error line."""
    path = outcome.item.path
    if outcome.result is None:
        return IndexRecord(path, "error", outcome.error, seconds=round(outcome.seconds, 3))
    result = outcome.result
    try:
        written = result.write(output_dir(out, path), **write_options)
    except Exception as e:
        return IndexRecord(path, "error", describe(e), seconds=round(outcome.seconds, 3))
    seconds = outcome.seconds
    return IndexRecord(
        path,
        "ok",
        duration=result.duration,
        language=result.language,
        speakers=list(result.speakers),
        seconds=round(seconds, 3),
        x_realtime=round(result.duration / seconds, 2) if seconds > 0 else None,
        outputs=[os.path.relpath(p, out) for p in written],
    )


@dataclass
class BatchSummary:
    files: int  # every input
    skipped: int  # done before (or failed before, without retry_failed)
    ok: int
    failed: int
    audio_seconds: float
    seconds: float
    interrupted: bool = False
    errors: int = 0  # inputs whose latest index line is an error, this run's or before


def select(items: list[Item], index: Index, retry_failed: bool) -> list[Item]:
    """The items still to run: not done, and not failed unless retried."""
    return [
        i
        for i in items
        if not index.is_done(i.path) and (retry_failed or not index.has_failed(i.path))
    ]


def run_batch(
    items: list[Item],
    out: str | os.PathLike,
    *,
    pipeline_options: dict,
    process_options: dict,
    write_options: dict | None = None,
    retry_failed: bool = False,
    ray_address: str | None = None,
    actors: int | None = None,
    progress: TextIO | None = sys.stderr,
) -> BatchSummary:
    """Runs a batch into ``out`` (see saywho.service.batch); returns its counts.

    ``write_options`` go to ``Result.write`` (formats, subtitle shape).
    ``ray_address`` (an address, or "auto" for the cluster this machine is
    part of, "local" to start one) runs it on Ray through saywho.ray with
    ``actors`` actors (default: from the cluster's resources). Ctrl-C
    (KeyboardInterrupt) stops after writing the index consistently and is
    reported in the summary's ``interrupted``.
    """
    out = Path(out)
    write_options = dict(write_options or {})
    start = time.perf_counter()
    if ray_address is not None:
        try:
            from ...ray import check_cluster, ray_outcomes
        except ImportError as e:
            raise _core.OptionError(f"--ray needs Ray: pip install 'saywho[ray]' ({e})") from None
        if ray_address not in ("auto", "local"):
            check_cluster(ray_address)  # before the index: a wrong address writes nothing
    with Index(out) as index:
        todo = select(items, index, retry_failed)
        local = ray_address is None
        estimates = {i.path: estimated_duration(i.path) for i in todo}
        # locally, each file's line is redrawn in place, so the overall line
        # is written once per file under it rather than redrawn too
        per_file = local and progress is not None
        bar = BatchProgress(estimates, progress, redraw=False if per_file else None)
        summary = BatchSummary(len(items), len(items) - len(todo), 0, 0, 0.0, 0.0)
        if local:
            lines = file_progress_lines(todo, process_options, progress) if per_file else None
            outcomes = local_outcomes(todo, pipeline_options, process_options, lines)
        else:
            outcomes = ray_outcomes(todo, pipeline_options, process_options, ray_address, actors)
        try:
            for outcome in outcomes:
                record = record_outcome(outcome, out, write_options)
                index.append(record)
                if record.status == "ok":
                    summary.ok += 1
                    summary.audio_seconds += record.duration or 0.0
                else:
                    summary.failed += 1
                bar.finished(record.path, record.duration, record.status)
        except KeyboardInterrupt:
            summary.interrupted = True
        finally:
            close = getattr(outcomes, "close", None)
            if close is not None:
                close()  # the engine lets go of its models or its cluster
            bar.close()
            index.compact([i.path for i in items])
            summary.errors = sum(index.has_failed(i.path) for i in items)
    summary.seconds = time.perf_counter() - start
    return summary
