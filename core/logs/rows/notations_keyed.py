"""Notations of lines found by their start (core.logs.tokens.lexicon.KEYED_START: no loss keyword on them), one entry
each with real samples: Marian's `Ep. : Up. : Cost` row, build-nanogpt's `<step> train <value>`, PaddlePaddle
v1's `Pass: N, Batch: N, TrainCost: X`, YOLACT's `[ 0] N || B: X | ... | T: X ||`, the char-RNN tutorial's
`N N% (Nm Ns) X` and a torch scalar printed alone, `tensor(X, device='cuda:0')`. Read with
core.logs.rows.notations_trainers' (split off to keep modules short).
"""

from __future__ import annotations

from core.logs.rows.notation import CORPUS, Notation, NotationSample
from core.logs.tokens.lexicon import NUM

__all__ = ["KEYED"]

_NANOGPT_LOG = CORPUS.format(
    "https://github.com/fibonacci-2/aladdin/blob/4972d368a3c37ff9ce898010270c77006a7fff84/log/log.txt",
    "build-nanogpt-bare-step-train-value-lines-no-loss-word-173-rows_aladdin-log-txt",
)
_PADDLESPEECH = "https://github.com/PaddlePaddle/PaddleSpeech/issues/112"
_YOLACT = CORPUS.format(
    "https://github.com/dbolya/yolact/issues/318",
    "yolact-bracketed-epoch-not-rank-letter-losses-b-c-m-s-total-t_yolact-318",
)
_CHAR_RNN = CORPUS.format(
    "https://github.com/pytorch/tutorials/issues/847",
    "char-rnn-bare-loss-column-turns-nan-no-loss-word_pytorch-tutorials-847",
)
_YOLACT_LETTERS = (b"B", b"C", b"M", b"P", b"D", b"E", b"S", b"I")  # its train.py's `loss_types`, in print order
_CHATGLM = CORPUS.format(
    "https://github.com/lich99/ChatGLM-finetune-LoRA/issues/32",
    "print-loss-tensor-then-nan-to-the-end_chatglm-finetune-lora-32",
)
_MARIAN_ENTRY = "marian-ep-up-cost-rows-then-util-exception-illegal-memory-access-core-dumped_marian-120"

KEYED: tuple[Notation, ...] = (
    Notation(
        "marian_ep_up_cost",
        "Marian NMT's training row `[2017-10-24 10:08:52] Ep. 1 : Up. 590 : Sen. 308701 : Cost 85.70 : Time 6.02s : "
        "15248.24 words/s` (a keyword line by its start, core.logs.tokens.lexicon.KEYED_START): `Cost` the loss, "
        "`Up.` the step (updates), `Ep.` the epoch, `Sen.` (sentences seen), `Time` (seconds per display, `time_s`) "
        "and `words/s` metrics",
        (
            NotationSample(
                "[2017-10-24 10:08:52] Ep. 1 : Up. 590 : Sen. 308701 : Cost 85.70 : Time 6.02s : 15248.24 words/s",
                CORPUS.format("https://github.com/marian-nmt/marian/issues/120", _MARIAN_ENTRY),
                {"loss": 85.7, "epoch": 1, "step": 590, "sen": 308701, "time_s": 6.02, "words_s": 15248.24},
            ),
        ),
        pattern=rb"(?i)(?<![\w.])Ep\.[ \t]+(?P<epoch>\d+)[ \t]+:[ \t]+Up\.[ \t]+(?P<step>\d+)[ \t]+:"
        rb"(?:[ \t]+Sen\.[ \t]+(?P<sen>\d+)[ \t]+:)?[ \t]+Cost[ \t]+(?P<loss>" + NUM + rb")(?![\w.])"
        rb"(?:[ \t]+:[ \t]+Time[ \t]+(?P<time_s>\d+(?:\.\d+)?)s(?![\w.])"
        rb"(?:[ \t]+:[ \t]+(?P<words_s>\d+(?:\.\d+)?)[ \t]+words/s(?![\w.]))?)?",
    ),
    Notation(
        "step_split_value",
        "build-nanogpt's log.txt: `<step> train <value>` alone on a line is a training row, its loss named by no key "
        "(a keyword line by its start, core.logs.tokens.lexicon.KEYED_START); `<step> val <value>`, its evaluation, is "
        "no row",
        (
            NotationSample("0 train 11.226211", _NANOGPT_LOG, {"loss": 11.226211, "step": 0}),
            NotationSample("1 train 11.192025", _NANOGPT_LOG, {"loss": 11.192025, "step": 1}),
        ),
        pattern=rb"(?i)^(?P<step>\d+) train (?P<loss>" + NUM + rb")[ \t]*$",
    ),
    Notation(
        "paddle_v1_pass_batch_cost",
        "PaddlePaddle v1's event handler's row (DeepSpeech2's `Pass: 0, Batch: 1, TrainCost: 93.167046`; the book's "
        "`Pass 0, Batch 0, Cost 2.30`): a keyword line by its start (core.logs.tokens.lexicon.KEYED_START), the pass "
        "the epoch, the batch the step, `Cost` / `TrainCost` the training loss (the objective the trainer minimises, "
        "as Marian's `Cost`; a `cost` elsewhere is no loss key: `time cost`, `batch_cost` are times)",
        (
            NotationSample(
                "Pass: 0, Batch: 1, TrainCost: 93.167046", _PADDLESPEECH, {"loss": 93.167046, "epoch": 0, "step": 1}
            ),
            NotationSample(
                "Pass: 0, Batch: 13, TrainCost: 37.709978", _PADDLESPEECH, {"loss": 37.709978, "epoch": 0, "step": 13}
            ),
        ),
        pattern=rb"(?i)^pass:?[ \t]+(?P<epoch>\d+),[ \t]+batch:?[ \t]+(?P<step>\d+),[ \t]+(?:train[ _]?)?cost:?[ \t]*"
        rb"(?P<loss>" + NUM + rb")(?![\w.])",
    ),
    Notation(
        "bracket_epoch_letter_losses_total",
        "YOLACT's training row `[  0]     520 || B: 3.451 | C: 2.964 | M: 4.671 | S: 0.945 | T: 12.031 || ETA: ... || "
        "timer: 1.364` (a keyword line by its start, core.logs.tokens.lexicon.KEYED_START): the epoch in brackets, the "
        "iteration, then `||` and the loss parts by one capital letter each (those of its train.py's `loss_types`, "
        "`B C M P D E S I`, the config's in that order), `T` their total, the training loss; the parts and the "
        "`timer` are metrics (`ETA: 2 days, 4:31:22` a duration, none)",
        (
            NotationSample(
                "[  0]     520 || B: 3.451 | C: 2.964 | M: 4.671 | S: 0.945 | T: 12.031 || ETA: 2 days, 4:31:22 || "
                "timer: 1.364",
                _YOLACT,
                {
                    "loss": 12.031,
                    "epoch": 0,
                    "step": 520,
                    "B": 3.451,
                    "C": 2.964,
                    "M": 4.671,
                    "S": 0.945,
                    "timer": 1.364,
                },
            ),
            NotationSample(
                "[  0]     630 || B: 3.308 | C: 2.604 | M: 4.506 | S: 0.904 | T: 11.322 || ETA: 2 days, 4:12:57 || "
                "timer: 1.271",
                _YOLACT,
                {"loss": 11.322, "epoch": 0, "step": 630, "eta": None},
            ),
        ),
        pattern=rb"^\[ *(?P<epoch>\d+)\] +(?P<step>\d+) \|\|"
        + b"".join(rb"(?: " + k + rb": (?P<" + k + rb">" + NUM + rb") \|)?" for k in _YOLACT_LETTERS)
        + rb" T: (?P<loss>"
        + NUM
        + rb")(?![\w.])",
    ),
    Notation(
        "iteration_percent_elapsed_bare_loss",
        "The PyTorch char-RNN tutorial's progress row `5000 5% (0m 12s) 2.4177 Coelho / Portuguese ✓` (a keyword "
        "line by its start, core.logs.tokens.lexicon.KEYED_START): the iteration, the percent done, the elapsed "
        "`(Nm Ns)`, then the running loss with no key (then the sample's name, guess and mark, no number read)",
        (
            NotationSample("5000 5% (0m 12s) 2.4177 Coelho / Portuguese ✓", _CHAR_RNN, {"loss": 2.4177, "step": 5000}),
            NotationSample(
                "35000 35% (1m 4s) nan Nam / Russian ✗ (Korean)", _CHAR_RNN, {"loss": float("nan"), "step": 35000}
            ),
        ),
        pattern=rb"^(?P<step>\d+) \d+% \(\d+m \d+s\) (?P<loss>" + NUM + rb")(?![\w.])",
    ),
    Notation(
        "lone_scalar_tensor",
        "A torch scalar printed alone on its line, `tensor(3.2207, device='cuda:0')` (a script's `print(loss)` of "
        "the loss tensor, maybe `.detach().float()`; a keyword line by its start, core.logs.tokens.lexicon."
        "KEYED_START): its value is a training row's loss. Only a whole line of one scalar: `tensor(...)` beside a "
        "bar or another tensor (Lightning's `tensor(8.8201, device='cuda:1', grad_fn=<MeanBackward1>) tensor(0.0025, "
        "...)`, two values of the user's print) or a matrix `tensor([[...` is no row",
        (
            NotationSample("tensor(3.2207, device='cuda:0')", _CHATGLM, {"loss": 3.2207}),
            NotationSample("tensor(nan, device='cuda:0')", _CHATGLM, {"loss": float("nan")}),
            NotationSample(
                "tensor(8.8201, device='cuda:1', grad_fn=<MeanBackward1>) tensor(0.0025, device='cuda:1')",
                CORPUS.format(
                    "https://github.com/Lightning-AI/pytorch-lightning/issues/3441",
                    "lightning-bar-glued-to-per-device-tensor-prints-cuda-0-1_lightning-3441",
                ),
                None,
            ),
        ),
        pattern=rb"^tensor\((?P<loss>" + NUM + rb")(?:, device='[\w:]+')?(?:, grad_fn=<\w+>)?(?:, requires_grad=True)?"
        rb"\)[ \t]*$",
    ),
)
