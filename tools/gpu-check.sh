#!/usr/bin/env bash
# The GPU check: what ddprun's NCCL path does on a real NVIDIA GPU, packed for the repository's
# fixtures (tests/data/gpu/). Run from the repository root on a machine with one or more GPUs:
#
#   tools/gpu-check.sh OUTDIR
#
# Steps, each with its own time limit, each packed into OUTDIR/gpu-check.tar.gz as it ends:
#   info       nvidia-smi, CUDA, PyTorch and NCCL versions, where libnccl/libcudart are
#   bench      ddpbench --backend nccl at one rank, NCCL_DEBUG=INFO (+ COLL) into a log file
#   console    the same at NCCL's default subsystems, printed the way users see it
#   large      an allreduce sweep to 4 GiB (-c 0): the numbers
#   duplicate  two ranks on one GPU: NCCL's refusal, as the user sees it
#   torch      PyTorch's own DDP over NCCL (bench/torch_ddp_train.py ... cuda), NCCL_DEBUG=INFO
#   build      ddpbench and train built there, against that machine's PyTorch, CUDA and NCCL
#   train      train --device cuda --backend nccl (fp32 and --amp) in a run directory with timings
#   ddprun     ddprun doctor on a GPU machine, and ddprun --profile -np 1 train --device cuda
#
# GPU_CHECK_ONLY="build ddprun" runs only the steps named.
#
# ddpbench comes from DDPBENCH (default: .devkit/bin/ddpbench, a build of this machine's kind)
# or from the build step. A kit from a Debian machine can fill what the GPU machine lacks,
# unpacked onto / without replacing any file already there: .devkit/root-deps.tar.gz (fmt,
# spdlog, CLI11, nlohmann-json) always, .devkit/root-mpi.tar.gz (OpenMPI) only where no
# mpirun is installed, with .devkit/lib on LD_LIBRARY_PATH of the MPI jobs.
set -u
out=${1:?usage: tools/gpu-check.sh OUTDIR}
root=$(pwd)
work=/tmp/gpu-check
budget=${GPU_CHECK_BUDGET_S:-500}
rm -rf "$work" && mkdir -p "$work/nccl" "$out"

pack() { tar -C /tmp -czf "$out/gpu-check.tar.gz.tmp" gpu-check && mv "$out/gpu-check.tar.gz.tmp" "$out/gpu-check.tar.gz"; }

# step NAME LIMIT_S NEEDED_S COMMAND...: runs COMMAND with its output in $work/NAME.log, unless
# fewer than NEEDED_S seconds of the budget are left.
step() {
  local name=$1 limit=$2 needed=$3; shift 3
  if [[ -n ${GPU_CHECK_ONLY:-} && " $GPU_CHECK_ONLY " != *" ${name%%-*} "* ]]; then return 0; fi
  if (( budget - SECONDS < needed )); then
    echo "== $name: skipped, $((budget - SECONDS)) s of the budget left" | tee "$work/$name.log"
    return 1
  fi
  local start=$SECONDS
  timeout --kill-after=5 "$limit" "$@" >"$work/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc=$rc in $((SECONDS - start)) s" | tee -a "$work/$name.log"
  tail -n 15 "$work/$name.log" | sed 's/^/   /'
  pack
  return $rc
}

info() {
  set -x
  nvidia-smi
  nvidia-smi topo -m
  nvcc --version
  cat /etc/os-release
  uname -a
  g++ --version
  cmake --version
  nproc
  free -g
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
  find /usr /opt -xdev \( -name 'libnccl.so*' -o -name 'libcudart.so*' -o -name nccl.h \) 2>/dev/null
  command -v mpirun mpicxx
  ls /sys/class/infiniband 2>/dev/null
  df -h /dev/shm
  ulimit -l
}
export -f info
step info 60 10 bash -c info

# The NCCL and CUDA runtime that PyTorch uses on that machine.
torch_lib=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)
nccl_lib=$(find /opt /usr -xdev -name 'libnccl.so.2' 2>/dev/null | grep -m1 "${torch_lib%/torch}" ||
           find /opt /usr -xdev -name 'libnccl.so.2' 2>/dev/null | head -n1)
cudart_lib=$(find /usr/local/cuda/ /usr/local/cuda*/ /opt -xdev -name 'libcudart.so.1*' 2>/dev/null | head -n1)
echo "nccl: $nccl_lib  cudart: $cudart_lib  torch: $torch_lib" | tee -a "$work/info.log"

libs=$(dirname "$nccl_lib"):$(dirname "$cudart_lib")
[[ -f .devkit/root-deps.tar.gz ]] && tar -xzf .devkit/root-deps.tar.gz -C / --skip-old-files
if command -v mpirun >/dev/null; then
  # The machine's own MPI; the kit only lends libfmt to the prebuilt ddpbench if it is missing.
  if [[ -f .devkit/lib/libfmt.so.9 ]] && ! ldconfig -p | grep -q 'libfmt.so.9 '; then
    mkdir -p "$work/lib" && cp .devkit/lib/libfmt.so.9 "$work/lib/" && libs=$libs:$work/lib
  fi
elif [[ -f .devkit/root-mpi.tar.gz ]]; then
  tar -xzf .devkit/root-mpi.tar.gz -C / --skip-old-files
  libs=$libs:$root/.devkit/lib
fi
mpirun=$(command -v mpirun)
"$mpirun" --version 2>&1 | head -n 2 | tee -a "$work/info.log"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none

# $mpi NP COMMAND...: an MPI job with the libraries above.
mpi=$work/mpi
printf '#!/bin/bash\nexport LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\nnp=$1; shift\nexec %s -np "$np" --oversubscribe "$@"\n' \
  "$libs" "$mpirun" >"$mpi"
chmod +x "$mpi"

build() {
  set -x
  cmake -S "$root" -B /tmp/build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_BUILD_TESTS=OFF \
    -DDDP_WITH_GLOO=OFF -DDDP_WERROR=OFF \
    -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
    -DNCCL_HOME="$(dirname "$(dirname "$nccl_lib")")" -DNCCL_LIBRARY="$nccl_lib" \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc &&
  ninja -C /tmp/build-gpu -j"$(nproc)" -k 0 ddpbench train ddprun
}
export -f build
export root nccl_lib
step build 240 60 bash -c build
bench=/tmp/build-gpu/comm/ddpbench
[[ -x $bench ]] || bench=${DDPBENCH:-$root/.devkit/bin/ddpbench}
echo "ddpbench: $bench" | tee -a "$work/info.log"

nccl_info=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,COLL)
step bench 120 30 env "${nccl_info[@]}" NCCL_DEBUG_FILE="$work/nccl/ddpbench-np1.%h.%p.log" \
  "$mpi" 1 "$bench" --backend nccl --op all -b 8 -e 256M -f 4 -c 1 --json "$work/ddpbench-nccl-np1.json"
step console 60 20 env NCCL_DEBUG=INFO "$mpi" 1 "$bench" --backend nccl --op allreduce -b 1M -e 16M -f 4 -c 1
step large 120 30 "$mpi" 1 "$bench" --backend nccl --op allreduce -b 1M -e 4G -f 4 -c 0 -n 20 \
  --json "$work/ddpbench-nccl-np1-large.json"
step duplicate 60 20 env NCCL_DEBUG=WARN "$mpi" 2 "$bench" --backend nccl --op allreduce -b 1M -e 1M -c 1
step torch 150 40 env "${nccl_info[@]}" NCCL_DEBUG_FILE="$work/nccl/torch-np1.%h.%p.log" \
  python3 bench/torch_ddp_train.py resnet18 1 128 60 cuda

train=/tmp/build-gpu/examples/train
if [[ -x $train ]]; then
  for variant in fp32 amp; do
    amp=(); [[ $variant == amp ]] && amp=(--amp)
    run=$work/run-resnet18-$variant
    mkdir -p "$run/nccl"
    step "train-$variant" 90 40 env "${nccl_info[@]}" NCCL_DEBUG_FILE="$run/nccl/%h.%p.log" DDPRUN_RUN_DIR="$run" \
      "$mpi" 1 "$train" --model resnet18 --batch-size 128 --steps 60 --device cuda --backend nccl "${amp[@]}"
  done
fi
ddprun=/tmp/build-gpu/launcher/ddprun
if [[ -x $ddprun && -x $train ]]; then
  step ddprun-doctor 60 20 bash -c "'$ddprun' doctor; '$ddprun' doctor --json --no-allreduce > '$work/doctor.json'"
  step ddprun-train 120 40 env PATH="$(dirname "$mpirun"):$PATH" LD_LIBRARY_PATH="$libs" \
    "$ddprun" --profile --run-dir "$work/ddprun-resnet18" -np 1 "$train" --model resnet18 --batch-size 128 --steps 30 \
    --device cuda --backend nccl
  step ddprun-binding 30 10 env LD_LIBRARY_PATH="$libs" \
    "$ddprun" --run-dir "$work/ddprun-binding" -np 2 -- sh -c 'echo "rank $RANK local $LOCAL_RANK CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"'
fi
echo "== done in $SECONDS s"
pack
