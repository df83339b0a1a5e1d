"""What a user calls and gets back: Pipeline, process and Result, and the
options and steps process adds to the stages (known speakers, silence,
speakers for words) and the progress line a run draws. The package root
re-exports the public names.
"""
