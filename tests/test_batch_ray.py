"""saywho batch --ray on a real two-node Ray cluster on this machine: the
same answers as one process, a worker killed with kill -9 in the middle of
the run, a node that leaves, and resume."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from saywho.service.batch.index import read_index

from .batch_corpus import CORRUPT, answers, run_batch_command, words
from .conftest import batch_options
from .ray_cluster import LocalCluster

ACTOR = "SaywhoActor"  # in the title Ray gives the actor's worker process


@pytest.fixture(scope="module")
def cluster():
    # a head and a second node, one CPU each: two saywho actors
    with LocalCluster(nodes=2, cpus=1) as running:
        yield running


def start_batch(args: list[str], cwd, cluster) -> subprocess.Popen:
    # the cluster's environment keeps this driver on loopback too
    return subprocess.Popen(
        [sys.executable, "-m", "saywho", "batch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=cluster.env,
    )


def wait_for_lines(index, count: int, proc: subprocess.Popen, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not (index.exists() and index.read_text().count("\n") >= count):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no {count} index lines in {timeout} s"
        time.sleep(0.05)


def test_every_node_of_the_cluster_is_on_loopback(cluster):
    # Ray 2.60 swaps 127.0.0.1 for the interface address unless pinned
    # (tests/ray_cluster.py): no test may send traffic there
    assert cluster.node_addresses() == ["127.0.0.1"] * cluster.nodes
    # and nothing of the cluster listens anywhere else (ss: iproute2)
    listening = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True)
    pids = cluster.pids()
    ours = [
        line.split()[3]
        for line in listening.stdout.splitlines()
        if any(f"pid={pid}," in line for pid in pids)
    ]
    assert ours, listening.stdout  # the GCS and the raylets at least
    assert all(a.rsplit(":", 1)[0] in ("127.0.0.1", "[::ffff:127.0.0.1]") for a in ours), ours


def test_ray_at_an_address_where_nothing_listens_fails_at_once(batch_corpus, tmp_path):
    # Ray itself retries for minutes; saywho asks the port first
    root, _ = batch_corpus
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"  # bound, never listening
        args = [str(root), "-o", str(tmp_path / "out"), "--ray", address]
        result = run_batch_command(*args, cwd=tmp_path, timeout=60)
    assert result.returncode != 0
    assert f"no Ray cluster answers at {address}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "index.jsonl").exists()


def test_ray_with_another_clusters_token_is_told_so(batch_corpus, tmp_path):
    # a cluster with token authentication (Ray 2.60) and a driver holding a
    # stale token: Ray alone retries for ~25 s and says "Failed to connect"
    root, _ = batch_corpus
    secured = LocalCluster(nodes=1, cpus=1)
    secured.env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="a" * 32)
    with secured:
        stale = dict(secured.env, RAY_AUTH_TOKEN="b" * 32)
        args = [str(root), "-o", str(tmp_path / "out"), "--ray", secured.address]
        result = run_batch_command(*args, cwd=tmp_path, timeout=120, env=stale)
    assert result.returncode != 0
    assert f"the Ray cluster at {secured.address} refused this machine's token" in result.stderr
    assert "InvalidAuthToken" in result.stderr, result.stderr  # Ray's own words, quoted
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "index.jsonl").exists()


def test_ray_survives_a_killed_worker_and_gives_the_one_process_answers(
    cluster, batch_corpus, local_batch, tmp_path
):
    root, files = batch_corpus
    local_out, _, local_proc = local_batch
    out = tmp_path / "ray"
    args = [str(root), "-o", str(out), *batch_options(), "-q", "--ray", cluster.address]
    proc = start_batch(args, tmp_path, cluster)
    wait_for_lines(out / "index.jsonl", 3, proc)
    actors = cluster.workers(ACTOR)
    assert len(actors) == 2, actors  # one per node
    os.kill(actors[0], signal.SIGKILL)
    killed_at = (out / "index.jsonl").read_text().count("\n")
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 1, stdout + stderr  # the corrupt file is an error
    assert killed_at < len(files), "the worker was killed after the run"
    assert actors[0] not in cluster.pids()
    # every file exactly once, the corrupt one an error, nothing lost
    records = read_index(out)
    assert sorted(r.path for r in records) == sorted(str(f) for f in files)
    assert len((out / "index.jsonl").read_text().splitlines()) == len(files)
    assert [r.status for r in records].count("error") == 1
    assert "23 done now" in stdout
    assert all((out / p).is_file() for r in records for p in r.outputs)
    assert not list(out.rglob("*.tmp"))
    # the same outputs as one process: text, word times, speakers; the same
    # folder names, as they come from the input's path
    assert local_proc.returncode == 1, local_proc.stderr
    assert answers(out) == answers(local_out)
    local_records = {r.path: r.outputs for r in read_index(local_out)}
    assert {r.path: r.outputs for r in records} == local_records


def test_saywho_ray_transcribes_a_dataset_of_bytes(cluster, batch_corpus, local_batch, monkeypatch):
    """The public API on files read by Ray's filesystem layer (as from object
    storage): the rows carry the one-process answers."""
    import json

    import ray

    import saywho.ray

    root, files = batch_corpus
    local_out, _, _ = local_batch
    expected = answers(local_out)
    picked = [str(f) for f in files if "corrupt" not in str(f)][:2] + [str(root / CORRUPT)]
    # what the cluster's environment tells its drivers (read by Ray at call
    # time; this process imported Ray before): keep loopback as loopback
    monkeypatch.setattr("ray._private.ray_constants.ENABLE_RAY_CLUSTER", False)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        # this driver, and so the object transfers to it, on loopback too
        assert ray.util.get_node_ip_address() == "127.0.0.1"
        assert {n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]} == {"127.0.0.1"}
        # the actors take every CPU of this cluster: the reads must need none
        dataset = ray.data.read_binary_files(picked, include_paths=True, num_cpus=0)
        done = saywho.ray.transcribe(
            dataset,
            pipeline_options={"model": batch_options()[1], "threads": 1, "log_memory": False},
            process_options={"beam_size": 1, "word_timestamps": True},
        )
        rows = {row["path"]: row for row in done.iter_rows()}
    finally:
        ray.shutdown()
    assert sorted(rows) == sorted(picked)
    for path in picked[:2]:
        row = rows[path]
        assert row["status"] == "ok" and row["error"] is None, row["error"]
        assert row["language"] == "en" and row["duration"] > 2
        segments = json.loads(row["segments"])
        assert words({"segments": segments}) == expected[path][0]
        assert list(row["speakers"]) == expected[path][1]
        assert json.loads(row["transcript"])["metadata"]["source"] == path
    bad = rows[str(root / CORRUPT)]
    assert bad["status"] == "error" and "AudioError" in bad["error"]


def test_ray_resumes_and_survives_a_node_that_leaves(cluster, local_batch, tmp_path):
    local_out, _, _ = local_batch
    done = [r for r in read_index(local_out) if r.status == "ok"]
    # a CSV manifest: one two-voice file told it has one speaker
    two = next(r.path for r in done if len(r.speakers) == 2)
    few = [two] + [r.path for r in done if r.path != two][:5]
    manifest = tmp_path / "files.csv"
    manifest.write_text(
        "path,num_speakers\n" + "".join(f"{p},{1 if p == two else ''}\n" for p in few)
    )
    out = tmp_path / "ray"
    args = [str(manifest), "-o", str(out), *batch_options(), "-q", "--ray", cluster.address]
    proc = start_batch(args, tmp_path, cluster)
    wait_for_lines(out / "index.jsonl", 1, proc)
    # the second node leaves: its raylet and workers are killed at once
    second = cluster.procs[1]
    for pid in cluster.pids({second.pid}):
        os.kill(pid, signal.SIGKILL)
    second.wait(timeout=60)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stdout + stderr
    records = read_index(out)
    assert sorted(r.path for r in records) == sorted(few)
    assert all(r.status == "ok" for r in records)
    assert {r.path: r.speakers for r in records}[two] == ["SPEAKER_00"]  # the manifest's 1
    # resume: two files lose an output, only they are done again
    for record in records[:2]:
        (out / record.outputs[0]).unlink()
    others = [out / p for r in records[2:] for p in r.outputs]
    stamps = {p: p.stat().st_mtime_ns for p in others}
    again = run_batch_command(*args, cwd=tmp_path, env=cluster.env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert re.search(r"\b2 done now, 4 done before", again.stdout), again.stdout
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())
    assert len(read_index(out)) == 6


def test_the_actor_reads_counts_by_the_one_rule(tmp_path):
    """A num_speakers cell is read by saywho.diarization.speaker_counts.parse_count, as a
    manifest's or a form field's: blank is not given, 0 or 2.5 is that file's
    error row (Ray's own rule once took 0 for "not given"). Called in this
    process: the rule needs no cluster."""
    from saywho.ray import SaywhoActor

    from .weights import test_model_dir

    missing = str(tmp_path / "not_there.wav")
    actor = SaywhoActor({"model": str(test_model_dir("tiny.en")), "device": "cpu"})
    try:
        rows = actor({"path": [missing] * 4, "num_speakers": [0, 2.5, float("nan"), 2]})
    finally:
        actor.pipeline.close()
    assert rows["status"] == ["error"] * 4
    assert "num_speakers" in rows["error"][0] and "num_speakers" in rows["error"][1]
    # a blank or good count gets as far as the audio, which is missing
    for error in rows["error"][2:]:
        assert "not_there.wav" in error and "num_speakers" not in error
