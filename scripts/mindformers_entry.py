"""Run a MindFormers YAML through MindFormers' public API (`MindFormerConfig`, `build_context`, `Trainer`).

Why our own entry: `run_mindformer.py` is not in the MindFormers wheel and other projects' code is not copied
here; these few lines do what it does for the options ShardScope needs, with the same flags (`--config`,
`--run_mode`, `--register_path`), so a launch line written for `run_mindformer.py` works with this file too.
Run it with the suite's own interpreter (e.g. /work/cache/suites/mindformers/bin/python), never the app's venv.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

RUN_MODES = ("train", "finetune", "eval", "predict")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The subset of run_mindformer.py's flags that a training launch uses."""
    p = argparse.ArgumentParser(description="run a MindFormers YAML (train / finetune / eval / predict)")
    p.add_argument("--config", required=True, help="MindFormers YAML")
    p.add_argument("--run_mode", choices=RUN_MODES, default=None, help="overrides the YAML's run_mode")
    p.add_argument(
        "--register_path",
        default=None,
        help="folder of modules named by `auto_register` in the YAML (e.g. a CPU training wrapper)",
    )
    p.add_argument("--output_dir", default=None, help="overrides the YAML's output_dir")
    p.add_argument(
        "--use_parallel",
        choices=("True", "False"),
        default=None,
        help="overrides the YAML's use_parallel (ShardScope passes True for more than one worker)",
    )
    return p.parse_args(argv)


def use_register_path(path: str) -> str:
    """Make `auto_register: module.Class` entries loadable: MindFormers reads REGISTER_PATH when it builds them."""
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise SystemExit(f"--register_path {path!r} is not a folder")
    os.environ["REGISTER_PATH"] = real
    if real not in sys.path:
        sys.path.append(real)
    return real


def main(argv: Sequence[str] | None = None) -> int:
    """Build the context and the trainer from the YAML, then run the chosen mode."""
    args = parse_args(argv)
    if not os.path.isfile(args.config):
        raise SystemExit(f"--config {args.config!r} is not a file")
    if args.register_path:
        use_register_path(args.register_path)
    from mindformers import MindFormerConfig, Trainer, build_context  # the suite's venv only

    config = MindFormerConfig(os.path.realpath(args.config))
    if args.run_mode:
        config.run_mode = args.run_mode
    if args.output_dir:
        config.output_dir = args.output_dir
    if args.use_parallel is not None:
        config.use_parallel = args.use_parallel == "True"
    if os.environ.get("MS_ROLE") == "MS_SCHED" and not config.use_parallel:
        # msrun also starts this script as its scheduler; a stand-alone job never calls init(), so the
        # scheduler would train a second copy of the model (and write rank 0's logs twice): it has nothing to do
        print("stand-alone job (use_parallel: False): the scheduler has nothing to schedule", flush=True)
        return 0
    build_context(config)
    trainer = Trainer(config)
    mode = config.run_mode or "train"
    if mode in ("train", "finetune"):
        trainer.train() if mode == "train" else trainer.finetune()
    elif mode == "eval":
        trainer.evaluate(eval_checkpoint=config.load_checkpoint)
    else:
        trainer.predict(predict_checkpoint=config.load_checkpoint, input_data=config.get("input_data"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
