#!/usr/bin/env bash
# Set up the peer of benchmarks/lm_finetune_speed.py in its own venv (idempotent).
#
#   bash benchmarks/peers/setup_finetune.sh
#
#   benchmarks/.venvs/opacus-peft/  Opacus 1.6.0 + peft 0.21.2 (low-rank adapters) on the
#                                   project's torch and transformers versions
#
# The peer fine-tunes SmolLM2-135M as Opacus's and peft's documentation show: peft's LoRA on
# the top layers, Opacus's PrivacyEngine over the whole network. The model is handed over as a
# Hugging Face folder written by the benchmark from the project's offline GGUF, so nothing is
# downloaded. Everything installed here is git-ignored.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=benchmarks/peers/_venv.sh
source "$HERE/_venv.sh"  # make_venv

make_venv opacus-peft opacus==1.6.0 peft==0.21.2 torch==2.13.0 transformers==5.25.0 safetensors
