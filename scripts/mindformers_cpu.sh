#!/usr/bin/env bash
# Train a tiny LLaMA with MindFormers 2.1.0 on this machine's CPU and keep MindFormers' own logs.
#
#   scripts/mindformers_cpu.sh [DIR]      (default DIR: /tmp/shardscope-mindformers-cpu)
#
# DIR receives the YAML (tiny_llama_cpu.yaml), its data (data/tiny.mindrecord, generated) and the run's
# output/ folder (output/log/rank_0/info.log and error.log are what the Monitor reads). The job is launched
# through ShardScope exactly as a user would launch their own run_mindformer.py:
#   python -m core launch --script scripts/mindformers_entry.py --python <mf-venv>/bin/python \
#       --mindformers-config DIR/tiny_llama_cpu.yaml --run-mode train --devices N --wait
# so it is a run of the workspace ($SHARDSCOPE_WORKSPACE, default ./workspace): the Monitor, Stop and `runs`
# see it; the script prints the run id and exits with the run's status.
# Environment: MF_DEVICES (default 1; 2 = data parallel over 2 workers), MF_LAUNCHER (msrun or mpirun),
# MF_EPOCHS (4), MF_MASTER_PORT (8128).
# The suite lives in its own virtualenv (created once, then cached): $MF_VENV, default
# ${XDG_CACHE_HOME:-~/.cache}/shardscope/suites/mindformers. Why its own venv: MindFormers 2.1.0 pins versions (numpy<2, pyarrow 23) that
# the app does not use, and it declares mindspore~=2.11 and hyper-parallel, which are not on the index, so the
# wheel goes in with --no-deps next to mindspore 2.10.0 (see docs: DESIGN "Suites on CPU").
# The two CPU changes are in the YAML (use_rope_slice: True) and in scripts/mindformers_cpu/cpu_wrapper.py
# (overflow check without the Ascend float-status kernel), loaded through --register_path.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-/tmp/shardscope-mindformers-cpu}"
VENV="${MF_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/shardscope/suites/mindformers}"
DEVICES="${MF_DEVICES:-1}"
PORT="${MF_MASTER_PORT:-8128}"
LAUNCHER="${MF_LAUNCHER:-msrun}"
case "$LAUNCHER" in msrun | mpirun) ;; *) echo "MF_LAUNCHER must be msrun or mpirun" >&2; exit 2 ;; esac
case "$DEVICES$PORT" in *[!0-9]*) echo "MF_DEVICES and MF_MASTER_PORT must be numbers" >&2; exit 2 ;; esac
PY311="${PYTHON311:-python3.11}"
EPOCHS="${MF_EPOCHS:-4}"

setup_venv() {  # importing mindformers creates ./output/log: probe from inside DIR, not the caller's folder
  if (cd "$DIR" && "$VENV/bin/python" -c "import mindformers, mindspore") >/dev/null 2>&1; then
    return 0
  fi
  echo "creating the MindFormers venv in $VENV (a few minutes, once)" >&2
  mkdir -p "$(dirname "$VENV")"
  "$PY311" -m venv "$VENV"
  "$VENV/bin/pip" install -q "numpy<2" "mindspore==2.10.0" "pyarrow==23.0.1" "setuptools>=83.0.0" \
    "sentencepiece>=0.2.1" "ftfy>=6.1.1" "regex>=2022.10.31" "tqdm>=4.65.0" "pyyaml>=6.0" "jieba>=0.42.1" \
    "rouge_chinese>=1.0.3" "mindpet==1.0.4" opencv-python-headless tokenizers "astunparse>=1.6.3" tiktoken \
    jinja2 setproctitle safetensors tensorboardX "deprecated>=1.2.0" pybind11 "transformers>=5.3.0" \
    "datasets>=5.0.1"
  "$VENV/bin/pip" install -q --no-deps "mindformers==2.1.0"
}

write_data() {  # 64 sequences of 65 tokens with a learnable pattern (loss falls), as MindRecord
  mkdir -p "$DIR/data"
  rm -f "$DIR/data/tiny.mindrecord" "$DIR/data/tiny.mindrecord.db"
  "$VENV/bin/python" - "$DIR/data/tiny.mindrecord" <<'PY'
import sys
import numpy as np
from mindspore.mindrecord import FileWriter

rng = np.random.default_rng(0)
writer = FileWriter(sys.argv[1], shard_num=1, overwrite=True)
writer.add_schema({"input_ids": {"type": "int32", "shape": [-1]}}, "tiny")
rows = []
for _ in range(64):
    start, stride = int(rng.integers(3, 256)), int(rng.integers(1, 4))
    seq = 3 + (start + stride * np.arange(65)) % 253
    rows.append({"input_ids": seq.astype(np.int32)})
writer.write_raw_data(rows)
writer.commit()
PY
}

write_yaml() {  # tiny legacy LLaMA, stand-alone on CPU (derived from MindFormers' llama3_1 finetune YAML)
  cat > "$DIR/tiny_llama_cpu.yaml" <<YAML
seed: 0
output_dir: './output'
load_checkpoint: ''
auto_trans_ckpt: False
only_save_strategy: False
resume_training: False
run_mode: 'train'
use_parallel: $USE_PARALLEL
use_legacy: True
load_ckpt_format: 'ckpt'
trainer:
  type: CausalLanguageModelingTrainer
  model_name: 'llama_tiny'
runner_config:
  epochs: $EPOCHS
  batch_size: 4
  sink_mode: False
  sink_size: 1
  gradient_accumulation_steps: 1
optimizer:
  type: AdamW
  betas: [0.9, 0.95]
  eps: 1.e-8
  weight_decay: 0.0
lr_schedule:
  type: CosineWithWarmUpLR
  learning_rate: 3.e-3
  lr_end: 3.e-4
  warmup_ratio: 0.0
  total_steps: -1
train_dataset: &train_dataset
  data_loader:
    type: MindDataset
    dataset_dir: "$DIR/data"
    shuffle: False
  input_columns: ["input_ids"]
  num_parallel_workers: 1
  python_multiprocessing: False
  drop_remainder: True
  repeat: 1
  numa_enable: False
  prefetch_size: 1
train_dataset_task:
  type: CausalLanguageModelDataset
  dataset_config: *train_dataset
parallel:
  parallel_mode: 0
  gradients_mean: False
  full_batch: True
  enable_parallel_optimizer: False
parallel_config:
  data_parallel: $DEVICES
  model_parallel: 1
  pipeline_stage: 1
  use_seq_parallel: False
  micro_batch_num: 1
  vocab_emb_dp: True
  gradient_aggregation_group: 4
micro_batch_interleave_num: 1
recompute_config:
  recompute: False
  select_recompute: False
  parallel_optimizer_comm_recompute: False
  mp_comm_recompute: False
  recompute_slice_activation: False
callbacks:
  - type: MFLossMonitor
    per_print_times: 1
context:
  mode: 0
  device_target: "CPU"
  max_call_depth: 10000
  save_graphs: False
  device_id: 0
model:
  model_config:
    type: LlamaConfig
    batch_size: 4
    seq_length: 64
    hidden_size: 64
    num_layers: 2
    num_heads: 4
    n_kv_heads: 2
    vocab_size: 256
    intermediate_size: 128
    rms_norm_eps: 1.0e-5
    bos_token_id: 1
    eos_token_id: 2
    pad_token_id: 0
    ignore_token_id: -100
    compute_dtype: "float32"
    layernorm_compute_type: "float32"
    softmax_compute_type: "float32"
    rotary_dtype: "float32"
    param_init_type: "float32"
    embedding_init_type: "float32"
    use_past: False
    scaling_factor: 1.0
    theta: 10000
    extend_method: "None"
    use_flash_attention: False
    use_rope_slice: True  # CPU: RoPE without the broadcast BatchMatMul that only Ascend runs
    fused_rms_norm: False
    offset: 0
    checkpoint_name_or_path: ""
    repetition_penalty: 1
    max_decode_length: 64
    top_k: 3
    top_p: 1
    do_sample: False
  arch:
    type: LlamaForCausalLM
runner_wrapper:
  auto_register: cpu_wrapper.CPUTrainOneStepCell  # scripts/mindformers_cpu/cpu_wrapper.py via --register_path
  type: CPUTrainOneStepCell
  scale_sense: 1.0
  use_clip_grad: True
profile: False
YAML
}

mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
USE_PARALLEL=False
[ "$DEVICES" -gt 1 ] && USE_PARALLEL=True
"$REPO/scripts/setup.sh"   # the dashboard's own venv (ShardScope launches the job)
setup_venv
write_data
write_yaml
rm -rf "$DIR/output"
cd "$REPO"
exec "$REPO/.venv/bin/python" -m core launch --script "$REPO/scripts/mindformers_entry.py" \
  --python "$VENV/bin/python" --mindformers-config "$DIR/tiny_llama_cpu.yaml" --run-mode train \
  --devices "$DEVICES" --launcher "$LAUNCHER" --master-port "$PORT" --workdir "$DIR" --wait \
  -- --register_path "$REPO/scripts/mindformers_cpu"
