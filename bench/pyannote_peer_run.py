"""pyannote.audio's own SpeakerDiarization with segmentation-3.0 and CAM++.

Runs in the bench venv (bench/setup_pyannote_venv.sh: torch, pyannote.audio
3.3.2 and 3D-Speaker's CAM++ class), never in saywho's; driven by
bench/bench_pyannote_peer.py, which gives it each recording's samples as a
.npy file and scores what it prints.

The pipeline is pyannote 3.1's (speaker-diarization-3.1's config.yaml:
powerset segmentation every 1 s, embeddings without overlapped frames,
centroid AHC with min_cluster_size 12) with two models swapped in:
segmentation-3.0's pytorch_model.bin from a local path, and CAM++ as the
embedding, wrapped below as a pyannote.audio Model. The clustering
threshold is saywho's CAM++ default, passed in.

How CAM++ takes a mask (it has no weighted pooling, unlike pyannote's
WeSpeaker ResNet): the chunk's Kaldi fbank (3D-Speaker's front end), the mask
resampled onto the fbank frames by nearest neighbour (F.interpolate), the
kept frames joined, their mean removed, one forward per item. Items of a
batch keep different numbers of frames and padding would change CAM++'s
pooled statistics, so each runs alone. A mask keeping fewer than the 3
frames CAM++ needs gives NaN (pyannote drops NaN embeddings); an unmasked
waveform that short raises, which is how pyannote probes min_num_samples.

    python bench/pyannote_peer_run.py --audio x.npy --segmentation seg.bin \
        --campp campplus_cn_en_common.pt --threshold 0.8 [--num-speakers N]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F
import torchaudio.compliance.kaldi as kaldi
from pyannote.audio import Model
from pyannote.audio.pipelines import SpeakerDiarization
from speakerlab.models.campplus.DTDNN import CAMPPlus

SAMPLE_RATE = 16000
MIN_FRAMES = 3  # CAM++'s stride-2 TDNN needs two frames after it


class CamppAsPyannoteEmbedding(Model):
    """3D-Speaker's CAM++ behind pyannote.audio's embedding-model interface:
    ``forward(waveforms [B, 1, N], weights [B, frames] or None) -> [B, 192]``."""

    def __init__(self, checkpoint: str):
        super().__init__(sample_rate=SAMPLE_RATE, num_channels=1)
        self.campp = CAMPPlus(feat_dim=80, embedding_size=192)
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        self.campp.load_state_dict(state)
        self.campp.eval()

    @property
    def dimension(self) -> int:
        return 192

    def _features(self, waveform: torch.Tensor) -> torch.Tensor:
        return kaldi.fbank(
            waveform[None], num_mel_bins=80, sample_frequency=SAMPLE_RATE, dither=0.0
        )

    def forward(self, waveforms: torch.Tensor, weights: torch.Tensor | None = None):
        out = torch.full((len(waveforms), self.dimension), float("nan"))
        for b, waveform in enumerate(waveforms[:, 0]):
            if weights is None:
                if len(waveform) < 400 + (MIN_FRAMES - 1) * 160:
                    raise ValueError("too short for CAM++")
                feats = self._features(waveform)
            else:
                if not bool((weights[b] > 0.5).any()):
                    continue
                feats = self._features(waveform)
                mask = F.interpolate(weights[b][None, None], size=len(feats), mode="nearest")
                feats = feats[mask[0, 0] > 0.5]
                if len(feats) < MIN_FRAMES:
                    continue
            feats = feats - feats.mean(dim=0, keepdim=True)
            out[b] = self.campp(feats[None])[0]
        return out


def build(args) -> SpeakerDiarization:
    segmentation = Model.from_pretrained(args.segmentation)
    pipeline = SpeakerDiarization(
        segmentation=segmentation,
        segmentation_step=0.1,
        embedding=CamppAsPyannoteEmbedding(args.campp),
        embedding_exclude_overlap=True,
        clustering="AgglomerativeClustering",
        embedding_batch_size=32,
        segmentation_batch_size=32,
    )
    pipeline.instantiate(
        {
            "segmentation": {"min_duration_off": 0.0},
            "clustering": {
                "method": "centroid",
                "min_cluster_size": args.min_cluster_size,
                "threshold": args.threshold,
            },
        }
    )
    return pipeline


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audio", required=True, help=".npy of float32 16 kHz samples")
    ap.add_argument("--segmentation", required=True)
    ap.add_argument("--campp", required=True)
    ap.add_argument("--threshold", type=float, required=True)
    ap.add_argument("--min-cluster-size", type=int, default=12)
    ap.add_argument("--num-speakers", type=int)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=float, default=12.0, help="seconds of audio run first")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    audio = torch.from_numpy(np.load(args.audio).astype(np.float32))[None]
    pipeline = build(args)
    if args.warmup > 0:  # first calls pay torch's lazy initialisation
        head = audio[:, : int(args.warmup * SAMPLE_RATE)]
        pipeline({"waveform": head, "sample_rate": SAMPLE_RATE})
    t0 = time.perf_counter()
    annotation = pipeline(
        {"waveform": audio, "sample_rate": SAMPLE_RATE}, num_speakers=args.num_speakers
    )
    seconds = time.perf_counter() - t0
    turns = [
        [float(seg.start), float(seg.end), str(label)]
        for seg, _, label in annotation.itertracks(yield_label=True)
    ]
    import pyannote.audio

    print(
        json.dumps(
            {
                "turns": turns,
                "seconds": seconds,
                "speakers": len(annotation.labels()),
                "pyannote.audio": pyannote.audio.__version__,
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
            }
        )
    )


if __name__ == "__main__":
    main()
