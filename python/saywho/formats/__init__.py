"""Results out: JSON, text, subtitles, RTTM, output names, tables and
pictures. See docs/outputs.md."""
