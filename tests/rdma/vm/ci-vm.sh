#!/bin/bash
# CI hook for the soft-RoCE VM suite: builds the image if needed (~3-4 min, Debian packages
# only), Valkey with RDMA (build-valkey.sh, ~2.5 min) and rdma-core 65 with pyverbs
# (build-rdma-core.sh, ~3.5 min) if not cached, boots the VM once under TCG and runs the
# pyverbs-backend tests on Debian's pyverbs 44 (~2 min), the interop tests with the real
# valkey-cli/valkey-benchmark (~6 min), then the pyverbs-backend tests on rdma-core 65's
# pyverbs (~2 min) inside; then two VMs joined by a virtual Ethernet link, pykv in one and
# the RDMA clients in the other (test_vm_two_hosts.py, ~2.5 min). Without network the
# Valkey and rdma-core stages skip.
# Exit status = the VM suite's. Meant to be called from .ci/run after the host suite.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export PYKV_VM_TESTS=1
exec .venv/bin/python -m pytest -q -p no:cacheprovider -m vm tests/rdma/test_vm.py \
  tests/rdma/test_vm_two_hosts.py "$@"
