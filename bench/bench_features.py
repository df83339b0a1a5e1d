"""Front-end speed: saywho's log-mel and fbank against peers, in one run.

Peers: faster-whisper's NumPy FeatureExtractor (log-mel) and
kaldi-native-fbank (fbank), on the same audio in the same process. Prints
seconds, x realtime and saywho's speed ratio over the peer.

    python3 bench/bench_features.py [audio] [--minutes 5]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import saywho


def main() -> None:
    default = Path(__file__).resolve().parents[1] / "tests" / "data" / "shared" / "two_speakers.wav"
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("audio", nargs="?", default=str(default))
    ap.add_argument("--minutes", type=float, default=5.0, help="tile the audio to this length")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from machine import describe
    from timing import best_of

    print(describe())  # the CPU and kernels, so figures are never compared blind

    one = saywho.load_audio(args.audio)
    reps = max(1, int(np.ceil(args.minutes * 60 * 16000 / one.size)))
    audio = np.tile(one, reps)
    seconds = audio.size / 16000
    print(f"audio: {seconds / 60:.1f} min ({args.audio} tiled {reps}x)")

    from faster_whisper.feature_extractor import FeatureExtractor

    fw = FeatureExtractor(feature_size=80)
    rows = [
        (
            "log-mel 80 (Whisper)",
            lambda: saywho.log_mel_spectrogram(audio, n_mels=80),
            "faster-whisper",
            lambda: fw(audio, padding=0),
        )
    ]
    import kaldi_native_fbank as knf

    def knf_fbank():
        opts = knf.FbankOptions()
        opts.frame_opts.dither = 0.0
        opts.frame_opts.window_type = "hamming"
        opts.mel_opts.num_bins = 80
        fb = knf.OnlineFbank(opts)
        fb.accept_waveform(16000, audio * 32768.0)
        fb.input_finished()
        return np.array([fb.get_frame(i) for i in range(fb.num_frames_ready)])

    rows.append(
        (
            "fbank 80 (Kaldi)",
            lambda: saywho.fbank(audio, subtract_mean=False),
            "kaldi-native-fbank",
            knf_fbank,
        )
    )
    print(
        f"{'feature':22} {'saywho s':>9} {'x RT':>8} {'peer':>20} {'peer s':>8} {'x RT':>8} {'ratio':>6}"
    )
    for name, ours, peer_name, peer in rows:
        t_ours, t_peer = best_of(ours, args.repeat), best_of(peer, args.repeat)
        print(
            f"{name:22} {t_ours:9.3f} {seconds / t_ours:8.0f} {peer_name:>20} {t_peer:8.3f} "
            f"{seconds / t_peer:8.0f} {t_peer / t_ours:6.2f}"
        )


if __name__ == "__main__":
    main()
