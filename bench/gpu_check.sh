#!/usr/bin/env bash
# The GPU check in one script, for a machine with one CUDA GPU and a CUDA build of torch already installed
# (a lent machine reaches no package index: wheels it lacks travel in .whl/, installed with --no-index).
#   bash bench/gpu_check.sh            # under 10 min on an H200 (the step limits add to 570 s): CUDA tests, correctness, throughput, generation
#   bash bench/gpu_check.sh --small    # the same steps on a CPU, tiny shapes (what CI-less machines can check)
# Each step has its own time limit (a step that overruns is reported and the next one runs); figures go to
# stdout and, when OUT is set, to $OUT/gpu_check.log. Exit status: the number of steps that failed.
set -uo pipefail
cd "$(dirname "$0")/.."
small=${1:-}
log=${OUT:-/tmp}/gpu_check.log
export PYTHONUNBUFFERED=1
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
failed=0
step() {  # step LIMIT_S NAME COMMAND...: run one step under its limit, say how it ended
    local limit=$1 name=$2; shift 2
    echo "== $name ($(date -u +%H:%M:%S), limit ${limit}s): $*"
    timeout --kill-after=10 "$limit" "$@"
    local rc=$?
    [ "$rc" -eq 124 ] && echo "== $name: over its limit of ${limit}s"
    [ "$rc" -eq 0 ] || { failed=$((failed + 1)); echo "== $name: FAILED (exit $rc)"; }
}
{
    python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'device', torch.cuda.get_device_name() if torch.cuda.is_available() else 'none')"
    python3 -m cli.main --version
    if [ "$small" = "--small" ]; then
        step 300 "cuda tests" python3 -m pytest -q -m cuda tests/test_cuda.py -rs
        step 900 "correctness" python3 bench/gpu_check.py --small
        step 300 "throughput" python3 bench/train_throughput.py --gpu-check --small
        step 300 "generation" python3 bench/generation.py --sizes tiny --new 32
    else
        step 60 "cuda tests" python3 -m pytest -q -m cuda tests/test_cuda.py -rs
        step 200 "correctness" python3 bench/gpu_check.py
        step 200 "throughput" python3 bench/train_throughput.py --gpu-check --budget-s 190
        step 50 "generation" python3 bench/generation.py --sizes 60M,150M,1B --device cuda --transformers
        step 60 "sharding" python3 bench/sharding.py gpu --size 150M --steps 20
    fi
    echo "== done: $failed step(s) failed"
    exit "$failed"
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
