"""Whisper's tokenizer, read from tokenizer.json, without the ``tokenizers`` package.

Whisper uses GPT-2's byte-level BPE: text is split by GPT-2's regex, each
piece's UTF-8 bytes are spelled with 256 printable stand-in characters, and
BPE merges join them into vocabulary entries. Special tokens (``<|en|>``,
``<|notimestamps|>``, ...) are cut out of the text first, whole. The ids and
rules for prompts, suppression and word splitting follow faster-whisper's
``Tokenizer`` so that saywho decodes exactly as it does.
"""

from __future__ import annotations

import functools
import json
import os
import re
import string
import sys
import unicodedata

from .._internal.native import _core

TASKS = ("transcribe", "translate")

# Languages written without spaces: words are cut wherever the text decodes
# to whole characters instead (faster-whisper's rule).
_NO_SPACE_LANGUAGES = {"zh", "ja", "th", "lo", "my", "yue"}

# Unicode's White_Space property: what the Oniguruma regex engine behind the
# tokenizers package means by \s. Python's \s differs (it adds U+001C-U+001F).
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


@functools.lru_cache(maxsize=1)
def _pretokenizer() -> re.Pattern:
    """GPT-2's split regex, ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+|
    ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``, spelled for Python's ``re``,
    which lacks \\p{..}: the letter and number classes are listed out from
    unicodedata once per process (about 0.15 s), then ``re`` runs it in C."""
    ranges = {"L": [], "N": []}
    for cp in range(sys.maxunicode + 1):
        cat = unicodedata.category(chr(cp))[0]
        if cat in ranges:
            spans = ranges[cat]
            if spans and spans[-1][1] == cp - 1:
                spans[-1][1] = cp
            else:
                spans.append([cp, cp])

    def cls(spans):
        return "".join(
            re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
            for a, b in spans
        )

    letters, numbers, space = cls(ranges["L"]), cls(ranges["N"]), _WHITE_SPACE
    return re.compile(
        rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{letters}]+| ?[{numbers}]+"
        rf"| ?[^{space}{letters}{numbers}]+|[{space}]+(?![^{space}])|[{space}]+"
    )


@functools.lru_cache(maxsize=1)
def _byte_chars() -> list:
    """GPT-2's printable stand-in for each byte value: printable Latin-1 bytes
    stand for themselves, the rest take code points from 256 up, in order."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


class Tokenizer:
    """Whisper's tokenizer for one model; ``multilingual`` as the model says.

    ``path`` is a tokenizer.json or the model directory holding it.
    """

    def __init__(self, path: str | os.PathLike, multilingual: bool):
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, "tokenizer.json")
        try:
            with open(path, encoding="utf-8") as f:
                spec = json.load(f)
            model = spec["model"]
            self.vocab = dict(model["vocab"])
            merges = model["merges"]
            added = spec.get("added_tokens", [])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise _core.ModelError(f"{path}: not a usable tokenizer.json: {e}") from None
        if model.get("type") != "BPE":
            raise _core.ModelError(f"{path}: a {model.get('type')} tokenizer, not byte-level BPE")
        self.path = path
        self.multilingual = bool(multilingual)
        # The merge ranks are built on the first encode: decoding never needs
        # them, and the 50k-entry dict was half of a model's load time.
        self._merges, self._ranks_built = merges, None
        self._special = {t["content"]: t["id"] for t in added if t.get("special")}
        self._added = {t["id"]: t for t in added}
        self._added_ids = {t["content"]: t["id"] for t in added}
        self._id_to_token = {i: s for s, i in self.vocab.items()}
        self._id_to_token.update((t["id"], t["content"]) for t in added)
        # Added tokens are matched in the raw text first, longest first, as tokenizers does.
        contents = sorted((t["content"] for t in added), key=len, reverse=True)
        self._added_re = (
            re.compile("(" + "|".join(map(re.escape, contents)) + ")") if added else None
        )
        self._byte_of = {c: b for b, c in enumerate(_byte_chars())}
        self._bpe_cache: dict = {}

        self.eot = self._need("<|endoftext|>")
        self.sot = self._need("<|startoftranscript|>")
        self.translate = self._need("<|translate|>")
        self.transcribe = self._need("<|transcribe|>")
        self.sot_lm = self._need("<|startoflm|>")
        self.sot_prev = self._need("<|startofprev|>")
        self.no_timestamps = self._need("<|notimestamps|>")
        # Named <|nocaptions|> until large-v3 renamed it.
        self.no_speech = self._special.get("<|nospeech|>") or self._need("<|nocaptions|>")
        self.timestamp_begin = self.no_timestamps + 1
        # Language tokens sit between <|startoftranscript|> and <|translate|>.
        self.languages = {
            content[2:-2]: i
            for content, i in self._special.items()
            if self.sot < i < self.translate and content.startswith("<|") and content.endswith("|>")
        }

    def _ranks(self) -> dict:
        if self._ranks_built is None:
            # Merges are "a b" strings in older files, ["a", "b"] pairs in newer ones.
            self._ranks_built = {
                tuple(m.split(" ", 1) if isinstance(m, str) else m): i
                for i, m in enumerate(self._merges)
            }
        return self._ranks_built

    def _need(self, content: str) -> int:
        if content not in self._special:
            raise _core.ModelError(f"{self.path}: special token {content} is missing")
        return self._special[content]

    # ------------------------------------------------------------ text <-> ids

    def encode(self, text: str) -> list:
        """Token ids of ``text``, special-token strings included, no prompt added."""
        ids = []
        pieces = self._added_re.split(text) if self._added_re else [text]
        for n, piece in enumerate(pieces):
            if n % 2:  # a captured added token
                ids.append(self._added_ids[piece])
            elif piece:
                for word in _pretokenizer().findall(piece):
                    ids.extend(self._bpe(word))
        return ids

    def _bpe(self, word: str) -> list:
        cached = self._bpe_cache.get(word)
        if cached is not None:
            return cached
        chars = _byte_chars()
        parts = [chars[b] for b in word.encode("utf-8")]
        ranks = self._ranks()
        while len(parts) > 1:
            ranked = [(ranks[p], i) for i, p in enumerate(zip(parts, parts[1:])) if p in ranks]
            if not ranked:
                break
            first = min(ranked)[1]
            pair = (parts[first], parts[first + 1])
            merged, i = [], 0
            while i < len(parts):  # every occurrence, left to right, as GPT-2 does
                if i + 1 < len(parts) and (parts[i], parts[i + 1]) == pair:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        ids = [self.vocab[p] for p in parts]
        if len(self._bpe_cache) < 100_000:
            self._bpe_cache[word] = ids
        return ids

    def _text(self, ids, skip_special: bool) -> str:
        """Text of ids the way the tokenizers package decodes them."""
        raw = bytearray()
        for i in ids:
            added = self._added.get(i)
            if added is not None and added.get("special") and skip_special:
                continue
            token = self._id_to_token.get(i)
            if token is None:
                continue  # an id outside the vocabulary, e.g. a timestamp: dropped
            try:
                raw.extend(self._byte_of[c] for c in token)
            except KeyError:  # not byte-spelled (an added token's own text)
                raw.extend(token.encode("utf-8"))
        return raw.decode("utf-8", errors="replace")

    def decode(self, tokens, skip_special: bool = True) -> str:
        """Text of ``tokens``; by default only text tokens (< eot), as faster-whisper.

        With ``skip_special=False`` special tokens appear as ``<|...|>`` and
        timestamps as ``<|1.24|>``.
        """
        if skip_special:
            return self._text([t for t in tokens if t < self.eot], True)
        out, run = [], []
        for t in tokens:
            if t >= self.timestamp_begin:
                out += [self._text(run, False), self._timestamp(t)]
                run = []
            else:
                run.append(t)
        return "".join(out) + self._text(run, False)

    def _timestamp(self, token: int) -> str:
        return f"<|{(token - self.timestamp_begin) * 0.02:.2f}|>"

    def decode_with_timestamps(self, tokens) -> str:
        """Text with ``<|1.24|>`` marks, other special tokens left out (faster-whisper's)."""
        outputs = [[]]
        for token in tokens:
            if token >= self.timestamp_begin:
                outputs += [self._timestamp(token), []]
            else:
                outputs[-1].append(token)
        return "".join(s if isinstance(s, str) else self._text(s, True) for s in outputs)

    # ------------------------------------------------------- prompts and rules

    def language_token(self, language: str) -> int:
        if language not in self.languages:
            raise _core.OptionError(
                f"language {language!r} is not one of this model's: {', '.join(self.languages)}"
            )
        return self.languages[language]

    def sot_sequence(self, language: str | None = None, task: str = "transcribe") -> list:
        """The prompt start faster-whisper builds: [sot] for English-only
        models, [sot, language, task] for multilingual ones (no language
        token when ``language`` is None)."""
        if not self.multilingual:
            return [self.sot]
        if task not in TASKS:
            raise _core.OptionError(f"task {task!r} is not one of {', '.join(TASKS)}")
        sequence = [self.sot]
        if language is not None:
            sequence.append(self.language_token(language))
        sequence.append(self.transcribe if task == "transcribe" else self.translate)
        return sequence

    @functools.cached_property
    def non_speech_tokens(self) -> tuple:
        """Tokens suppressed so that speaker tags, music notes and other
        annotations are not sampled, keeping basic punctuation: faster-whisper's
        list, computed its way from this vocabulary."""
        symbols = list('"#()*+/:;<=>@[\\]^_`{|}~「」『』')
        symbols += "<< >> <<< >>> -- --- -( -[ (' (\" (( )) ((( ))) [[ ]] {{ }} ♪♪ ♪♪♪".split()
        # U+2640..U+267F share their first two UTF-8 bytes, so suppressing the
        # first token of a multi-token spelling is safe.
        miscellaneous = set("♩♪♫♬♭♮♯")
        # Hyphens and single quotes may join words, but not start one.
        result = {self.encode(" -")[0], self.encode(" '")[0]}
        for symbol in symbols + list(miscellaneous):
            for tokens in (self.encode(symbol), self.encode(" " + symbol)):
                if len(tokens) == 1 or symbol in miscellaneous:
                    result.add(tokens[0])
        return tuple(sorted(result))

    def split_to_word_tokens(self, tokens, language: str = "en") -> tuple:
        """(words, tokens of each word) for word timestamps, by faster-whisper's rules."""
        if language in _NO_SPACE_LANGUAGES:
            return self._split_on_unicode(tokens)
        return self._split_on_spaces(tokens)

    def _split_on_unicode(self, tokens) -> tuple:
        # A word ends wherever the tokens so far decode without a U+FFFD that
        # the full text does not also have at that place.
        full = self.decode_with_timestamps(tokens)
        words, word_tokens, current, offset = [], [], [], 0
        for token in tokens:
            current.append(token)
            decoded = self.decode_with_timestamps(current)
            bad = decoded.find("\ufffd")
            if bad < 0 or (offset + bad < len(full) and full[offset + bad] == "\ufffd"):
                words.append(decoded)
                word_tokens.append(current)
                current = []
                offset += len(decoded)
        return words, word_tokens

    def _split_on_spaces(self, tokens) -> tuple:
        words, word_tokens = [], []
        for sub, sub_tokens in zip(*self._split_on_unicode(tokens)):
            special = sub_tokens[0] >= self.eot
            if special or sub.startswith(" ") or sub.strip() in string.punctuation or not words:
                words.append(sub)
                word_tokens.append(sub_tokens)
            else:
                words[-1] += sub
                word_tokens[-1].extend(sub_tokens)
        return words, word_tokens
