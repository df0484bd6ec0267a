"""What the live extensions (hindsight-pi, pi-hindsight) recorded: their switches, their retain cursors and the
records of what they retained.

In: the extensions' own files beside the sessions and in the project. Out: switches, catch-up verdicts and
retained-record matches, which planning and the import honour.
"""
