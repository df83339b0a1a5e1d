"""saywho on a Ray cluster: Ray Data's ``map_batches`` with an actor that
holds one Pipeline (``pip install "saywho[ray]"``).

This is the only module of saywho that imports Ray; ``import saywho`` never
does. For your own Ray pipelines::

    import ray
    import saywho.ray

    ray.init()  # or ray.init(address="ray://head:10001")
    paths = ray.data.from_items([{"path": p} for p in my_paths])
    # or: ray.data.read_binary_files("s3://bucket/calls/", include_paths=True)
    done = saywho.ray.transcribe(
        paths,
        pipeline_options={"model": "large-v3", "compute_type": "int8"},
        process_options={"num_speakers": 2},
    )
    for row in done.iter_rows():
        print(row["path"], row["status"], row["language"], row["text"][:60])

Each output row has the input's ``path``, ``status`` ("ok" or "error"),
``error``, ``text``, ``language``, ``duration`` (s), ``speakers``,
``segments`` (JSON: the speaker segments with their words), ``transcript``
(JSON: everything transcript.json holds) and ``seconds`` taken. A file that
fails is a row with ``status="error"``, never a failed job. Actors that die
(a killed worker, a node that leaves) are restarted by Ray and their files
run again. ``saywho batch --ray`` is this plus the index and the output
files (docs/batch.md).
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import ray

from .batch.outcome import Outcome, describe
from .models.hub import AUTO
from .native import _core
from .pipeline import Pipeline
from .result import Result

#: The columns of every row :func:`transcribe` returns.
COLUMNS = (
    "path",
    "status",
    "error",
    "text",
    "language",
    "duration",
    "speakers",
    "segments",
    "transcript",
    "seconds",
)


def _cell(value):
    """A dataset cell as a plain Python value; a missing one (None, NaN) as None."""
    if value is None:
        return None
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


class SaywhoActor:
    """A Ray Data callable class: one :class:`saywho.Pipeline` per actor,
    loaded once when the actor starts, then every batch through it.

    A batch has a ``path`` column (files every worker can read) or a
    ``bytes`` column (the files' contents, as ``ray.data.read_binary_files``
    gives them, with ``path`` for their names), and optionally per-file
    ``num_speakers`` and ``language`` columns that override
    ``process_options``.
    """

    def __init__(self, pipeline_options: dict | None = None, process_options: dict | None = None):
        # no model named: saywho's default, as the command line's --model auto
        self.pipeline = Pipeline(**{"model": AUTO, **(pipeline_options or {})})
        self.process_options = dict(process_options or {})

    def _process(self, path: str | None, blob, overrides: dict) -> dict:
        start = time.perf_counter()
        row = dict.fromkeys(COLUMNS)
        row.update(path=path, speakers=[])
        options = {**self.process_options, **overrides}
        try:
            if blob is None:
                result = self.pipeline.process(path, **options)
            else:  # FFmpeg reads files: give the bytes a name with their suffix
                suffix = Path(path or "audio").suffix
                with tempfile.NamedTemporaryFile(suffix=suffix) as f:
                    f.write(bytes(blob))
                    f.flush()
                    result = self.pipeline.process(f.name, **options)
                result.source = path
        except Exception as e:  # a bad file is a row, never a failed job
            row.update(status="error", error=describe(e), seconds=time.perf_counter() - start)
            return row
        record = result.to_dict()
        row.update(
            status="ok",
            text=result.text,
            language=result.language,
            duration=result.duration,
            speakers=list(result.speakers),
            segments=json.dumps(record["segments"], ensure_ascii=False),
            transcript=json.dumps(record, ensure_ascii=False),
            seconds=time.perf_counter() - start,
        )
        return row

    def __call__(self, batch: dict) -> dict:
        paths = batch.get("path")
        blobs = batch.get("bytes")
        if paths is None and blobs is None:
            raise ValueError("saywho.ray: a batch needs a 'path' or a 'bytes' column")
        count = len(paths if paths is not None else blobs)
        rows = []
        for i in range(count):
            overrides = {}
            for name in ("num_speakers", "language"):
                column = batch.get(name)
                value = None if column is None else _cell(column[i])
                if value not in (None, 0, ""):  # none, NaN, 0 or "": not given
                    overrides[name] = int(value) if name == "num_speakers" else str(value)
            path = None if paths is None else str(_cell(paths[i]))
            blob = None if blobs is None else blobs[i]
            rows.append(self._process(path, blob, overrides))
        return {name: [row[name] for row in rows] for name in COLUMNS}

    def __del__(self):
        pipeline = getattr(self, "pipeline", None)
        if pipeline is not None:
            pipeline.close()


def actor_layout(actors: int | None = None) -> dict:
    """How many actors, and what each asks of the cluster: one GPU each when
    the cluster has GPUs (one actor per GPU by default), else CPUs: by
    default one actor per node with the CPUs of the smallest node, so that
    every actor fits anywhere and its threads do not fight another's."""
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if gpus:
        return {"concurrency": actors or gpus, "num_gpus": 1, "num_cpus": 1}
    node_cpus = [
        int(n["Resources"].get("CPU", 0))
        for n in ray.nodes()
        if n.get("Alive") and n["Resources"].get("CPU", 0) >= 1
    ]
    if not node_cpus:
        raise _core.DeviceError("saywho.ray: the Ray cluster has no node with a CPU to run on")
    if actors is None:
        return {"concurrency": len(node_cpus), "num_gpus": 0, "num_cpus": min(node_cpus)}
    per_actor = max(1, sum(node_cpus) // actors)
    while per_actor > 1 and sum(c // per_actor for c in node_cpus) < actors:
        per_actor -= 1
    return {"concurrency": actors, "num_gpus": 0, "num_cpus": per_actor}


def transcribe(
    dataset: ray.data.Dataset,
    *,
    pipeline_options: dict | None = None,
    process_options: dict | None = None,
    actors: int | None = None,
) -> ray.data.Dataset:
    """``dataset`` (a ``path`` or ``bytes`` column) through saywho actors:
    a dataset with :data:`COLUMNS`, one row per input row.

    ``pipeline_options`` are ``saywho.Pipeline``'s keyword arguments,
    ``process_options`` ``Pipeline.process``'s. On CPU actors a ``threads``
    of 0 becomes the actor's CPUs. ``actors`` fixes the pool's size
    (default: :func:`actor_layout`'s). On a CPU-only cluster the actors
    take every CPU: read the input with ``num_cpus=0`` (as
    ``read_binary_files(..., num_cpus=0)``) or ask for fewer actors, or
    the reads wait for a CPU that never comes free.
    """
    layout = actor_layout(actors)
    options = dict(pipeline_options or {})
    if not layout["num_gpus"] and not options.get("threads"):
        options["threads"] = layout["num_cpus"]
    return dataset.map_batches(
        SaywhoActor,
        fn_constructor_kwargs={"pipeline_options": options, "process_options": process_options},
        batch_size=1,  # one file per call: a retry redoes one file, not a block
        batch_format="numpy",
        # a fixed pool; two files in flight per actor: one running, the next
        # ready, and no long queue stuck behind a slow file
        compute=ray.data.ActorPoolStrategy(
            size=layout["concurrency"], max_tasks_in_flight_per_actor=2
        ),
        num_cpus=layout["num_cpus"],
        num_gpus=layout["num_gpus"],
    )


def _connect(address: str) -> bool:
    """Joins the cluster at ``address`` ("auto": RAY_ADDRESS or the one this
    machine runs, else a new local one); True when this call started Ray."""
    if ray.is_initialized():
        return False
    kwargs = {"log_to_driver": False, "configure_logging": False}
    try:
        if address == "auto":
            ray.init(**kwargs)
        else:
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise _core.DeviceError(f"cannot join the Ray cluster at {address!r}: {e}") from None
    return True


def ray_outcomes(items, pipeline_options: dict, process_options: dict, address: str, actors):
    """saywho.batch's engine on Ray: one Outcome per item as rows come back.

    The driver (this process) writes the outputs and the index, so a task
    that Ray runs twice (its worker died after finishing) cannot write a
    file twice; a path seen again is dropped here.
    """

    def outcomes() -> Iterator[Outcome]:
        started = _connect(address)
        try:
            if not items:
                return
            # saywho batch draws its own progress line
            ray.data.DataContext.get_current().enable_progress_bars = False
            by_path = {item.path: item for item in items}
            # a manifest's per-file options as columns; 0 and "" mean none
            # (one type per column, whichever rows set them)
            rows = [
                {"path": i.path, "num_speakers": i.num_speakers or 0, "language": i.language or ""}
                for i in items
            ]
            # one block per file, so that tasks (and their retries) are files;
            # built here on the driver: no read task waits for a CPU the actors hold
            dataset = ray.data.from_items(rows, override_num_blocks=len(rows))
            done = transcribe(
                dataset,
                pipeline_options=pipeline_options,
                process_options=process_options,
                actors=actors,
            )
            seen = set()
            for row in done.iter_rows():
                path = row["path"]
                if path in seen or path not in by_path:
                    continue
                seen.add(path)
                result = None
                if row["status"] == "ok":
                    result = Result.from_dict(json.loads(row["transcript"]))
                yield Outcome(by_path[path], result, row["error"], float(row["seconds"] or 0.0))
        finally:
            if started:
                ray.shutdown()

    return outcomes()
