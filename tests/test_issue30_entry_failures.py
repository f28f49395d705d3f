"""Issue 30: every corpus entry a round's failure rule was written for fails the ranks its log shows, named by the
words that end it, on every read path. One table (entry, ranks, words) instead of the same three lines in each
round's test file; what is particular to an entry (its diagnosis, its rows) stays in that round's file:
test_issue30_gaps5, test_issue30_round4fail, test_issue30_round4foldin, test_issue30_round5fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import CUT_TRACEBACK
from tests.helpers import READ_PATHS, read_entry


@dataclass(frozen=True)
class EntryFailure:
    """A corpus entry's end as a person reads it: the ranks that die and words every one of their reasons holds."""

    entry: str
    ranks: frozenset[int]
    words: str

    @property
    def tag(self) -> str:
        return self.entry.rsplit("_", 1)[-1]


def _case(entry: str, ranks: set[int], words: str) -> EntryFailure:
    return EntryFailure(entry, frozenset(ranks), words)


CASES = (
    # gaps5: DeepSpeed's launcher killing its workers; its exit-code report outranking the kill lines before it
    _case("deepspeed-zero2-init-then-sigkill-handler-killing-subprocess_openrlhf-977", {0}, "Killing subprocess"),
    _case("deepspeed-launcher-return-code-minus-9-during-build_deepspeed-3512", {0}, "SIGKILL"),
    # gaps5: a backtick before `[rank1]:`; torch's C++ lines of one rank; a stream naming two ranks
    _case("backtick-rank1-traceback-carets-cut-in-compute-loss_qwen3-vl-2001", {1}, "Traceback"),
    _case("composer-nccl-watchdog-rank-7-broadcast-terminate_llm-foundry-224", {7}, "Watchdog caught collective"),
    _case("nccl-watchdog-ranks-1-0-taking-process-down-block_llamafactory-74", {0, 1}, "ProcessGroupNCCL"),
    # round 4: detectron2's `Exception during training`; a CANN code behind Ray's prefix; watchdogs behind a console
    # prefix; frames without their header behind pdsh's tag; interleaved tracebacks
    _case("detectron2-events-rows-then-error-exception-during-training_transfiner-16", {0}, "during training"),
    _case("ray-taskrunner-hccl-init-EJ0001-rankid-2_verl-pr-332", {2}, "EJ0001"),
    _case(
        "composer-cloudwatch-table-tqdm-then-watchdog-ranks-38-33-39_mosaicml-diffusion-70",
        {33, 38, 39},
        "Watchdog caught collective operation timeout",
    ),
    _case("deepspeed-pdsh-worker-5-rank22-traceback-in-initialize-cut_deepspeed-6737", {22}, CUT_TRACEBACK),
    _case("megatron-nan-grad-norm-assert-rank3-interleaved_pai-megatron-patch-60", {3}, "found NaN in local grad norm"),
    # round 4 fold-in: a cut IPython traceback names its exception
    _case("jupyter-tqdm-then-typeerror-traceback-in-train-step_mindnlp-1863", {0}, f"TypeError: {CUT_TRACEBACK}"),
    # round 5: OpenMPI's report without its head; TensorFlow's divergence after a cut traceback; a NaN suffixed loss
    _case("mpirun-host-pid-prefix-segfault-backtrace-in-hccl-unloadtask_mindyolo-238", {0}, "Failing at address"),
    _case("t2t-markdown-quoted-loss-step-row-then-model-diverged-nan-traceback_tensor2tensor-106", {0}, "Traceback"),
    _case("train-iter-loss-net-nan-from-second-print-loss-scale_verse-31", {0}, "nan"),
    # round 6 fold-in: msrun's worker exit alone in a stream; fairseq's crash checkpoint; `**Killed**` in Markdown
    _case("msrun-process-entity-worker-process-exit-with-exception-one-line_mindnlp-1893", {0}, "exit with exception"),
    _case("fairseq-hydra-brackets-begin-training-then-saving-crash-pt-cut_wavprompt-3", {0}, "crash.pt"),
    _case("fastmaskrcnn-iter-regular-loss-total-loss-hyphen-then-markdown-bold-killed_fastmaskrcnn-172", {0}, "Killed"),
    # round 6: the legacy torch.distributed.launch's CalledProcessError names its task by the command's `--local_rank`
    _case("markdown-italic-calledprocesserror-local-rank-3-died-with-sigkill_swin-transformer-267", {3}, "SIGKILL"),
    # round 6: a log viewer's line numbers before a bar glued to torch's watchdog line, cut before `timeout`
    _case(
        "line-numbered-paste-hf-dict-row-bars-then-rank5-watchdog-cut_llamafactory-8261",
        {5},
        "Watchdog caught collective",
    ),
)


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.tag)
def test_the_entry_fails_its_ranks_with_the_words_that_end_it(tmp_path: Path, case: EntryFailure, path: str) -> None:
    failed = failed_ranks(read_entry(tmp_path, case.entry, path))
    assert set(failed) == case.ranks
    assert [rank for rank in sorted(failed) if case.words not in failed[rank]] == []


def test_every_entry_of_the_table_is_in_the_corpus_once() -> None:
    entries = [case.entry for case in CASES]
    assert len(set(entries)) == len(entries)
    corpus = Path(__file__).parent / "fixtures" / "real_logs"
    assert [entry for entry in entries if not (corpus / entry / "expect.json").is_file()] == []
