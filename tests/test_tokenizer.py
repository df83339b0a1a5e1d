"""saywho's Whisper tokenizer against its peers on the real test weights:
the tokenizers package for text <-> ids, faster-whisper's Tokenizer for the
special ids and rules. Missing weights fail (with the fetch command), never skip.
"""

from __future__ import annotations

import random

import pytest
import tokenizers
from faster_whisper.tokenizer import _LANGUAGE_CODES
from faster_whisper.tokenizer import Tokenizer as PeerTokenizer

from saywho.whisper.tokenizer import Tokenizer

from .weights import test_model_dir

FIXED = [
    "",
    " ",
    "Hello world!",
    " And so, my fellow Americans: ask not what your country can do for you.",
    "It's, they're, we've, I'm, you'll, he'd; 'quoted' and \"double\".",
    "  leading spaces and trailing   ",
    "tabs\tand\nnewlines\r\n\n  mixed \u00a0 spaces\u3000here",
    "1234567890 3.14159 -42 1,000,000 ½ ² ٣ 五",
    "Café naïve résumé Ærøskøbing Straße Łódź Ελληνικά русский текст",
    "日本語のテキストです。中文句子，包含标点！한국어 문장입니다.",
    "ภาษาไทย ພາສາລາວ မြန်မာ العربية עברית हिन्दी",
    "emoji 😀👍🏽👨‍👩‍👧 ♪♪ ♫ ♬ [MUSIC] (laughs) <<quote>> -- --- ((x))",
    "<|endoftext|>text<|en|><|notimestamps|> mid <|startoftranscript|>",
    "special-ish <|not a token|> <|0.00|> <|en",
    "x\u001cy\u001d z\u0085w \u2028 \u200a end",
    "a" * 50 + " " + "ab" * 30,
]

# Characters drawn for the random strings: every script and class the
# pre-tokenizer treats differently, whitespace of several kinds included.
POOL = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    + list("0123456789")
    + list(" \t\n   .,;:!?'\"-()[]{}<>/\\|@#$%^&*_+=~`")
    + list("éèêëàâäôöûüçñßøåæœÉÀÇÑ")
    + list("日本語中文字漢字かなカナ한국어")
    + list("абвгдежзийклмнопрстуфхцчшщыэюя")
    + list("αβγδεζηθ")
    + list("٠١٢٣½²³五十")
    + ["😀", "👍", "🏽", "\u200d", "♪", "\u00a0", "\u3000", "\u2009", "\u0301"]
    + ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", " the", " and", "ing"]
)


def _strings(n: int = 300) -> list:
    rng = random.Random(1234)
    out = list(FIXED)
    while len(out) < n:
        out.append("".join(rng.choice(POOL) for _ in range(rng.randint(1, 40))))
    return out


@pytest.fixture(scope="module", params=["tiny.en", "base"])
def toks(request):
    path = test_model_dir(request.param)
    multilingual = request.param == "base"
    ref = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
    return request.param, Tokenizer(path, multilingual), ref


def test_encode_matches_tokenizers(toks):
    _, ours, ref = toks
    for text in _strings():
        assert ours.encode(text) == ref.encode(text, add_special_tokens=False).ids, repr(text)


def test_decode_matches_tokenizers(toks):
    _, ours, ref = toks
    for text in _strings():
        ids = ref.encode(text, add_special_tokens=False).ids
        text_ids = [i for i in ids if i < ours.eot]
        assert ours.decode(ids) == ref.decode(text_ids), repr(text)
        assert ours.decode(ids, skip_special=False) == ref.decode(ids, skip_special_tokens=False)


def test_decode_of_arbitrary_ids_matches_tokenizers(toks):
    # Random ids split UTF-8 sequences: the replacement characters must fall alike.
    _, ours, ref = toks
    rng = random.Random(7)
    for _ in range(300):
        ids = [rng.randrange(ours.eot) for _ in range(rng.randint(1, 12))]
        assert ours.decode(ids) == ref.decode(ids), ids


@pytest.fixture(scope="module", params=["tiny.en", "base"])
def peers(request):
    path = test_model_dir(request.param)
    multilingual = request.param == "base"
    hf = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))

    def peer(language=None, task=None):
        if multilingual:
            return PeerTokenizer(hf, True, task=task or "transcribe", language=language or "en")
        return PeerTokenizer(hf, False)

    return request.param, Tokenizer(path, multilingual), peer


def test_special_ids_match_faster_whisper(peers):
    _, ours, peer = peers
    p = peer()
    for name in (
        "sot",
        "eot",
        "transcribe",
        "translate",
        "sot_lm",
        "sot_prev",
        "no_timestamps",
        "no_speech",
        "timestamp_begin",
    ):
        assert getattr(ours, name) == getattr(p, name), name
    for code in _LANGUAGE_CODES:
        if code in ours.languages:
            assert ours.languages[code] == p.tokenizer.token_to_id(f"<|{code}|>"), code
    assert len(ours.languages) >= 99


def test_sot_sequence_matches_faster_whisper(peers):
    name, ours, peer = peers
    for language in ("en", "de", "ja", "haw"):
        for task in ("transcribe", "translate"):
            want = peer(language, task).sot_sequence
            assert ours.sot_sequence(language, task) == want, (name, language, task)


def test_non_speech_tokens_match_faster_whisper(peers):
    _, ours, peer = peers
    assert ours.non_speech_tokens == peer().non_speech_tokens


def test_word_splitting_and_timestamps_match_faster_whisper(peers):
    _, ours, peer = peers
    texts = [
        " And so, my fellow Americans: ask not what your country can do for you.",
        " It's a don't-stop 3.5-hour café naïveté test (really!) 😀 ok",
        "日本語のテキストです。中文句子，包含标点！",
    ]
    for text in texts:
        body = ours.encode(text)
        tokens = [ours.timestamp_begin, *body[:6], ours.timestamp_begin + 57, *body[6:]]
        tokens += [ours.timestamp_begin + 250, ours.eot]
        for language in ("en", "ja", "zh"):
            p = peer(language if ours.multilingual else None)
            lang = language if ours.multilingual else "en"
            assert ours.split_to_word_tokens(tokens, lang) == p.split_to_word_tokens(tokens)
        assert ours.decode_with_timestamps(tokens) == peer().decode_with_timestamps(tokens)
        assert ours.decode(tokens) == peer().decode(tokens)


def test_decode_can_show_special_tokens_and_timestamps(toks):
    _, ours, _ = toks
    tokens = [ours.sot, ours.timestamp_begin + 50, *ours.encode(" Hi."), ours.eot]
    assert ours.decode(tokens) == " Hi."
    assert (
        ours.decode(tokens, skip_special=False) == "<|startoftranscript|><|1.00|> Hi.<|endoftext|>"
    )
