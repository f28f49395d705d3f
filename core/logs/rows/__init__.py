"""Stage 3, rows: the grammar of a line's numbers, the series choice per file, and one file's lines as rows.

The grammar (a line -> what it says):
  general.py    the general line reader (`read_line`: loss key + number in every notation, eval lines, every
                metric)
  linetemplates.py  line shapes (`LineTemplate`: one parse reused for every line of the same shape)
  splitrows.py  several rows on one line: a counter `Epoch #N` repeated on it (an e-mail's re-wrap) parts it
  keys.py       a metric key's column name and its value's unit (a time without a unit is in seconds)
  splitkeys.py  a split's name glued to a loss key (`trloss`, `valloss`): the reader's loss key, an eval's
  unitfirst.py  a value before the unit that names it (`(0.512 sec/step)`, `| 113.4k tok/s |`)
  fieldshapes.py  metrics in field shapes the `key: value` pair misses (`total used time 7.17 (s)`), unitfirst's too
  linetime.py   a line's leading timestamp as its row's time
  keylines.py   one key per line: a record's parts (SB3's `| key | value |` table, TTS's `| > key: value`, a `loss/`
                group's) are no rows, only its whole `loss` line is (a lone `mean loss: X` too)
  notation.py   the shape of a notation entry (`Notation`, `NotationSample`)
  notations_more.py  more notations (the issue-30 gaps' lines), read after notations.py's
  notations_trainers.py  trainers' and tools' own lines (W&B's run summary, an RL trainer's PPO row)
  notations_spellings.py  a key's other spellings (`losses: X`), a CSV's unnamed index and `time` columns, fields'
                other shapes, read after those
  notations_keyed.py  lines found by their start (Marian's row, build-nanogpt's `0 train X`, Paddle v1's `Pass: N,
                Batch: N, Cost X`), read with those
  notations_shapes.py  round 11's line shapes (`trloss`, `Epoch is [1/600]`, `Epoch: 1| loss`), read after those
  notations_blocks.py  round 12's one-key-per-line blocks (a lone `mean loss: X`, `mean loss/overall_loss: X`),
                read after those
  notations_rows12.py  round 12's (`val=0.55` a metric before the loss, a CSV's date column), read after those
  notations.py  every notation as data, one entry each: real samples, the reading they must give, a
                pattern when the general reader does not read it (`NOTATIONS`)
  formats.py    the suites' sample lines (`FORMATS`, the `suite` notations) + `parse_loss_line`, the user regex
  failure_kinds.py  every failure kind as data, one entry each: pattern, anchors, real samples (`FAILURE_KINDS`,
                `LAUNCHER_REPORTS`)
  failure_kinds_more.py  more failure kinds and launcher reports, read after failure_kinds.py's
  failure_kinds_late.py  round 8's failure kinds and launcher reports, read after failure_kinds_more.py's
  failure_entry.py  the shape of a failure-kind entry (`FailureKind`, `LauncherReport`, `FailureSample`)
  failures.py   failure lines by kind behind any prefix, compiled from failure_kinds.py; which failures ended a rank
  taskends.py   a launcher's word that its tasks ended badly (`task_end`), compiled from the `LauncherReport`s
  kills.py      a scheduler's kill followed by one row only (the killed task's late flush) still ended the run
  trainedon.py  failures that training rows of their own rank followed did not end it (undone when those rows
                turn out another rank's)
  childfailed.py  when each failure of torchrun's ChildFailedError report happened (its block's `time` field), whose
                its blocks' `traceback :` fields are, and when its header is the job's word
  relaunch.py   a launch appended after a failure (the file's opening lines again, maybe with other numbers): the
                failure was the earlier one's
  launches.py   several launches in one file: a traceback after a hole of NULs (a truncation under a running
                writer) supersedes one before it
  tracebacks.py a traceback's header opens a failure, its exception line closes it (context, time, rank)
  chains.py     a chained traceback: Python's fixed line between two tracebacks, kept on the earlier failure
  linekinds.py  what a line is to the line-by-line parser, told by its text alone
  lineprefix.py a file's own line prefix, learnt from a traceback header found inside a line (a pipeline's
                `svc_1  | `, loguru's or glog's head): the failure's later lines are read behind it
  lineranks.py  whose line it is when one stream carries several ranks (`[1,3]<stdout>:`, `[rank6]:`,
                `Rank: N;`, a trailing `rank N`, pdsh's `host: `): the rank sources with their real lines
  processes.py  which process wrote an error line (`(PID:758, ...)`, `[PID: 758]`, `ME(758,...)`): one process's
                error lines share the rank one of them names (`process_rank`), the pid sources with their real lines
  columns.py    a column table: a header line of names (one a loss key) over keyless rows of numbers (YOLO's
                `Epoch GPU_mem box_loss ...`), a `Class ... mAP` header over its `all` evaluation line
  columnfile.py a file's column table: its last header remembered, the rows under it read into its rows
  memory.py     the device-memory statistic lines MindSpore prints
  shapes.py     help for unread formats (frequent numeric line shapes) and metric labels

A file's lines -> rows (the same reading on every path):
  seam.py       the one seam behind which the fast readers sit: `Seam` decides, with every threshold of
                `ReaderSettings`, which path reads a block and counts what each read (`ReadPath`):
                  USER       the user's regex on every line
                  LINE       candidates found by one sre search, each through `Parser.parse_line` (a live tick)
                  BULK       candidates found by numpy / the compiled passes, LossMonitor rows in numpy
                  TEMPLATED  within BULK, lines of known shapes as rows by their templates (templated.py)
                  BATCHED    never-read small worker logs parsed in one buffer (smallfiles.py, `feed_many`)
                (every notation and failure kind sample is read on each: tests/test_grammar_entries)
  parser.py     one file's complete lines -> rows, timings, errors (`feed`, `feed_many`: the seam's paths)
  filestate.py  one file's parse state, which key is the training loss (the series choice)
  series.py     which loss lines are one-off summaries (a trainer's final dict, an epoch's pipe-table summary)
  sidelines.py  a row assembled from several lines: a step's metrics on lines of their own beside its loss line
                (Caffe's `Iteration 200, lr = 0.01`, SB3's table cells, OLMo's block lines) are columns of its row
  redraws.py    a progress bar's redraw of the same values (tqdm's `N/M [elapsed<eta`) is no second row
  templated.py  lines of a known shape as rows in numpy
  evalshapes.py evaluation lines of a known shape read by their template (no row: the bulk path leaves them)
  ansishapes.py loss lines with terminal codes of a known shape read by a template of what is left of them
  plainmemo.py  plain lines read to nothing, remembered by their text: the bulk path skips their copies
  smallfiles.py many short rank logs parsed together in batches
  perfile.py    the training series decided per file over its rows (epoch summaries beside step rows, a step
                printed twice in a rarer shape, a step's echo naming fewer values, an average beside its rows)
  wording.py    which rows' loss key says it averages (`avg_loss=`) or names a part (`policy_loss`), for perfile.py
  echoes.py     which rows a second logger printed again (`INFO:tensorflow:` then absl's `I0529 ...]`), for perfile.py
  table.py      the run's loss table, grown in place; asks perfile.py which rows are set aside; evaltable.py its
                evaluation entries, converted once each; kept.py the rows a file's series choice keeps, held
                between a watcher's snapshots (each tick appends its own)
  room.py       storage for those columns grown in place: small pages only (a huge page's first write stalled
                a tick ~5 ms each)
  nanroom.py    storage for the table's other metrics: a copy-on-write mapping of one NaN file, so a row no line
                names a metric on reads NaN without a write (a tick wrote NaN into ~270 columns)
  runranks.py   which ranks a file makes ranks of the run (a launcher's reported ranks, its own rank when it has
                lines of its own) and which of its error lines are the job's (the launcher's)
  snapshot.py   `RunSnapshot`, what a read hands over; cells.py: typed numbers from its cells
  reader.py     `RunReader` / `read_run`: every file from its saved offset to its last complete line

Imports only `core.logs.bytes`, `core.logs.tokens` and below.
"""
