"""The release's smoke test: run with the Python of a clean virtual
environment that holds only the wheel (and NumPy), the way a Colab user
meets it. Exits non-zero, saying what failed, unless the installed saywho is
the version named, decodes the bundled sample with the FFmpeg inside the
wheel, finds its two speakers offline with the diarization models inside
the wheel, and its command answers --help.

    python scripts/smoke_wheel.py 0.1.0   (from the release workflow)
"""

from __future__ import annotations

import os
import subprocess
import sys


def main(version: str) -> int:
    import saywho

    site = os.path.dirname(saywho.__file__)
    if saywho.__version__ != version:
        print(f"smoke: saywho {saywho.__version__} installed, {version} expected", file=sys.stderr)
        return 1
    if "site-packages" not in site:
        print(f"smoke: saywho imported from {site}, not from the wheel", file=sys.stderr)
        return 1
    samples = saywho.load_audio(saywho.sample_path())
    seconds = len(samples) / 16000
    with saywho.Pipeline(model=None, device="cpu") as pipeline:
        speakers = pipeline.diarize(samples).speakers
    if not 25 <= seconds <= 35 or len(speakers) != 2:
        print(f"smoke: {seconds:.1f} s and speakers {speakers} from the sample", file=sys.stderr)
        return 1
    shown = subprocess.run(
        [sys.executable, "-m", "saywho", "--help"], capture_output=True, text=True, check=True
    ).stdout
    if "saywho serve" not in shown:
        print("smoke: saywho --help does not list its commands", file=sys.stderr)
        return 1
    print(f"smoke: saywho {version} from {site}: {seconds:.1f} s, {len(speakers)} speakers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
