"""A MindFormers training wrapper whose overflow check runs on CPU (loaded by `auto_register`, see
scripts/mindformers_cpu.sh).

Why: MindFormers' `MFTrainOneStepCell` asks MindSpore's loss-scale cell for the overflow status, which uses
`NPUGetFloatStatusV2` / `FloatStatus`, kernels the CPU backend does not have. Here the status is "some
gradient is not finite", an IsFinite reduction over the gradients that every backend runs.
"""

from __future__ import annotations

from mindformers.wrapper.wrapper import MFTrainOneStepCell
from mindspore import dtype as mstype
from mindspore import ops

_count_non_finite = ops.MultitypeFuncGraph("count_non_finite")


@_count_non_finite.register("Tensor")
def _non_finite(grad):
    """Number of NaN / inf entries of one gradient, as a float32 scalar."""
    return ops.cast(ops.logical_not(ops.isfinite(grad)), mstype.float32).sum()


class CPUTrainOneStepCell(MFTrainOneStepCell):
    """`MFTrainOneStepCell` with an overflow check that needs no Ascend float-status kernel."""

    def get_overflow_status(self, status, compute_output):
        """True when any gradient holds a NaN or an inf (the meaning of MindFormers' `overflow cond`)."""
        counts = self.hyper_map(_count_non_finite, compute_output)
        total = ops.addn(counts)
        total = ops.depend(total, status)
        return total > 0
