"""Memory figures and warnings that mean something (issue 31).

The checkpoints' Free/Total and their 70% / 85% warnings come from
saywho._internal.memory.system_memory(): MemAvailable (page cache counts as free), or
the process's cgroup limit where that is tighter. The machines are simulated
by real-shaped /proc and cgroup files written under tmp_path, read through
the reader's root argument, or set_memory_root() for a whole Pipeline."""

from __future__ import annotations

import gc
import logging
from pathlib import Path

import pytest

import saywho
from saywho._internal.memory import (
    GB,
    MemoryReport,
    log_checkpoint,
    set_memory_root,
    system_memory,
)

from .conftest import shared_file
from .weights import test_model_dir

GIB = 1024**3
MIB = 1024**2


@pytest.fixture
def memory_root():
    """Points every memory report at a folder of written files; this
    machine's own again after the test."""
    before = []

    def point(root):
        before.append(set_memory_root(root))

    yield point
    if before:
        set_memory_root(before[0])


# 24 GiB with 0.7 GiB in use and 16 GiB of page cache: the laptop,
# where MemFree said 71% used.
LAPTOP_MEMINFO = """\
MemTotal:       25165824 kB
MemFree:         7340032 kB
MemAvailable:   23855104 kB
Buffers:          204800 kB
Cached:         16777216 kB
SwapCached:            0 kB
Active:          4194304 kB
Inactive:       13631488 kB
"""

V2_MOUNT = (
    "1094 1083 0:29 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - "
    "cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
)


def write_root(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def v2_container(root: Path, limit: str, current: int, inactive_file: int = 0) -> Path:
    """A Docker/Kubernetes container on cgroup v2 (its own cgroup namespace)."""
    return write_root(
        root,
        {
            "proc/meminfo": LAPTOP_MEMINFO,
            "proc/self/cgroup": "0::/\n",
            "proc/self/mountinfo": V2_MOUNT,
            "sys/fs/cgroup/memory.max": limit + "\n",
            "sys/fs/cgroup/memory.current": f"{current}\n",
            "sys/fs/cgroup/memory.stat": (
                f"anon {current - inactive_file}\nfile {inactive_file}\n"
                f"active_anon {current - inactive_file}\ninactive_anon 0\n"
                f"active_file 0\ninactive_file {inactive_file}\n"
            ),
        },
    )


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def checkpoint(system, caplog, stage="After Whisper Load", warned=None) -> MemoryReport:
    counts = dict.fromkeys(
        ("allocated", "reserved", "peak_allocated", "peak_reserved", "live_blocks"), 0
    )
    report = MemoryReport.from_counts("cpu", {**counts, "free": 0, "total": 0}, 0, system)
    with caplog.at_level(logging.INFO, logger="saywho"):
        log_checkpoint(report, stage, warned)
    return report


def test_page_cache_is_available_memory(tmp_path, caplog):
    write_root(tmp_path, {"proc/meminfo": LAPTOP_MEMINFO})
    memory = system_memory(tmp_path)
    assert memory.source == "host" and memory.cgroup_limit is None
    assert memory.total == 25165824 * 1024 and memory.available == 23855104 * 1024
    free = 7340032 / 25165824
    assert 1 - free > 0.70  # what MemFree said: the warning the issue saw
    assert memory.used_fraction < 0.06
    report = checkpoint(memory, caplog)
    assert report.line("After Whisper Load").endswith("| Total 24.00 GiB (host)")
    assert warnings_of(caplog) == []


def test_cgroup_v2_near_its_4gib_limit_warns_at_85(tmp_path, caplog):
    v2_container(tmp_path, "4294967296", 3584 * MIB, inactive_file=16 * MIB)
    memory = system_memory(tmp_path)
    assert memory.source == "cgroup" and memory.cgroup_version == 2
    assert memory.total == 4 * GIB and memory.cgroup_limit == 4 * GIB
    assert memory.cgroup_used == 3568 * MIB  # less the inactive file cache
    assert memory.host_available == 23855104 * 1024
    report = checkpoint(memory, caplog)
    assert report.line("X").endswith("| Free 0.52 GiB | Total 4.00 GiB (cgroup)")
    [warning] = warnings_of(caplog)
    assert "CPU memory is 87% used at After Whisper Load (above 85%" in warning
    assert "0.52 GiB of the cgroup limit's 4.00 GiB left" in warning


def test_file_cache_inside_the_cgroup_is_not_at_risk(tmp_path, caplog):
    # 3.5 GiB charged, 3 GiB of it inactive file pages the kernel reclaims first
    v2_container(tmp_path, "4294967296", 3584 * MIB, inactive_file=3 * GIB)
    memory = system_memory(tmp_path)
    assert memory.source == "cgroup" and memory.cgroup_used == 512 * MIB
    checkpoint(memory, caplog)
    assert warnings_of(caplog) == []


def test_cgroup_v1_container(tmp_path, caplog):
    write_root(
        tmp_path,
        {
            "proc/meminfo": LAPTOP_MEMINFO,
            "proc/self/cgroup": "12:memory:/docker/3f2a\n11:cpu,cpuacct:/docker/3f2a\n",
            "proc/self/mountinfo": (
                "700 690 0:30 /docker/3f2a /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup "
                "rw,cpu,cpuacct\n"
                "701 690 0:32 /docker/3f2a /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup "
                "rw,memory\n"
            ),
            "sys/fs/cgroup/memory/memory.limit_in_bytes": "2147483648\n",
            "sys/fs/cgroup/memory/memory.usage_in_bytes": f"{1900 * MIB}\n",
            "sys/fs/cgroup/memory/memory.stat": (
                f"cache {400 * MIB}\nrss {1500 * MIB}\ninactive_file {300 * MIB}\n"
                f"total_cache {400 * MIB}\ntotal_rss {1500 * MIB}\n"
                f"total_inactive_file {300 * MIB}\n"
            ),
        },
    )
    memory = system_memory(tmp_path)
    assert memory.source == "cgroup" and memory.cgroup_version == 1
    assert memory.total == 2 * GIB and memory.cgroup_used == 1600 * MIB
    checkpoint(memory, caplog)
    [warning] = warnings_of(caplog)
    assert "78% used" in warning and "(above 70%;" in warning


def test_max_is_no_limit(tmp_path, caplog):
    v2_container(tmp_path, "max", 3584 * MIB)
    memory = system_memory(tmp_path)
    assert memory.source == "host" and memory.cgroup_limit is None
    assert memory.available == 23855104 * 1024
    checkpoint(memory, caplog)
    assert warnings_of(caplog) == []


@pytest.mark.parametrize(
    "files",
    [
        {},  # no /proc at all: the C library's figures
        {"proc/meminfo": LAPTOP_MEMINFO},  # no cgroup files
        {  # a limit without its usage, and a mount that is not there
            "proc/meminfo": LAPTOP_MEMINFO,
            "proc/self/cgroup": "0::/gone\n",
            "proc/self/mountinfo": V2_MOUNT,
            "sys/fs/cgroup/memory.max": "4294967296\n",
        },
        {  # garbage where numbers belong
            "proc/meminfo": "MemTotal: lots\nMemAvailable: some\n",
            "proc/self/cgroup": "nonsense\n",
            "proc/self/mountinfo": "not a mount line\n",
        },
    ],
    ids=["nothing", "meminfo-only", "limit-without-usage", "garbage"],
)
def test_missing_files_give_host_figures(tmp_path, caplog, files):
    write_root(tmp_path, files)
    memory = system_memory(tmp_path)
    assert memory.source == "host" and memory.cgroup_limit is None
    assert memory.total > 0 and 0 <= memory.available <= memory.total
    if "proc/meminfo" in files and "lots" not in files["proc/meminfo"]:
        assert memory.total == 25165824 * 1024
    checkpoint(memory, caplog)  # and the line is written


def test_warnings_once_per_stage(tmp_path, caplog):
    warned: dict = {}
    at = {
        used: system_memory(v2_container(tmp_path / str(used), "4294967296", used * MIB))
        for used in (3000, 3584, 1024)
    }
    checkpoint(at[3000], caplog, "After Transcription", warned)  # 73%: the 70% warning
    checkpoint(at[3000], caplog, "After Transcription", warned)  # again: quiet
    checkpoint(at[3584], caplog, "After Transcription", warned)  # 88%: the 85% warning
    checkpoint(at[3584], caplog, "After Transcription", warned)  # quiet
    checkpoint(at[3584], caplog, "After Diarization", warned)  # another stage warns
    checkpoint(at[1024], caplog, "After Transcription", warned)  # back down: quiet
    checkpoint(at[3584], caplog, "After Transcription", warned)  # and up again: warns
    said = warnings_of(caplog)
    assert [w.split("(above ")[1][:3] for w in said] == ["70%", "85%", "85%", "85%"]
    assert ["at After Diarization" in w for w in said] == [False, False, True, False]


def test_pipeline_under_a_4gib_cgroup_warns_after_the_stage_that_filled_it(
    tmp_path, memory_root, caplog
):
    """A real Pipeline run in a simulated 4 GiB container: 2 GiB used when it
    starts, 3.5 GiB once transcription has run (the test writes the cgroup's
    counter as the kernel would, from inside the stage)."""
    v2_container(tmp_path, "4294967296", 2 * GIB)
    memory_root(tmp_path)
    counter = tmp_path / "sys/fs/cgroup/memory.current"

    def grow(stage, done, total):
        counter.write_text(f"{3584 * MIB}\n")

    with caplog.at_level(logging.INFO, logger="saywho"):
        with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu") as p:
            assert warnings_of(caplog) == []
            segments, info = p.transcribe(shared_file("jfk.wav"), beam_size=1, progress=grow)
            assert "ask not what your country" in " ".join(s.text for s in segments).lower()
            # the same figures in every reader
            assert p.memory().source == "cgroup" and p.memory().total == 4 * GIB
            assert info.performance["memory"]["source"] == "cgroup"
            assert info.performance["memory"]["total_bytes"] == 4 * GIB
            assert info.performance["memory"]["used_fraction"] == pytest.approx(0.875)
            p.transcribe(shared_file("jfk.wav"), beam_size=1)  # the same stage: no repeat
    lines = [r.getMessage() for r in caplog.records if "[CPU Memory]" in r.getMessage()]
    stages = [line.split("] ")[1].split(":")[0] for line in lines]
    assert stages[:3] == ["After Pipeline Start", "After Whisper Load", "After Transcription"]
    assert all(line.endswith("| Total 4.00 GiB (cgroup)") for line in lines)
    [warning] = warnings_of(caplog)
    assert "CPU memory is 88% used at After Transcription (above 85%" in warning
    # the warning follows its stage's line
    messages = [r.getMessage() for r in caplog.records]
    assert messages[messages.index(warning) - 1] == lines[2]


def test_a_run_on_this_machine_prints_no_warning(caplog):
    """This machine, its page cache warm (the model files and the audio just
    read): no warning unless memory really is short."""
    model = Path(test_model_dir("tiny.en"))
    for path in [*model.iterdir(), shared_file("jfk.wav")]:
        if path.is_file():
            path.read_bytes()
    memory = system_memory()
    if memory.used_fraction > 0.65:
        pytest.fail(
            f"this machine really has {memory.available / GB:.1f} of {memory.total / GB:.1f} GB "
            f"left ({memory.source}): too little to check that a run stays quiet"
        )
    with caplog.at_level(logging.INFO, logger="saywho"):
        with saywho.Pipeline(model=model, device="cpu") as p:
            _, info = p.transcribe(shared_file("jfk.wav"), beam_size=1)
            counts = p.runtime.memory()  # the C backend's own free/total
    assert warnings_of(caplog) == []
    lines = [r.getMessage() for r in caplog.records if "[CPU Memory]" in r.getMessage()]
    assert len(lines) == 3 and all(line.endswith(f"({memory.source})") for line in lines)
    # the CPU backend reads the same figures (its free moves with the machine)
    assert counts["total"] in (memory.host_total, memory.cgroup_limit)
    assert abs(counts["free"] - memory.available) < GIB
    assert info.performance["memory"]["source"] == memory.source


def test_gpu_checkpoints_use_the_device_figures(cuda_reason, caplog):
    if cuda_reason:
        pytest.skip(cuda_reason)
    with caplog.at_level(logging.INFO, logger="saywho"):
        with saywho.Pipeline(device="cuda") as p:
            report = p.checkpoint("After Start")
            counts = p.runtime.memory()
    assert report.source == "device" and report.total == counts["total"] > 0
    assert 0 < report.free <= report.total
    assert report.line("X").startswith("[GPU Memory] X:")
    assert report.line("X").endswith("(device)")


def test_the_decoded_audio_is_counted_while_it_is_alive(jfk_wav):
    """The memory lines count the recording's samples (host memory that
    grows with its length) while anything holds them, in GiB like the rest."""
    with saywho.Pipeline(model=None, device="cpu") as p:
        assert p.memory().audio == 0 and "Audio" not in p.memory().line("Before")
        samples = p.load_audio(jfk_wav)
        report = p.memory()
        assert report.audio == samples.nbytes == 4 * len(samples) > 600_000
        assert "| Audio 0.00 GiB |" in report.line("After Decode")
        p.load_audio(samples, sample_rate=16000)  # the caller's samples, not decoded here
        assert p.memory().audio == samples.nbytes
        del samples, report
        gc.collect()
        assert p.memory().audio == 0
