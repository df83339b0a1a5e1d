"""The whole ``saywho`` command on long generated recordings: each stage's
seconds and peak anonymous memory, and how much each stage's peak grows per
hour of audio.

For each ``--minutes``, FFmpeg encodes that much of the real speech in
tests/data/shared (tests/long_recording.py: the clips in turn, with pauses)
as FLAC, and the command runs on it as a user runs it, in its own process:

    saywho FILE --model <the tests' tiny.en> -o OUT --format all -v -q

(transcription, diarization with the bundled models, alignment, every
writer). This process reads the child's RssAnon (its anonymous memory: not
the model files' or the decoded recording's file-backed pages) and VmHWM
from /proc/PID/status every 0.1 s. The child's memory lines ("After
Diarization", ... with -v) end the stages, so a stage's peak is the highest
RssAnon between the line before it and its own. Stage seconds come from the
run's transcript.json (its ``performance``); on a shared machine they are
not speed figures.

    nice -n 5 python3 bench/long_run_memory.py --minutes 20 60 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from machine import describe  # noqa: E402

from tests.long_recording import write_long_flac  # noqa: E402
from tests.weights import test_model_dir  # noqa: E402

# The checkpoints that end each stage of one file, in the order they come
# (saywho.api: Pipeline, process); the first stage starts with the process.
STAGES = (
    ("start and Whisper load", "After Whisper Load"),
    ("decode and diarization load", "After Diarization Load"),
    ("diarization", "After Diarization"),
    ("transcription", "After Transcription"),
    ("alignment", "After Alignment"),
    ("writers", "After All Files"),
)
MiB = 2**20


def status_bytes(pid: int, *fields: str) -> dict[str, int] | None:
    """The named /proc/PID/status fields (kB lines) in bytes; None once gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    out = {}
    for line in lines:
        name, _, rest = line.partition(":")
        if name in fields:
            out[name] = int(rest.split()[0]) * 1024
    return out


class Watch:
    """RssAnon samples of a process, each tagged with the stage it fell in
    (the last checkpoint line seen when it was taken)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.stage = 0
        self.peaks = [0] * len(STAGES)
        self.entered = [None] * len(STAGES)  # RssAnon when each stage began
        self.ended_at = [None] * len(STAGES)  # seconds since start
        self.hwm = 0
        self.timeline: list[tuple[float, int]] = []  # (seconds, RssAnon) every second
        self.log: list[str] = []
        self.start = time.perf_counter()
        self.lock = threading.Lock()

    def sample(self) -> None:
        last_kept = -1.0
        while self.proc.poll() is None:
            got = status_bytes(self.proc.pid, "RssAnon", "VmHWM")
            if got and "RssAnon" in got:
                now = time.perf_counter() - self.start
                with self.lock:
                    i = min(self.stage, len(STAGES) - 1)
                    if self.entered[i] is None:
                        self.entered[i] = got["RssAnon"]
                    self.peaks[i] = max(self.peaks[i], got["RssAnon"])
                    self.hwm = max(self.hwm, got.get("VmHWM", 0))
                if now - last_kept >= 1.0:
                    self.timeline.append((round(now, 1), got["RssAnon"]))
                    last_kept = now
            time.sleep(0.1)

    def read_log(self) -> None:
        for line in self.proc.stderr:
            self.log.append(line.rstrip("\n"))
            for i, (_, mark) in enumerate(STAGES):
                if f"] {mark}:" in line:
                    got = status_bytes(self.proc.pid, "RssAnon")
                    with self.lock:
                        if got:  # the level at the line belongs to the stage it ends
                            self.peaks[i] = max(self.peaks[i], got["RssAnon"])
                        self.ended_at[i] = round(time.perf_counter() - self.start, 1)
                        self.stage = i + 1


def run_once(minutes: float, work: Path, threads: int) -> dict:
    flac = work / f"speech_{minutes:g}min.flac"
    if not flac.exists():
        write_long_flac(REPO / "tests" / "data" / "shared", flac, minutes)
    out = work / f"out_{minutes:g}min"
    command = [sys.executable, "-m", "saywho", str(flac), "--model", str(test_model_dir("tiny.en"))]
    command += ["-o", str(out), "--format", "all", "-v", "-q", "--threads", str(threads)]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(work)},  # the decoded store lies with the FLAC
    )
    watch = Watch(proc)
    sampler = threading.Thread(target=watch.sample, daemon=True)
    sampler.start()
    watch.read_log()
    code = proc.wait()
    sampler.join()
    if code != 0:
        raise SystemExit(f"saywho exited with {code}:\n" + "\n".join(watch.log[-20:]))
    record = json.loads(next(out.rglob("transcript.json")).read_text())
    perf = record["performance"]
    stages = perf["stages"]
    diarization_parts = stages.get("diarization", {}).get("stages", {})
    return {
        "minutes": minutes,
        "audio_seconds": perf["audio_seconds"],
        "speakers": len({t["speaker"] for t in record.get("turns", [])}),
        "turns": len(record.get("turns", [])),
        "segments": len(record["segments"]),
        "stage_seconds": {k: v["seconds"] for k, v in stages.items()},
        "diarization_seconds": {k: v["seconds"] for k, v in diarization_parts.items()},
        "total_seconds": perf["total_seconds"],
        "peak_rss_anon": dict(zip((s for s, _ in STAGES), watch.peaks)),
        "rss_anon_entering": dict(zip((s for s, _ in STAGES), watch.entered)),
        "stage_ended_at": dict(zip((s for s, _ in STAGES), watch.ended_at)),
        "vm_hwm": watch.hwm,
        "timeline": watch.timeline,
        "memory_lines": [line for line in watch.log if "Memory]" in line],
    }


def report_run(r: dict) -> None:
    print(
        f"\n{r['minutes']:g} min ({r['audio_seconds'] / 3600:.2f} h of audio): "
        f"{r['speakers']} speakers, {r['turns']} turns, {r['segments']} segments; "
        f"total {r['total_seconds']:.0f} s; VmHWM {r['vm_hwm'] / MiB:.0f} MiB"
    )
    print("  stage seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in r["stage_seconds"].items()))
    print(
        "  diarization's parts: "
        + ", ".join(f"{k} {v:.1f}" for k, v in r["diarization_seconds"].items())
    )
    for stage, _ in STAGES:
        entering = r["rss_anon_entering"][stage]
        print(
            f"  {stage:28s} peak RssAnon {r['peak_rss_anon'][stage] / MiB:7.1f} MiB"
            + (f" (entering {entering / MiB:.1f})" if entering else "")
        )


def report_growth(runs: list[dict]) -> None:
    if len(runs) >= 2:
        a, b = runs[0], runs[-1]
        hours = (b["audio_seconds"] - a["audio_seconds"]) / 3600
        print(
            f"\ngrowth of each stage's peak RssAnon per hour of audio ({a['minutes']:g} -> "
            f"{b['minutes']:g} min):"
        )
        for stage, _ in STAGES:
            grown = (b["peak_rss_anon"][stage] - a["peak_rss_anon"][stage]) / hours
            print(f"  {stage:28s} {grown / MiB:+7.1f} MiB/h")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, nargs="+", default=[20, 60])
    ap.add_argument("--threads", type=int, default=0, help="saywho --threads (0: one per CPU)")
    ap.add_argument(
        "--work", help="folder for the recordings and outputs (default: a temporary one)"
    )
    ap.add_argument("--json", help="also write every figure (and the RssAnon timeline) here")
    args = ap.parse_args()
    print(describe())
    print(f"load average at start: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(args.work or temporary)
        work.mkdir(parents=True, exist_ok=True)
        runs = []
        for minutes in args.minutes:
            runs.append(run_once(minutes, work, args.threads))
            report_run(runs[-1])
            sys.stdout.flush()
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    report_growth(runs)
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
