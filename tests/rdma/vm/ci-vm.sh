#!/bin/bash
# CI hook for the soft-RoCE VM suite: builds the image if needed (~3-4 min, Debian packages
# only), boots it under TCG and runs the pyverbs-backend tests inside (~4 min).
# Exit status = the VM suite's. Meant to be called from .ci/run after the host suite.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export PYKV_VM_TESTS=1
exec .venv/bin/python -m pytest -q -p no:cacheprovider -m vm tests/rdma/test_vm.py "$@"
