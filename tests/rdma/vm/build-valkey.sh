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
apt_mirror() {   # the Debian archive apt is configured with
    {
        awk '/^[ \t]*URIs:/ {for (i = 2; i <= NF; i++) print $i}' /etc/apt/sources.list.d/*.sources
        awk '/^[ \t]*deb[ \t]/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}' \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list
    } 2>/dev/null | sed 's|/*$||' | grep -m1 -E '^https?://.*/debian$'
}
MIRROR=${DEBIAN_MIRROR:-$(apt_mirror || true)}
JOBS=${JOBS:-2}
DEST=${1:-$PROJ/build/valkey-rdma/bin}
UPSTREAM=${VERSION%-*}              # 9.1.2-1 -> 9.1.2
POOL=$MIRROR/pool/main/v/valkey
OUT=$CACHE/$VERSION                  # finished build: $OUT/bin/valkey-{cli,benchmark,server}
BINS=(valkey-cli valkey-benchmark valkey-server)
MAKE_FLAGS=(BUILD_RDMA=yes MALLOC=libc OPTIMIZATION=-O2 BUILD_LUA=no BUILD_TLS=no USE_SYSTEMD=no)

say() { printf '[build-valkey] %s\n' "$*" >&2; }
die() { local rc=$1; shift; say "ERROR: $*"; exit "$rc"; }

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

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9                               # one build at a time (several worktrees share it)
if built_ok; then
    say "reusing the build in $OUT"
    install_bins
    exit 0
fi

fetch() {  # fetch URL FILE
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --retry 2 --connect-timeout 20 --max-time 600 -o "$2.part" "$1"
    elif command -v wget >/dev/null 2>&1; then
        wget -q -T 20 -O "$2.part" "$1"
    else
        python3 - "$1" "$2.part" <<'EOF'
import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=60) as r, open(sys.argv[2], "wb") as f:
    shutil.copyfileobj(r, f)
EOF
    fi && mv "$2.part" "$2"
}

DL=$CACHE/dl
mkdir -p "$DL"
[ -n "$MIRROR" ] || die 3 "no Debian archive in apt's sources: set DEBIAN_MIRROR"
DSC=valkey_$VERSION.dsc
ORIG=valkey_$UPSTREAM.orig.tar.gz
if [ ! -s "$DL/$DSC" ]; then
    say "downloading $POOL/$DSC"
    fetch "$POOL/$DSC" "$DL/$DSC" || { rm -f "$DL/$DSC.part"; die 3 "cannot download $POOL/$DSC (no network?)"; }
fi
if [ -n "$DSC_SHA256" ]; then
    echo "$DSC_SHA256  $DL/$DSC" | sha256sum -c --status \
        || { rm -f "$DL/$DSC"; die 3 "$DSC: SHA256 differs from the pinned $DSC_SHA256"; }
fi
# the orig tarball's line in the .dsc's Checksums-Sha256 section: " <sha256> <size> <name>"
want=$(awk -v f="$ORIG" '/^Checksums-Sha256:/{s=1;next} /^[^ ]/{s=0} s && $3==f {print $1}' "$DL/$DSC")
[ -n "$want" ] || die 3 "$DSC lists no $ORIG"
if [ ! -s "$DL/$ORIG" ] || ! echo "$want  $DL/$ORIG" | sha256sum -c --status; then
    say "downloading $POOL/$ORIG"
    fetch "$POOL/$ORIG" "$DL/$ORIG" || { rm -f "$DL/$ORIG.part"; die 3 "cannot download $POOL/$ORIG (no network?)"; }
    echo "$want  $DL/$ORIG" | sha256sum -c --status \
        || { rm -f "$DL/$ORIG"; die 3 "$ORIG: SHA256 differs from the .dsc's $want"; }
fi
say "$ORIG: SHA256 $want verified against $DSC"

# build dependencies (Debian packages): compiler, make, rdma-core headers, pkg-config
need_deps() {
    command -v gcc >/dev/null && command -v make >/dev/null && command -v pkg-config >/dev/null \
        && pkg-config --exists librdmacm libibverbs
}
if ! need_deps; then
    [ "$(id -u)" = 0 ] || die 4 "missing build deps (gcc make pkg-config librdmacm-dev libibverbs-dev) and not root"
    pkgs=(build-essential pkgconf librdmacm-dev libibverbs-dev)
    say "apt-get install ${pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt_q=(-q -y -o Dpkg::Use-Pty=0 --no-install-recommends)
    if ! apt-get install "${apt_q[@]}" "${pkgs[@]}" >/dev/null 2>&1; then
        apt-get update -qq >/dev/null 2>&1 || true
        apt-get install "${apt_q[@]}" "${pkgs[@]}" >/dev/null || die 4 "apt-get install ${pkgs[*]} failed"
    fi
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
