#!/usr/bin/env bash
# Installs everything ddprun needs on Debian 12, as root, idempotently.
# The one list of packages: README commands and .ci/run all call this script.
set -euo pipefail

packages=(
  # build tools
  build-essential cmake ninja-build pkg-config git ca-certificates
  # comm layer
  libopenmpi-dev openmpi-bin
  libtorch-dev libgloo-dev libopenblas0
  # libraries
  libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev catch2
  # the peer to measure against, and simulated hosts
  python3-torch iproute2 procps
  # a real 2-node Slurm cluster on this machine (scripts/slurm-local)
  slurm-wlm munge
  # the HTML report opened in a headless browser (tests), the fuzz targets (clang, libFuzzer),
  # the format check (clang-format) and the function-length check (universal-ctags)
  chromium fonts-dejavu-core clang libclang-rt-14-dev clang-format universal-ctags
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}) and not root: run as root or install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}"
echo "install-deps: done"
