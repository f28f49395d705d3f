"""Stage 1, bytes: which files a run's logs are and their bytes, read bounded and never blocking.

  discover.py   any layout with the rank in the path -> `LogFile`s; links out of the folder refused; what was
                skipped and why
  sniff.py      a folder with no file named as a log: its text files holding training or failure lines, by a
                bounded sample of their content (never binaries, checkpoints, configs, code, documents)
  guard.py      checks on a log folder before anything reads or watches it
  source.py     `ByteSource`: where the reader's bytes come from (stat, a checked open, a read at an
                offset), injected into `RunReader`; `CheckedFiles` the real files (tests inject their own)
  rawio.py      reads into reused buffers, at an offset (pread), CR line ends turned into LF in place
  readahead.py  the next file's first block read on a helper thread while the current one is parsed
  utf16.py      UTF-16 logs decoded to UTF-8 as they are read
  jsondoc.py    a trainer's JSON document (HF's `trainer_state.json`) read whole: its `log_history` records as lines

Imports nothing above it (tokens, rows, judgement, live).
"""
