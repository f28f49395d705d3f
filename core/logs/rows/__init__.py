"""Stage 3, rows: the grammar of a line's numbers, the series choice per file, and one file's lines as rows.

The grammar (a line -> what it says):
  general.py    the general line reader (`read_line`: loss key + number in every notation, eval lines, every
                metric) and line shapes (`LineTemplate`: one parse reused for every line of the same shape)
  formats.py    the suites' real sample lines (`FORMATS`) + `parse_loss_line`, the user regex
  failures.py   failure lines by kind behind any prefix (CANN codes, signals, launchers, collectives, OOM)
  linekinds.py  what a line is to the line-by-line parser, told by its text alone
  lineranks.py  whose line it is when one stream carries several ranks (`[1,3]<stdout>:`, `[rank6]:`,
                `Rank: N;`, a trailing `rank N`, pdsh's `host: `): the rank sources with their real lines
  memory.py     the device-memory statistic lines MindSpore prints
  shapes.py     help for unread formats (frequent numeric line shapes) and metric labels

A file's lines -> rows (the same reading on the line-by-line and the bulk paths):
  parser.py     one file's complete lines -> rows, timings, errors (`ReaderSettings`, `ErrorKind`)
  filestate.py  one file's parse state, which key is the training loss (the series choice)
  templated.py  lines of a known shape as rows in numpy
  smallfiles.py many short rank logs parsed together in batches
  table.py      the run's loss table, grown in place
  snapshot.py   `RunSnapshot`, what a read hands over; cells.py: typed numbers from its cells
  reader.py     `RunReader` / `read_run`: every file from its saved offset to its last complete line

Imports only `core.logs.bytes`, `core.logs.tokens` and below.
"""
