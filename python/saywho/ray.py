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
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import ray

from ._internal.native import _core
from .api.pipeline import Pipeline
from .api.result import Result
from .diarization.speaker_counts import parse_count
from .models.hub import AUTO
from .service.batch.outcome import Outcome, describe

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
    ``process_options``. A blank (None, NaN, "") cell is not given; any
    other ``num_speakers`` cell must be a whole number of at least 1
    (saywho.diarization.speaker_counts.parse_count, the rule every path shares), else
    that file's row is an error.
    """

    def __init__(self, pipeline_options: dict | None = None, process_options: dict | None = None):
        # no model named: saywho's default, as the command line's --model auto
        self.pipeline = Pipeline(**{"model": AUTO, **(pipeline_options or {})})
        self.process_options = dict(process_options or {})

    def _process(self, path: str | None, blob, cells: dict) -> dict:
        start = time.perf_counter()
        row = dict.fromkeys(COLUMNS)
        row.update(path=path, speakers=[])
        try:
            # a cell that is not a count is this file's error, as a manifest's is
            count = parse_count(cells.get("num_speakers"), "num_speakers")
            language = cells.get("language")
            overrides = {"num_speakers": count} if count is not None else {}
            if language not in (None, ""):
                overrides["language"] = str(language)
            options = {**self.process_options, **overrides}
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
            # None, NaN or "": not given (saywho.diarization.speaker_counts.parse_count)
            cells = {
                name: _cell(batch[name][i])
                for name in ("num_speakers", "language")
                if batch.get(name) is not None
            }
            path = None if paths is None else str(_cell(paths[i]))
            blob = None if blobs is None else blobs[i]
            rows.append(self._process(path, blob, cells))
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


# How long a cluster's address may take to accept a TCP connection before
# saywho says nothing answers there (Ray itself retries for minutes).
CONNECT_SECONDS = 5.0


def _host_port(address: str) -> tuple[str, int] | None:
    """("host", port) of "host:port" or "ray://host:port"; None otherwise."""
    rest = address.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _check_listening(address: str) -> None:
    """A DeviceError within seconds where nothing listens at ``address``."""
    where = _host_port(address)
    if where is None:
        raise _core.DeviceError(
            f"{address!r} is not a Ray cluster address: give HOST:PORT (the head's GCS "
            "port, 6379 by default) or ray://HOST:PORT"
        )
    try:
        with socket.create_connection(where, timeout=CONNECT_SECONDS):
            pass
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise _core.DeviceError(
            f"no Ray cluster answers at {address} ({reason} within {CONNECT_SECONDS:g} s): "
            "start one with `ray start --head` or give the head's address"
        ) from None


def _refusal(address: str, error: BaseException) -> str:
    """What to tell a user whose ray.init failed, with Ray's own words."""
    said = str(error).strip().splitlines()
    said = said[0] if said else type(error).__name__
    text = str(error).lower()
    if isinstance(error, ray.exceptions.AuthenticationError) or any(
        word in text for word in ("authenticat", "auth_token", "authtoken")
    ):
        return (
            f"the Ray cluster at {address} refused this machine's token: give the cluster's "
            "token in RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH (a token left in "
            f"~/.ray/auth_token by another cluster is the usual cause). Ray said: {said}"
        )
    return f"cannot join the Ray cluster at {address!r}: {said}"


def _check_token(address: str) -> None:
    """A DeviceError within seconds where the cluster's GCS refuses this
    machine's token: ray.init would retry for half a minute and then say
    only "Failed to connect" (Ray 2.60 with RAY_AUTH_MODE=token)."""
    from ray._raylet import GcsClient

    try:
        GcsClient(address=address).get_all_node_info(timeout=CONNECT_SECONDS)
    except Exception as e:  # noqa: BLE001 (Ray raises many kinds; each is told)
        raise _core.DeviceError(_refusal(address, e)) from None


def check_cluster(address: str) -> None:
    """A DeviceError within seconds, naming the address and the reason,
    where nothing answers at ``address`` or its cluster refuses this
    machine's token; nothing else happens (saywho batch asks before it
    writes anything)."""
    _check_listening(address)
    if not address.startswith("ray://"):
        _check_token(address)


def _connect(address: str) -> bool:
    """Joins the cluster at ``address`` ("auto": RAY_ADDRESS or the one this
    machine runs, else a new local one); True when this call started Ray.
    An explicit address must accept a connection and this machine's token
    within seconds first, so a wrong one fails at once instead of after
    Ray's retries."""
    if ray.is_initialized():
        return False
    kwargs = {"log_to_driver": False, "configure_logging": False}
    if address not in ("auto", "local"):
        check_cluster(address)
    try:
        if address == "auto":
            ray.init(**kwargs)
        else:
            ray.init(address=address, **kwargs)
    except Exception as e:  # noqa: BLE001 (Ray raises many kinds; each is told)
        raise _core.DeviceError(_refusal(address, e)) from None
    return True


def ray_outcomes(items, pipeline_options: dict, process_options: dict, address: str, actors):
    """saywho.service.batch's engine on Ray: one Outcome per item as rows come back.

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
            # a manifest's per-file options as text columns; "" means none
            # (one type per column, whichever rows set them)
            rows = [
                {
                    "path": i.path,
                    "num_speakers": "" if i.num_speakers is None else str(i.num_speakers),
                    "language": i.language or "",
                }
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
