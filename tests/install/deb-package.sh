#!/usr/bin/env bash
# deb-package.sh BUILD_DIR: builds the .deb with CPack into a temporary directory and checks
# its metadata and that it holds the tools, the headers and the CMake package.
set -euo pipefail
build=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$build" && cpack -G DEB -B "$out" >/dev/null)
deb=$(ls "$out"/*.deb)
dpkg-deb --field "$deb" Package Version Depends
contents=$(dpkg-deb --contents "$deb")
for path in bin/ddpbench bin/ddprof include/ddp/comm/backend.hpp include/ddp/config.hpp \
            lib/cmake/ddprun/ddprunConfig.cmake lib/libddp_comm.a; do
  grep -q "/usr/.*$path\$" <<<"$contents" || { echo "missing from the package: $path"; exit 1; }
done
if grep -q "DDP_HAVE_TORCH 1" "$build/generated/ddp/config.hpp"; then
  for path in bin/train include/ddp/comm/distributed_data_parallel.hpp lib/libddp_torch.a; do
    grep -q "/usr/.*$path\$" <<<"$contents" || { echo "missing from the package: $path"; exit 1; }
  done
fi
echo "ok: $(basename "$deb"), $(grep -c . <<<"$contents") entries"
