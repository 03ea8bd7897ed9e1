#!/bin/bash
# CI hook for the soft-RoCE VM suite: builds the image if needed (~3-4 min, Debian packages
# only) and Valkey with RDMA if needed (build-valkey.sh, ~2.5 min, cached), boots the VM once
# under TCG and runs the pyverbs-backend tests (~3 min) then the interop tests with the real
# valkey-cli/valkey-benchmark (~6 min) inside. Without network the Valkey part skips.
# Exit status = the VM suite's. Meant to be called from .ci/run after the host suite.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export PYKV_VM_TESTS=1
exec .venv/bin/python -m pytest -q -p no:cacheprovider -m vm tests/rdma/test_vm.py "$@"
