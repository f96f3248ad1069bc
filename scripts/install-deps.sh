#!/usr/bin/env bash
# Installs everything ddprun needs on Debian 12, as root, idempotently.
# The one list of packages: README commands and .ci/run all call this script. Then the torch-2
# environment, .venv-torch2/ at the repository root, from python/requirements-torch2.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

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
  # the torch-2 environment's Python (Debian's 3.11, with venv)
  python3-venv
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
elif [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}) and not root: run as root or install them" >&2
  exit 1
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}"
  echo "install-deps: done"
fi

# The torch-2 environment: made again only when the requirements changed since it was made (their
# hash is kept in it). A half-made one is removed first, so that a failed install is retried whole.
venv=$root/.venv-torch2
requirements=$root/python/requirements-torch2.txt
want=$(sha256sum "$requirements" | cut -d' ' -f1)
have=$("$venv/bin/python" -c "import torch; print(torch.__version__)" 2>/dev/null || true)
if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" = "$want" ] && [ -n "$have" ]; then
  echo "install-deps: $venv is up to date (torch $have)"
  exit 0
fi
echo "install-deps: making $venv from $(basename "$requirements")"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$requirements"
"$venv/bin/python" -c "import torch; assert torch.__version__.startswith('2.13.'), torch.__version__"
echo "$want" >"$venv/.requirements.sha256"
echo "install-deps: $venv has $("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)')"
