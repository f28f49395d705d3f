"""Stage 4, judgement: what the rows and error lines mean for each rank and for the run.

  status.py     `rank_status` (`RankState`) and the one failure judgement (`failed_ranks`) that `watch`,
                `diagnose` and the Monitor all use; `tail_lines`
  diagnose.py   stragglers, hung ranks, failure groups and the first failing rank, overflow and norm spikes
  naming.py     which of a rank's failures names it: the best-named, never an exception a chained traceback went on
                from
  victims.py    ranks only stopped from outside (a launcher's SIGTERM): no root cause; the root cause's group
  reasons.py    a failure group's reason where a launcher, msrun or the scheduler said it: paraphrase and the
                line's own words
  lookat.py     the ranks a person should look at first, and why
  metrics.py    curve maths (smoothing, global step, aggregates, bands, downsampling)
  selection.py  rank selection by expression (`0-7,512,!3`)
  streams.py    several ranks writing one untagged stream, told from the rows (`shared_streams`)

Imports only the stages below it.
"""
