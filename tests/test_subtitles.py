"""Subtitle options (Whisper's max_line_width, max_line_count,
highlight_words), WebVTT voice tags and escaping, and the TSV writer: exact
text for hand-built segments whose words have times."""

from __future__ import annotations

import pytest

import saywho
from saywho.api.speaker_words import SpeakerSegment, SpeakerWord
from saywho.formats import writers


def _segment(speaker, words):
    ws = [SpeakerWord(a, b, w, 0.9, speaker) for a, b, w in words]
    return SpeakerSegment(ws[0].start, ws[-1].end, "".join(w.word for w in ws), speaker, ws)


FOX = [
    _segment(
        "SPEAKER_00",
        [
            (0.0, 0.4, " The"),
            (0.4, 0.8, " quick"),
            (0.8, 1.2, " brown"),
            (1.2, 1.6, " fox"),
            (1.6, 2.0, " jumps"),
            (2.0, 2.4, " over"),
        ],
    ),
    _segment("SPEAKER_00", [(2.4, 2.8, " the"), (2.8, 3.2, " lazy"), (3.2, 3.6, " dog.")]),
    _segment("SPEAKER_01", [(4.0, 4.5, " Yes.")]),
]


def test_line_width_wraps_each_segment_into_lines():
    # the width counts SRT's speaker label: "SPEAKER_00: " leaves 10 of 22
    # characters for the first line's words
    srt = writers.srt(FOX, max_line_width=22)
    assert srt == (
        "1\n00:00:00,000 --> 00:00:02,400\nSPEAKER_00: The quick\nbrown fox jumps over\n\n"
        "2\n00:00:02,400 --> 00:00:03,600\nSPEAKER_00: the lazy\ndog.\n\n"
        "3\n00:00:04,000 --> 00:00:04,500\nSPEAKER_01: Yes.\n"
    )
    assert max(len(line) for line in srt.splitlines() if "-->" not in line) == 21
    # WebVTT's voice tag is markup, not text: the whole width is the words'
    vtt = writers.vtt(FOX, max_line_width=10)
    assert "<v SPEAKER_00>The quick\nbrown fox\njumps over\n" in vtt


def test_a_label_wider_than_the_line_leaves_one_word_beside_it():
    srt = writers.srt(FOX[:1], max_line_width=10)
    assert srt.splitlines()[2:] == ["SPEAKER_00: The", "quick", "brown fox", "jumps over"]


def test_line_count_flows_words_across_segments_of_one_speaker():
    # at most two lines of 10 characters a cue; the speaker change starts a cue
    assert writers.vtt(FOX, max_line_width=10, max_line_count=2) == (
        "WEBVTT\n\n"
        "00:00:00.000 --> 00:00:01.600\n<v SPEAKER_00>The quick\nbrown fox\n\n"
        "00:00:01.600 --> 00:00:03.200\n<v SPEAKER_00>jumps over\nthe lazy\n\n"
        "00:00:03.200 --> 00:00:03.600\n<v SPEAKER_00>dog.\n\n"
        "00:00:04.000 --> 00:00:04.500\n<v SPEAKER_01>Yes.\n"
    )


def test_a_long_pause_ends_a_flowing_cue():
    seg = _segment("A", [(0.0, 0.5, " before"), (4.0, 4.5, " after")])
    srt = writers.srt([seg], max_line_width=40, max_line_count=2)
    assert srt == (
        "1\n00:00:00,000 --> 00:00:00,500\nA: before\n\n2\n00:00:04,000 --> 00:00:04,500\nA: after\n"
    )


def test_a_word_longer_than_the_width_gets_its_own_line():
    seg = _segment(None, [(0.0, 1.0, " a"), (1.0, 2.0, " incomprehensibilities"), (2.0, 3.0, " b")])
    assert writers.srt([seg], max_line_width=5) == (
        "1\n00:00:00,000 --> 00:00:03,000\na\nincomprehensibilities\nb\n"
    )


def test_highlight_words_underlines_each_word_in_turn():
    seg = _segment("SPEAKER_01", [(4.0, 4.5, " Yes."), (4.7, 5.0, " Right.")])
    assert writers.srt([seg], highlight_words=True) == (
        "1\n00:00:04,000 --> 00:00:04,500\nSPEAKER_01: <u>Yes.</u> Right.\n\n"
        "2\n00:00:04,500 --> 00:00:04,700\nSPEAKER_01: Yes. Right.\n\n"
        "3\n00:00:04,700 --> 00:00:05,000\nSPEAKER_01: Yes. <u>Right.</u>\n"
    )
    vtt = writers.vtt([seg], max_line_width=4, highlight_words=True)
    assert "00:00:04.700 --> 00:00:05.000\n<v SPEAKER_01>Yes.\n<u>Right.</u>\n" in vtt


def test_vtt_escapes_markup_and_srt_keeps_text():
    seg = SpeakerSegment(0.0, 1.0, " x < y & z > w", "Ann <B>")
    assert writers.vtt([seg]) == (
        "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n<v Ann &lt;B&gt;>x &lt; y &amp; z &gt; w\n"
    )
    assert writers.srt([seg]).endswith("Ann <B>: x < y & z > w\n")


def test_tsv_is_whispers_with_the_speaker():
    segs = [
        SpeakerSegment(0.0004, 1.2346, " tab\there", "Ann"),
        SpeakerSegment(2.0, 3.0, " no speaker", None),
    ]
    assert writers.tsv(segs) == (
        "start\tend\ttext\tspeaker\n0\t1235\ttab here\tAnn\n2000\t3000\tno speaker\t\n"
    )


def test_empty_segments_make_no_cue():
    segs = [SpeakerSegment(0.0, 1.0, " ", "A"), SpeakerSegment(1.0, 2.0, " Hi.", "A")]
    assert writers.srt(segs) == "1\n00:00:01,000 --> 00:00:02,000\nA: Hi.\n"
    assert writers.vtt([]) == "WEBVTT\n\n"


def test_result_write_takes_the_subtitle_options(tmp_path):
    result = saywho.Result(duration=5.0, segments=FOX, speakers=["SPEAKER_00", "SPEAKER_01"])
    result.write(tmp_path, formats=["srt", "vtt"], max_line_width=22, max_line_count=2)
    srt = (tmp_path / "transcript.srt").read_text()
    shown = [line for line in srt.splitlines() if "-->" not in line]
    assert srt.count("-->") == 3 and max(len(line) for line in shown) <= 22
    assert (tmp_path / "transcript.vtt").read_text().count("-->") == 3  # no label to count


@pytest.mark.parametrize(
    "options, message",
    [
        ({"max_line_count": 2}, "needs max_line_width"),
        ({"max_line_width": 0}, "at least 1"),
        ({"max_line_width": 4.5}, "whole number"),
        ({"max_line_width": True}, "whole number"),
        ({"max_words": 3}, "unknown subtitle option"),
    ],
)
def test_bad_subtitle_options_are_option_errors(tmp_path, options, message):
    with pytest.raises(saywho.OptionError, match=message):
        writers.write_all(tmp_path, FOX, {}, formats=["srt"], subtitles=options)
    assert list(tmp_path.iterdir()) == []


def test_no_cue_takes_no_time():
    """Issue 39's `00:00:56,600 --> 00:00:56,600`: a one-word piece Whisper
    timed as an instant. With its own speaker's cue before it, it joins that
    cue; alone between other speakers it gets time no other cue holds."""
    instant = _segment("SPEAKER_01", [(56.6, 56.6, " right")])
    before = _segment("SPEAKER_00", [(55.0, 55.5, " All")])
    after = _segment("SPEAKER_00", [(57.5, 58.0, " Sure.")])
    srt = writers.srt([before, instant, after])
    assert "00:00:56,600 --> 00:00:56,600" not in srt
    assert "00:00:56,600 --> 00:00:57,100\nSPEAKER_01: right" in srt
    same = _segment("SPEAKER_00", [(56.6, 56.6, " right")])
    srt = writers.srt([before, same, after])
    assert "00:00:55,000 --> 00:00:56,600\nSPEAKER_00: All right" in srt
    for highlight in (False, True):
        vtt = writers.vtt([before, instant, after], highlight_words=highlight)
        for line in vtt.splitlines():
            if " --> " in line:
                start, end = line.split(" --> ")
                assert end > start, line
