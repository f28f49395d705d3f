"""Hypothesis strategies more than one test module draws from: import them from here, never from a
tests/test_*.py module (a test module is not a library: importing one runs its collection twice)."""

from __future__ import annotations

import math
import re

from hypothesis import strategies as st

from core.sharding.layout import INTERLEAVED, NONE

ALIASES = ["dp", "sp", "mp", "tp", "ep", "pp"]


@st.composite
def layouts_and_maps(draw: st.DrawFn, allow_interleaved: bool = True) -> tuple[tuple, tuple, list | None, tuple]:
    """A valid (device_matrix, alias_name, rank_list, tensor_map entries) quadruple."""
    n_axes = draw(st.integers(1, 4))
    sizes = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=n_axes, max_size=n_axes)))
    names = list(draw(st.permutations(ALIASES)))[:n_axes]
    if allow_interleaved and draw(st.booleans()) and n_axes > 1:
        names[-1] = INTERLEAVED
    aliases = tuple(names)
    rank_list = None
    if INTERLEAVED not in aliases and draw(st.booleans()):
        rank_list = list(draw(st.permutations(range(math.prod(sizes)))))
    ndim = draw(st.integers(0, 4))
    pool = list(draw(st.permutations(aliases)))
    entries: list = []
    for _ in range(ndim):
        kind = draw(st.sampled_from(["none", "one", "tuple"]))
        if kind == "one" and pool:
            entries.append(pool.pop())
        elif kind == "tuple" and pool:
            k = draw(st.integers(1, len(pool)))
            entries.append(tuple(pool.pop() for _ in range(k)))
        else:
            entries.append(NONE)
    return sizes, aliases, rank_list, tuple(entries)


# Worker-log lines for the log reader's property tests (tests/test_logs_*.py): noise, other lines, loss
# lines of every suite and whole logs mixing them.
NOISE = [
    b"[WARNING] ME(7587:140022789684800,MainProcess):2026-11-22-07:09:00.372.000 [mindspore/context.py:1343] "
    b"For 'context.set_context', the parameter 'device_target' will be deprecated.\n",
    b"[INFO] DISTRIBUTED(7587,7f5998a3be40,python):2026-11-22-07:09:00.377.254 [tcp_comm.cc:485] Connect] "
    b"epoch: 1 step: 2, loss is 5\n",
    b"[DEBUG] ME(1:2,MainProcess):x [a.py:1] loss is 3\n",
    b"[Epoch 3]\n",
    b"[\n",
    b"[ERRORS are not errors]\n",
    b"\n",
    b"\r\n",
]


OTHER = [
    b"Train epoch time: 146463.0 ms, per step time: 146.463 ms\n",
    b"Traceback (most recent call last):\n",
    b'  File "train.py", line 3, in <module>\n',
    b"\tepoch: 1 step: 9, loss is 9.0\n",
    b"ValueError: boom\n",
    b"RuntimeError: loss is NAN or INF\n",
    b"[ERROR] ME(123:1,MainProcess):2026-11-22-07:05:10.230.794 [a.cc:1] F] something bad\n",
    b"[CRITICAL] DISTRIBUTED(9,1,python):x [b.cc:2] The node: 3 is timed out\n",
    b"[EXCEPTION] x\n",
    b"2026-01-01 10:00:00,123 - mindformers - INFO - Epoch:[  1/  2], step:[ 5/ 10], loss: 3.25, "
    b"per_step_time: 120ms, lr: 1e-4\n",
    b"global_step: 194, loss: 1.997\n",
    b"epoch: 1 step: 2, loss is Tensor(shape=[], dtype=Float32, value= 2.30)\n",
    b"epoch: 1 step: 2, loss is 2.5 per step time: 3 ms\n",
    b"some text with a loss word\n",
    # issue 30: failures behind a launcher's tag (real lines: UNITER #31, DiffSynth-Studio #458, rev #78)
    b"[1,1]<stderr>:Traceback (most recent call last):\n",
    b'[1,1]<stderr>:  File "/opt/conda/lib/python3.6/site-packages/horovod/torch/mpi_ops.py", line 200\n',
    b"[1,1]<stderr>:RuntimeError: Horovod has been shut down.\n",
    b"[1,0]<stdout>:epoch: 1 step: 3, loss is 2.5\n",
    b"[rank4]:[E318 07:39:53.792795153 ProcessGroupNCCL.cpp:636] [Rank 4] To avoid data inconsistency, we are "
    b"taking the entire process down.\n",
    b"[uk:60506] *** Process received signal ***\n",
    b"[uk:60506] Signal: Segmentation fault (11)\n",
    b"E39999: Inner Error, Please contact support engineer!\n",
    b"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 1622990)\n",
    b" iteration      700/    3000 | learning rate 6.300E-06 | lm loss NAN | loss scale 64.0 |\n",
    b" iteration      800/    3000 | learning rate 6.300E-06 | lm loss 4.980000E+00 | loss scale 0.1 |\n",
    b"2023-01-30 18:47:07,107 DEBUG TRAIN Batch 4/203700 loss 12.646465 loss_att 10.921429 lr 0.00032621 rank 0\n",
    b"2023-01-30 18:49:55,773 DEBUG CV Batch 4/0 loss 28.517015 loss_att 24.142754 history loss 27.957858 rank 2\n",
    b"{'loss': 0.0117, 'learning_rate': 4.5e-05, 'epoch': 1.0}\n",
    b"{'train_runtime': 11591.6409, 'train_samples_per_second': 6.211, 'train_loss': 0.00295, 'epoch': 10.0}\n",
    b"Epoch 1 completed with avg loss: 2.4179, learning rate: 0.003\n",
    # issue 30's new corpus logs (tests/fixtures/real_logs): notations, summaries, tags, launcher reports
    b"[auc-dnn3] 2021-10-02 20:13:30,249 (trainer:653) INFO: 4epoch:train:201-225batch: l1_loss=0.252, "
    b"mse_loss=0.070, loss=0.345, optim0_lr0=1.000e-03\n",
    b"[PC] 2020-11-11 16:41:04,070 (trainer:243) INFO: 7epoch results: [train] loss=1.613, [valid] loss=1.854\n",
    b"Epoch 0: :   3%| | 9000/301500 [1:42:42<55:37:46, reduced_train_loss=nan.0, val_loss=7.040]\n",
    b"Epoch 0: :   3%| | 9001/301500 [1:42:43<55:37:46, reduced_train_loss=7.250, val_loss=7.040]\n",
    b"completed step: 1, seconds: 0.631, TFLOP/s/device: 5688.282, loss: 12.979, perplexity: 433358.281\n",
    b"Epoch [0/5]; Iter [0/9450]; Loss 10.08; LR 1.00e-06; Iter time 3.72; ETA 9:46:15; Mem 29072.79MB\n",
    b"iter 1631: loss 4.0863, time 561.94ms\n",
    b"valid loss \xe4\xb8\xba: 3.3792779445648193\n",
    b"    validation: 4395520\n",
    b"[rank2]: Traceback (most recent call last):\n",
    b'[rank2]:   File "/lus/scratch/builder/pytorch_dist_resnet_benchmark.py", line 301, in <module>\n',
    b"(TaskRunner pid=30188) RuntimeError: HCCL function error: hcclCommInitRootInfoConfig(), error code is 4\n",
    b" AssertionError: Rank 114: found NaN in local forward loss calculation. Device: 2,\n",
    b"  rank      : 1 (local_rank: 1)\n",
]


SPECIAL_VALUES = [
    b"4.52",
    b"2.297702297702298",
    b"0.30000000000000004",
    b"-0.0",
    b"+1.5",
    b".5",
    b"5.",
    b"007",
    b"0",
    b"nan",
    b"NaN",
    b"-nan",
    b"inf",
    b"-Infinity",
    b"infinity",
    b"1e-5",
    b"1E+3",
    b"-2.5e10",
    b"9007199254740993",
    b"9007199254740992",
    b"123456789012345678",
    b"1234567890123456789",
    b"12345678901234567890.5",
    b"0.000000000000000000000001",
    b"0.1234567890123456789",
    b"1e",
    b"1.5.2",
    b"3x",
    b"abc",
    b"-",
]


def value_text() -> st.SearchStrategy[bytes]:
    finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
    return st.one_of(
        st.sampled_from(SPECIAL_VALUES),
        finite.map(lambda x: repr(x).encode()),
        st.tuples(finite, st.integers(1, 17)).map(lambda t: b"%.*g" % (t[1], t[0])),
        st.tuples(finite.filter(lambda x: abs(x) < 1e6), st.integers(0, 12)).map(lambda t: b"%.*f" % (t[1], t[0])),
    )


def loss_line() -> st.SearchStrategy[bytes]:
    ints = st.one_of(st.integers(0, 5000), st.sampled_from([123456789012, 99999999999, 10**20])).map(
        lambda i: str(i).encode()
    )
    return st.builds(
        lambda e, c1, s, c2, v, tail, cr: (
            b"epoch: " + e + c1 + b" step: " + s + c2 + b" loss is " + v + tail + cr + b"\n"
        ),
        st.one_of(ints, st.just(b"0001")),
        st.sampled_from([b",", b""]),
        ints,
        st.sampled_from([b",", b""]),
        value_text(),
        st.sampled_from([b"", b"", b"", b"", b" extra", b"\r"]),
        st.sampled_from([b"", b"", b"", b"\r"]),
    )


def general_line() -> st.SearchStrategy[bytes]:
    """Loss lines of the other suites (bracketed prefixes, paired and scientific values, other metrics)."""
    shapes = [
        b"[2026-11-23 19:07:06] mindcv.utils.callbacks INFO - Epoch: [%d/3], batch: [%d/8], loss: %s, "
        b"lr: %s, time: %ss",
        b"[INFO] 2026-11-23 19:14:00,332 [mindformers/core/callback/callback.py:747] print_output_info: "
        b"{ Epoch:[  %d/  4], step:[    %d/   16], loss:[%s/%s], per_step_time: 4503ms, lr: 0.003, "
        b"overflow cond: False, loss_scale: 1.0, global_norm: [0.73903346], train_throughput_per_npu: 0.000T",
        b" iteration      %d/  %d | elapsed time per iteration (ms): 865.2 | learning rate: %s | lm loss: %s |"
        b" loss scale: 1.0 | grad norm: 0.231 |",
        b"[2024-03-04 12:02:42] mindocr.utils.callbacks INFO - epoch: [%d/20] step: [%d/4468], loss: %s, "
        b"lr: %s, per step time: 223.489 ms, fps per card: 4.47 img/s",
        b"2023-10-30 09:39:35,587 - INFO - Epoch: [  %d/ 30], Average Train Loss: [%s], Accuracy: [%s]",
        b" Accuracy: 83.8%%, Avg loss: %s [%d/%d]",
        b"[2026-11-23 21:22:20] mindcv.utils.callbacks INFO - Validation Top_1_Accuracy: %s%%, step %d/%d",
        b"\x1b[32mstep %d/%d train_loss=%s val_loss=%s\x1b[0m",
        # issue 30: no `loss` word (OpenNMT-py's xent and ppl, DeepSpeed's perplexity), MLX's multi-word keys
        b"[2019-03-21 18:31:43,773 INFO] Step %d/%d; acc:  31.18; ppl: %s; xent: %s; lr: 0.00028; 5092/261 tok/s",
        b"[2019-03-21 18:31:43,773 INFO] Validation perplexity: %s",
        b"Step at %d with Perplexity: %s",
        b"Iter %d: Train loss %s, Learning Rate %s, It/sec 0.999, Trained Tokens %d, Peak mem 8.104 GB",
    ]

    def fill(shape: bytes, ints: list[int], values: list[bytes]) -> bytes:
        parts, i, v = [], 0, 0
        for piece in re.split(rb"(%[ds])", shape):
            if piece == b"%d":
                parts.append(b"%d" % ints[i])
                i += 1
            elif piece == b"%s":
                parts.append(values[v])
                v += 1
            else:
                parts.append(piece.replace(b"%%", b"%"))
        return b"".join(parts) + b"\n"

    return st.builds(
        fill,
        st.sampled_from(shapes),
        st.lists(st.integers(0, 5000), min_size=4, max_size=4),
        st.lists(value_text(), min_size=4, max_size=4),
    )


def log_text() -> st.SearchStrategy[bytes]:
    line = st.one_of(
        loss_line(), loss_line(), loss_line(), st.sampled_from(NOISE), st.sampled_from(OTHER), general_line()
    )
    run = st.lists(loss_line(), min_size=1, max_size=12).map(b"".join)  # a burst of loss lines
    return st.lists(st.one_of(line, run), max_size=40).map(b"".join)


PLAIN = [  # text lines that are candidates (no `[` prefix) but carry nothing: what _worth_a_look skips
    b"Number of epochs: 3\n",
    b"Learning rate: 0.01\n",
    b"  model: resnet18\n",
    b"Auto augment: None\n",
    b"[2026-11-23 21:19:43] mindcv.train INFO - Start training\n",
]


RARE = [  # lines that must still reach the line parser from among the plain ones
    b"Segmentation fault (core dumped)\n",
    b"run.sh: line 7: 4242 Killed  python train.py\n",
    b"malloc_consolidate(): invalid chunk size\n",
    b"EI0002: The wait execution of the Notify register times out.\n",
    b"[2026-11-23 21:19:43] mindcv.train ERROR - HCCL timed out on rank 3\n",
    b"KeyboardInterrupt\n",
    b"KeyboardInterrupt\r\n",
    b"mindspore.common.api.RuntimeFailure: boom\n",
    b"Epoch 1/3, Step 2/8, step time: 12.5 ms\n",
    b"Train epoch time: 146463.0 ms, per step time: 146.463 ms\n",
    b"[2026-11-23 21:19:43] x CRITICAL - dead\n",
    b"Fatal Python error: Aborted\n",
    # issue 30's new corpus logs: trainer stops, launcher reports, Ascend wrapper codes, absl's signal report
    b"Exception in main training loop: Caught RuntimeError in replica 0 on device 0.\n",
    b"Loss in not finite. Terminate training.\n",
    b"-- Process 2 terminated with the following error:\n",
    b"ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers, the trainer process with "
    b"rank=[3] was aborted. Please check its log.\n",
    b"Out of memory error on GPU 0. Cannot allocate 128.000000MB memory on GPU 0\n",
    b"(MegatronTrainRayActor pid=3848117) *** SIGSEGV received at time=1785913868 on cpu 169 ***\n",
]
