#!/usr/bin/env bash
# ddp-step.sh [OUT_DIR]: median step time of `train` (overlap on, overlap off; mpi and gloo
# backends) against PyTorch DDP over Gloo (bench/torch_ddp_train.py, Debian's python3-torch),
# same model, batch, optimizer and world size, one thread per rank, at np 1, 2, 4, for the MLP
# at batch 32 and 64 per rank and resnet18 at 8. Each configuration runs REPS times (default 5),
# the four runs of a repetition back to back, in an order that alternates; the page takes the
# median run, and the ratios to PyTorch per repetition (this machine's speed drifts by more than
# the differences over minutes: only runs next to each other compare). For the MLP also PyTorch 2's
# DDP (the same script on .venv-torch2's torch 2.13), in the same repetitions.
# Also the step timer's own cost. Writes OUT_DIR/ddp-step.jsonl and its section of docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
out=${1:-$root/bench/results}
reps=${REPS:-5}
mkdir -p "$out"
results=$out/ddp-step.jsonl
: >"$results"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One thread per rank for both sides: LibTorch's set_num_threads does not reach OpenBLAS.
export OPENBLAS_NUM_THREADS=1
# Both sides with the allocator settings ddprun gives its ranks (docs/launcher.md, "Memory reuse"),
# so that neither pays glibc returning each step's tensors to the kernel: taken from ddprun's plan.
malloc_env=$("$build/launcher/ddprun" --dry-run -np 1 /bin/true | grep -o 'MALLOC_[A-Z_]*=[0-9]*')
[[ -n $malloc_env ]] || { echo "ddp-step.sh: ddprun --dry-run shows no MALLOC_ setting" >&2; exit 1; }
# shellcheck disable=SC2086 # one VAR=VALUE a word
export $malloc_env
mpirun=(mpirun --oversubscribe --bind-to none)
torch2=${DDP_PYTHON_TORCH2:-$root/.venv-torch2/bin/python}  # scripts/install-deps.sh makes it
"$torch2" -c 'import torch' || { echo "ddp-step.sh: $torch2 has no torch 2 (run scripts/install-deps.sh)" >&2; exit 1; }

ours() {  # ours REP IMPL MODEL NP BATCH STEPS TRAIN_ARGS...
  local rep=$1 impl=$2 model=$3 np=$4 batch=$5 steps=$6
  shift 6
  local out line params
  out=$("${mpirun[@]}" -np "$np" "$build/examples/train" --model "$model" --batch-size "$batch" \
          --steps "$steps" --threads 1 "$@")
  # train: model=M params=P ...  and  train: steps=N step_ms_median=X samples_per_s=Y loss=Z ...
  line=$(grep '^train: steps=' <<<"$out")
  params=$(grep -o ' params=[0-9]*' <<<"$out" | head -1)
  local ms=${line#*step_ms_median=}
  ms=${ms%% *}
  echo "{\"rep\": $rep, \"impl\": \"$impl\", \"model\": \"$model\", \"np\": $np, \"batch\": $batch, \"params\": ${params#*=}, \"step_ms_median\": $ms}" >>"$results"
}

for config in mlp:32:200 mlp:64:200 resnet18:8:8; do
  IFS=: read -r model batch steps <<<"$config"
  for np in 1 2 4; do
    for rep in $(seq "$reps"); do
      echo "== $model batch $batch np=$np run $rep/$reps" >&2
      order=(mpi mpi-no-overlap gloo pytorch)
      [[ $model == mlp ]] && order+=(pytorch2)
      ((rep % 2 == 0)) && order=($(printf '%s\n' "${order[@]}" | tac))
      for impl in "${order[@]}"; do
        case $impl in
          mpi) ours "$rep" ours-mpi "$model" $np $batch $steps --backend mpi ;;
          mpi-no-overlap) ours "$rep" ours-mpi-no-overlap "$model" $np $batch $steps --backend mpi --no-overlap ;;
          gloo) ours "$rep" ours-gloo "$model" $np $batch $steps --backend gloo ;;
          pytorch) /usr/bin/python3 "$root/bench/torch_ddp_train.py" "$model" $np $batch $steps |
                     sed "s/^{/{\"rep\": $rep, /" >>"$results" ;;
          pytorch2) "$torch2" "$root/bench/torch_ddp_train.py" "$model" $np $batch $steps |
                      sed "s/^{/{\"rep\": $rep, /; s/\"impl\": \"pytorch-ddp-gloo\"/\"impl\": \"pytorch2-ddp-gloo\"/" >>"$results" ;;
        esac
      done
    done
  done
done
"$build/bench/step_timer_overhead" >"$out/step-timer.json"
/usr/bin/python3 "$root/bench/ddp_report.py" "$results" "$out/step-timer.json" |
  tee /dev/stderr | /usr/bin/python3 "$root/bench/update_section.py" "$root/docs/benchmarks.md" ddp-step
