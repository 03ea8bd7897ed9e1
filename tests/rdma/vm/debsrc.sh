# Sourced by the build-*.sh scripts here: fetching one Debian source package's files from
# the Debian archive apt is configured with, checking them (the .dsc against a pinned
# SHA256, the upstream tarball against the .dsc), and installing missing build dependencies
# from Debian's packages. Defines functions only.
#
# The caller sets `say` and `die RC MESSAGE` before sourcing, and DEBIAN_MIRROR may override
# the archive. Exit code 3 (through die) = a download or checksum failure.

debsrc_mirror() {   # the Debian archive apt is configured with (deb822 or one-line sources)
    {
        awk '/^[ \t]*URIs:/ {for (i = 2; i <= NF; i++) print $i}' /etc/apt/sources.list.d/*.sources
        awk '/^[ \t]*deb[ \t]/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}' \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list
    } 2>/dev/null | sed 's|/*$||' | grep -m1 -E '^https?://.*/debian$'
}

debsrc_fetch_url() {  # debsrc_fetch_url URL FILE: download to FILE (via FILE.part)
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

debsrc_sha_ok() {  # debsrc_sha_ok SHA256 FILE
    [ -s "$2" ] && echo "$1  $2" | sha256sum -c --status
}

# debsrc_get DIR POOL DSC DSC_SHA256 ORIG [ORIG_SHA256]
#   Puts DSC and ORIG (verified) in DIR. POOL is the archive directory of the package
#   (.../pool/main/x/name). DSC_SHA256 empty = trust the .dsc as downloaded. The tarball is
#   checked against the .dsc's Checksums-Sha256 line; ORIG_SHA256 (that same line, pinned) is
#   the fallback when the archive has the tarball but will not serve the .dsc.
debsrc_get() {
    local dir=$1 pool=$2 dsc=$3 dsc_sha=$4 orig=$5 orig_sha=${6:-} want=""
    mkdir -p "$dir"
    if [ ! -s "$dir/$dsc" ]; then
        say "downloading $pool/$dsc"
        debsrc_fetch_url "$pool/$dsc" "$dir/$dsc" || rm -f "$dir/$dsc.part"
    fi
    if [ -s "$dir/$dsc" ]; then
        if [ -n "$dsc_sha" ] && ! debsrc_sha_ok "$dsc_sha" "$dir/$dsc"; then
            rm -f "$dir/$dsc"
            die 3 "$dsc: SHA256 differs from the pinned $dsc_sha"
        fi
        # the tarball's line in the .dsc's Checksums-Sha256 section: " <sha256> <size> <name>"
        want=$(awk -v f="$orig" '/^Checksums-Sha256:/{s=1;next} /^[^ ]/{s=0} s && $3==f {print $1}' "$dir/$dsc")
        [ -n "$want" ] || die 3 "$dsc lists no $orig"
        if [ -n "$orig_sha" ] && [ "$want" != "$orig_sha" ]; then
            die 3 "$dsc lists $orig with SHA256 $want, not the pinned $orig_sha"
        fi
    elif [ -n "$orig_sha" ]; then
        say "cannot download $pool/$dsc: checking $orig against its pinned SHA256 instead"
        want=$orig_sha
    else
        die 3 "cannot download $pool/$dsc (no network?)"
    fi
    if ! debsrc_sha_ok "$want" "$dir/$orig"; then
        say "downloading $pool/$orig"
        debsrc_fetch_url "$pool/$orig" "$dir/$orig" \
            || { rm -f "$dir/$orig.part"; die 3 "cannot download $pool/$orig (no network?)"; }
        debsrc_sha_ok "$want" "$dir/$orig" \
            || { rm -f "$dir/$orig"; die 3 "$orig: SHA256 differs from the expected $want"; }
    fi
    say "$orig: SHA256 $want verified"
}

debsrc_apt_install() {  # debsrc_apt_install PKG...: apt-get install, with one update on failure
    [ "$(id -u)" = 0 ] || die 4 "missing build deps ($*) and not root"
    say "apt-get install $*"
    local q=(-q -y -o Dpkg::Use-Pty=0 --no-install-recommends)
    if ! DEBIAN_FRONTEND=noninteractive apt-get install "${q[@]}" "$@" >/dev/null 2>&1; then
        apt-get update -qq >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install "${q[@]}" "$@" >/dev/null \
            || die 4 "apt-get install $* failed"
    fi
}

# debsrc_reuse_or_lock CACHE CHECK INSTALL: take CACHE's lock (held until the script exits:
# one build at a time, several worktrees share a cache); if CHECK passes, INSTALL and exit 0
debsrc_reuse_or_lock() {
    mkdir -p "$1"
    exec 9>"$1/.lock"
    flock 9
    if "$2"; then
        say "reusing the build in $1"
        "$3"
        exit 0
    fi
    [ -n "$MIRROR" ] || die 3 "no Debian archive in apt's sources: set DEBIAN_MIRROR"
}
