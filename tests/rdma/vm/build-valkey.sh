#!/bin/bash
# Fetch Debian's source package of Valkey and build valkey-cli, valkey-benchmark and
# valkey-server with RDMA built in (BUILD_RDMA=yes), for the interop tests run inside the
# soft-RoCE VM (tests/rdma/verbs/test_valkey_interop.py). No Valkey code is kept in pykv:
# this script downloads the pinned source package and builds it in a cache directory.
#
# Usage: build-valkey.sh [DEST]
#   DEST   copy the three binaries there (default: <project>/build/valkey-rdma/bin, which
#          the VM sees because the project is shared into it at the same path)
# Env:
#   VALKEY_VERSION   Debian source version (default 9.1.2-1)
#   VALKEY_DSC_SHA256  SHA256 of that version's .dsc (pinned for the default version;
#                    empty = trust the .dsc as downloaded, the tarball is still checked
#                    against the .dsc)
#   VALKEY_CACHE     cache directory (default /var/tmp/pykv-valkey); a finished build there
#                    is reused
#   DEBIAN_MIRROR    the Debian archive to fetch from (default: the first .../debian archive
#                    in apt's sources, deb822 or one-line format)
#   JOBS             make -j (default 2)
# Exit status: 0 built (or reused), 2 bad usage/environment, 3 download or checksum
# failure (e.g. no network), 4 build dependencies missing, 5 build failure.
# Build time on the 2-core dev machine: ~3 min (-O2 without LTO, libc malloc, no Lua).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PROJ=$(cd "$HERE/../../.." && pwd)
VERSION=${VALKEY_VERSION:-9.1.2-1}
DEFAULT_VERSION=9.1.2-1
DEFAULT_DSC_SHA256=637995b2db343b75ae655fdb458b1f14f9b9b6f913f6144bdb9764b51b2ce2b2
if [ "$VERSION" = "$DEFAULT_VERSION" ]; then
    DSC_SHA256=${VALKEY_DSC_SHA256-$DEFAULT_DSC_SHA256}
else
    DSC_SHA256=${VALKEY_DSC_SHA256:-}
fi
CACHE=${VALKEY_CACHE:-/var/tmp/pykv-valkey}
JOBS=${JOBS:-2}
DEST=${1:-$PROJ/build/valkey-rdma/bin}
UPSTREAM=${VERSION%-*}              # 9.1.2-1 -> 9.1.2
OUT=$CACHE/$VERSION                  # finished build: $OUT/bin/valkey-{cli,benchmark,server}
BINS=(valkey-cli valkey-benchmark valkey-server)
MAKE_FLAGS=(BUILD_RDMA=yes MALLOC=libc OPTIMIZATION=-O2 BUILD_LUA=no BUILD_TLS=no USE_SYSTEMD=no)

say() { printf '[build-valkey] %s\n' "$*" >&2; }
die() { local rc=$1; shift; say "ERROR: $*"; exit "$rc"; }
# shellcheck source=debsrc.sh
. "$HERE/debsrc.sh"
MIRROR=${DEBIAN_MIRROR:-$(debsrc_mirror || true)}
POOL=$MIRROR/pool/main/v/valkey

install_bins() {
    mkdir -p "$DEST"
    local b
    for b in "${BINS[@]}"; do install -m 0755 "$OUT/bin/$b" "$DEST/$b"; done
    cp "$OUT/bin/VERSION" "$DEST/VERSION"
    say "valkey $VERSION (RDMA) in $DEST"
    echo "$DEST"
}

built_ok() {
    local b
    for b in "${BINS[@]}"; do [ -x "$OUT/bin/$b" ] || return 1; done
    [ -f "$OUT/bin/VERSION" ] || return 1
    # not `valkey-cli --help | grep -q`: with pipefail, grep quitting early fails the pipe
    local help
    help=$("$OUT/bin/valkey-cli" --help 2>&1 || true)
    [[ "$help" == *"--rdma"* ]]
}

debsrc_reuse_or_lock "$CACHE" built_ok install_bins
DL=$CACHE/dl
ORIG=valkey_$UPSTREAM.orig.tar.gz
debsrc_get "$DL" "$POOL" "valkey_$VERSION.dsc" "$DSC_SHA256" "$ORIG"

# build dependencies (Debian packages): compiler, make, rdma-core headers, pkg-config
need_deps() {
    command -v gcc >/dev/null && command -v make >/dev/null && command -v pkg-config >/dev/null \
        && pkg-config --exists librdmacm libibverbs
}
if ! need_deps; then
    debsrc_apt_install build-essential pkgconf librdmacm-dev libibverbs-dev
    need_deps || die 4 "build deps still missing after apt-get install"
fi

SRC=$CACHE/src-$VERSION
rm -rf "$SRC" "$OUT"
mkdir -p "$SRC"
tar -xzf "$DL/$ORIG" -C "$SRC" --strip-components=1
[ -f "$SRC/src/Makefile" ] || die 5 "unexpected layout of $ORIG"
say "make -j$JOBS ${MAKE_FLAGS[*]} ${BINS[*]} (~3 min)"
t0=$(date +%s)
if ! make -C "$SRC/src" -j"$JOBS" "${MAKE_FLAGS[@]}" "${BINS[@]}" >"$CACHE/build-$VERSION.log" 2>&1; then
    tail -30 "$CACHE/build-$VERSION.log" >&2
    die 5 "build failed (log: $CACHE/build-$VERSION.log)"
fi
mkdir -p "$OUT/bin"
for b in "${BINS[@]}"; do install -m 0755 "$SRC/src/$b" "$OUT/bin/$b"; done
{
    echo "valkey $VERSION (Debian source package, upstream $UPSTREAM)"
    echo "make ${MAKE_FLAGS[*]} ${BINS[*]}"
    "$OUT/bin/valkey-server" --version
} >"$OUT/bin/VERSION"
rm -rf "$SRC"                          # keep the cache small: the binaries are enough
ldd "$OUT/bin/valkey-cli" | grep -q librdmacm || die 5 "valkey-cli is not linked with librdmacm"
built_ok || die 5 "valkey-cli has no --rdma option"
say "built in $(( $(date +%s) - t0 )) s"
install_bins
