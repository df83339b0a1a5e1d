"""``saywho batch INPUT... -o OUT``: the command line of saywho.service.batch.

The processing options are the ``saywho`` command's own (saywho.cli.options);
the batch adds where the run goes (``-o``, required), ``--retry-failed``,
and ``--ray [ADDRESS]`` / ``--actors N`` for a Ray cluster. Exit status: 0
when every file is done, 1 when some are errors (see OUT/index.jsonl), 2
for usage errors, 130 after Ctrl-C or SIGTERM (the index is consistent;
run the same command again to go on).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys

from ..._internal.native import _core
from ...api.stage_progress import LineAwareHandler
from ...cli.options import (
    add_processing_options,
    check_processing_options,
    pipeline_kwargs,
    positive,
    process_kwargs,
    write_kwargs,
)
from .inputs import expand_inputs
from .runner import run_batch


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="saywho batch",
        description="Who said what, and when, for a whole corpus: an index of every file, "
        "a run that resumes where it stopped, optionally on a Ray cluster.",
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="audio or video files, folders (searched recursively), glob patterns, or "
        "manifests (.txt/.lst of paths; .csv/.jsonl with a path column and optional "
        "num_speakers, language)",
    )
    add_processing_options(p, "the output folder (required): one folder per input and index.jsonl")
    p.add_argument(
        "--retry-failed", action="store_true", help="run again the files the index lists as errors"
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help="run on a Ray cluster (pip install 'saywho[ray]'): its address, or none for the "
        "cluster this machine belongs to (RAY_ADDRESS, else a local one); without an address "
        "put it after the inputs, as it takes the next word",
    )
    p.add_argument(
        "--actors",
        type=positive,
        help="with --ray: this many saywho actors (default: one per GPU, else one per node)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    p.add_argument("-v", "--verbose", action="store_true", help="log memory checkpoints")
    return p


def _interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM (a scheduler's preemption, ``kill``) stops the run as Ctrl-C
    does: the file in progress is dropped and the index left consistent."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_processing_options(args, parser)
    if not args.output_dir:
        parser.error("-o/--output-dir is required")
    if args.actors and args.ray is None:
        parser.error("--actors needs --ray")
    handler = LineAwareHandler(sys.stderr)  # never glued onto the progress line
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
    options = pipeline_kwargs(args)
    try:
        items = expand_inputs(args.inputs)
        with _terminate_as_interrupt():
            summary = run_batch(
                items,
                args.output_dir,
                pipeline_options=options,
                process_options=process_kwargs(args),
                write_options=write_kwargs(args),
                retry_failed=args.retry_failed,
                ray_address=args.ray,
                actors=args.actors,
                progress=None if args.quiet else sys.stderr,
            )
    except _core.SaywhoError as e:
        print(f"saywho batch: {e}", file=sys.stderr)
        return 2
    speed = (
        f", {summary.audio_seconds / summary.seconds:.1f}x realtime"
        if summary.seconds > 0 and summary.audio_seconds > 0
        else ""
    )
    print(
        f"{summary.files} files: {summary.ok} done now, {summary.skipped} done before or "
        f"skipped, {summary.failed} errors now ({summary.errors} in the index); {summary.audio_seconds / 60:.1f} min of audio in "
        f"{summary.seconds / 60:.1f} min{speed}. Index: {args.output_dir}/index.jsonl"
    )
    if summary.interrupted:
        print("saywho batch: interrupted; run the same command to go on", file=sys.stderr)
        return 130
    return 1 if summary.errors else 0
