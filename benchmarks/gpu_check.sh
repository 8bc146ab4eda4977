#!/usr/bin/env bash
# DP training on a CUDA GPU: the CUDA tests, then the language model's DP-SGD vs non-DP
# throughput (benchmarks/lm_throughput.py) at two sizes.
#
# For a device machine with PyTorch and CUDA but no network (Python 3.12; the packages
# safeshare needs beyond its image travel as wheels). Once, on a machine with PyPI:
#
#     bash benchmarks/gpu_check.sh --prepare    # wheels + the SMS texts into .gpu/ (git-ignored)
#
# Then on the GPU machine, from the repository root, with .gpu/ beside the code:
#
#     bash benchmarks/gpu_check.sh              # OUT=<folder> for the log and the JSON results
#
# About 6 minutes on one H200 (the larger case's rounds take about 110 s each); every step
# has its own time limit.
set -uo pipefail
cd "$(dirname "$0")/.."
HERE=.gpu

if [[ "${1:-}" == "--prepare" ]]; then
    set -e
    shared="${SAFESHARE_SHARED:-../shared}"
    mkdir -p "$HERE/whl" "$HERE/shared/datasets/text"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$HERE/whl" \
        pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
        dm-tree==0.1.10 dp-accounting==0.6.0 opacus==1.6.0 platformdirs==4.14.8
    cp "$shared/datasets/text/sms_spam_collection.tsv" "$HERE/shared/datasets/text/"
    du -sh "$HERE"
    exit 0
fi

OUT="${OUT:-$HERE/out}"
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_check.log") 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$HERE"/whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD/src:$PWD" SAFESHARE_SHARED="$PWD/$HERE/shared"
export PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import torch, opacus; print('torch', torch.__version__, 'cuda', torch.version.cuda,
'opacus', opacus.__version__, 'sees', torch.cuda.device_count(), 'GPU(s)')"

echo "== the CUDA tests (tests/train/test_device.py)"
timeout 240 python3 -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/train/test_device.py

echo "== throughput: width 256, 4 blocks, context 128, batch 256"
timeout 200 python3 benchmarks/lm_throughput.py --device cuda --steps 100 --repeats 3 \
    --threads 4 --json "$OUT/lm_cuda_256.json"

echo "== throughput: width 512, 8 blocks, context 256, batch 512"
timeout 300 python3 benchmarks/lm_throughput.py --device cuda --steps 40 --repeats 2 \
    --width 512 --layers 8 --heads 8 --context 256 --batch-size 512 --threads 4 \
    --json "$OUT/lm_cuda_512.json"
