"""Stage 2, lines to tokens: the scans over a block's bytes that find the lines worth reading and their numbers.

  lexicon.py    what a number is, a row's fields, the level tags, the loss-naming keywords every path finds
                lines by (`KEYWORDS`: one definition for every stage above)
  linescan.py   the compiled passes (numba): newlines, candidate and keyword lines, shapes, exact decimals
  numscan.py    the compiled reading of decimals at known spans (a template's number columns), exact or left
  stamps.py     a `[date]` stamp before an error level (a candidate of the compiled scan); a stamp's digits
  kwletters.py  the keywords' letters around a byte the compiled scan flagged (inlined into its kernel)
  kwsearch.py   the lines holding a loss keyword (or a keyed start), by literal searches: the scans' definition
  jitcache.py   numba's cache folder, one per digest of this package's source (a changed module never reuses old code)
  bulk.py       the numpy fast path: candidate lines, keyword lines, LossMonitor rows bit-identical to `float`
  lmscan.py     LossMonitor rows of a big block in one compiled pass (the same lines and bits as bulk's)
  exact.py      the long-double division both read MindSpore's 17-18 digit repr floats with
  plain.py      candidate lines that carry nothing, found in one search per chunk
  sortedsearch.py  `np.searchsorted` for ascending queries (line ends, keyword lines): one compiled walk
  sidescan.py   the rows of a big block a side line may be beside (core.logs.rows.sidelines): one compiled pass
  anchors.py    where any of a few literals starts (the chatter failures' anchors): one search for all of them
  anchorscan.py  its compiled pass (a Wu-Manber search), used once a big read loaded the compiled scans

Imports only `core.logs.bytes` and below.
"""
