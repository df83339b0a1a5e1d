"""One file transcribed end to end by saywho (its own decode) and by
faster-whisper (its own decode_audio) with the multilingual test checkpoint
(Whisper base: the language detected, not given) at temperature 0, beam 5.
tests/test_wheel.py runs it in a venv that holds the portable wheel, whose
FFmpeg is faster-whisper's; it prints one JSON object: the language and the
tokens of each.

    python3 tests/transcript_parity.py AUDIO_FILE
"""

from __future__ import annotations

import json
import sys

from weights import whisper_dir

OPTIONS = {"temperature": 0.0, "beam_size": 5}


def main(path: str) -> int:
    from faster_whisper import WhisperModel as PeerModel
    from faster_whisper import decode_audio

    import saywho
    from saywho.whisper.transcribe import WhisperModel

    model_dir = whisper_dir("base")
    with WhisperModel(model_dir, device="cpu") as model:
        segments, info = model.transcribe(saywho.load_audio(path), **OPTIONS)
        ours = {"language": info.language, "tokens": [s.tokens for s in segments]}
    peer = PeerModel(str(model_dir), device="cpu", compute_type="float32")
    segments, info = peer.transcribe(decode_audio(path), **OPTIONS)
    theirs = {"language": info.language, "tokens": [s.tokens for s in segments]}
    print(json.dumps({"saywho": ours, "faster-whisper": theirs}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
