#!/bin/bash
# (pykv: adapted from /work/shared/rxe-vm.) Build a small Debian 12 (bookworm) VM image that has the soft-RoCE (rdma_rxe)
# kernel module + rdma-core userspace + pyverbs, for running RDMA tests under qemu.
#
# Fetches ONLY from the Debian package registry configured in /etc/apt on this host
# (the mirror URL is read from /etc/apt at run time; no host name is written here).
#
# Output (in $WORK, default /var/tmp/rxevm):
#   vmlinuz               kernel taken from the image's linux-image-amd64
#   vmlinux               the same kernel uncompressed (PVH boot, faster under TCG)
#   initrd-mini.img       tiny busybox initramfs (make-initrd.sh), used by run-vm.sh
#   initrd.img            Debian's own initramfs (MODULES=list), fallback only
#   rootfs.ext4           ext4 root filesystem image (root=/dev/vda)
#
# Usage:  sudo bash build-image.sh            (root needed: debootstrap, chroot)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/var/tmp/pykv-rxevm}
ROOT=$WORK/rootfs
IMG=$WORK/rootfs.ext4
IMG_SIZE=${IMG_SIZE:-3G}
SUITE=bookworm
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$WORK"
t0=$(date +%s)

# --- host tools ------------------------------------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v qemu-img >/dev/null || need+=(qemu-utils)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v cpio >/dev/null || need+=(cpio)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# --- mirror: read from this host's apt configuration ------------------------
MIRROR=""
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  # first URIs: line of a stanza whose Suites contains bookworm (not -security)
  MIRROR=$(awk '/^URIs:/{u=$2} /^Suites:/{ if ($0 ~ /(^| )'$SUITE'( |$)/ && u !~ /security/) {print u; exit} }' \
           /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$MIRROR" ]; then
  MIRROR=$(grep -hE "^deb +(\[[^]]*\] +)?[a-z]+://[^ ]+ +$SUITE +" /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
           | grep -v security | head -1 | sed -E 's/^deb +(\[[^]]*\] +)?([^ ]+).*/\2/')
fi
[ -n "$MIRROR" ] || { echo "could not find a $SUITE mirror in /etc/apt" >&2; exit 1; }
echo "[build] mirror read from /etc/apt (not printed)"

# --- debootstrap -------------------------------------------------------------
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
  rm -rf "$ROOT"
  debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" > "$WORK/debootstrap.log" 2>&1 \
    || { tail -30 "$WORK/debootstrap.log"; exit 1; }
fi
t1=$(date +%s); echo "[build] debootstrap done in $((t1-t0)) s"

# apt inside the chroot uses the same sources/config as the host (copied, not written by us)
cp /etc/apt/sources.list.d/debian.sources "$ROOT/etc/apt/sources.list.d/" 2>/dev/null || true
[ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$ROOT/etc/apt/sources.list" || : > "$ROOT/etc/apt/sources.list"
for f in /etc/apt/apt.conf.d/99*; do [ -f "$f" ] && cp "$f" "$ROOT/etc/apt/apt.conf.d/"; done
cp /usr/share/keyrings/debian-archive-keyring.gpg "$ROOT/usr/share/keyrings/" 2>/dev/null || true
printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"; chmod +x "$ROOT/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true

mount_chroot() {
  mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
  mountpoint -q "$ROOT/sys"  || mount -t sysfs sys "$ROOT/sys"
  mountpoint -q "$ROOT/dev"  || mount --bind /dev "$ROOT/dev"
}
umount_chroot() { for m in dev sys proc; do mountpoint -q "$ROOT/$m" && umount "$ROOT/$m" || true; done; }
trap umount_chroot EXIT
mount_chroot

# Debian's initramfs: only the modules needed for an ext4 root on virtio-blk
# (regenerated several times during the install; MODULES=most would be slow and big)
mkdir -p "$ROOT/etc/initramfs-tools/conf.d" "$ROOT/usr/share/initramfs-tools/modules.d"
echo "MODULES=list" > "$ROOT/etc/initramfs-tools/conf.d/rxevm"
printf 'virtio_pci\nvirtio_blk\next4\ncrc32c_generic\n' > "$ROOT/usr/share/initramfs-tools/modules.d/rxevm"

PKGS="linux-image-amd64 initramfs-tools zstd kmod iproute2 procps busybox-static
      rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
      python3 python3-pyverbs python3-pytest strace"
chroot "$ROOT" apt-get update -qq
chroot "$ROOT" apt-get install -y -qq --no-install-recommends $PKGS > "$WORK/chroot-apt.log" 2>&1 \
  || { tail -30 "$WORK/chroot-apt.log"; exit 1; }
chroot "$ROOT" apt-get clean
rm -f "$ROOT/etc/resolv.conf"
t2=$(date +%s); echo "[build] packages installed in $((t2-t1)) s"

# --- kernel + initramfs out of the image ------------------------------------
KVER=$(ls "$ROOT/lib/modules" | sort -V | tail -1)
echo "[build] kernel $KVER"
ls "$ROOT/lib/modules/$KVER/kernel/drivers/infiniband/sw/rxe/"
cp "$ROOT/boot/vmlinuz-$KVER" "$WORK/vmlinuz"
cp "$ROOT/boot/initrd.img-$KVER" "$WORK/initrd.img"
bash "$HERE/make-initrd.sh" "$ROOT" "$KVER" "$WORK/initrd-mini.img"
# Uncompressed ELF vmlinux: qemu boots it through its PVH entry point, skipping
# SeaBIOS real mode and the xz decompression (~11 s under TCG).
python3 - "$WORK/vmlinuz" "$WORK/vmlinux" <<'PY'
import lzma, sys
d = open(sys.argv[1], 'rb').read()
i = d.find(b'\xfd7zXZ\x00')
out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(d[i:]) if i >= 0 else b''
if out[:4] == b'\x7fELF':
    open(sys.argv[2], 'wb').write(out)
    print('[build] vmlinux extracted (%d bytes)' % len(out))
else:
    print('[build] could not extract vmlinux; run-vm.sh will use vmlinuz')
PY

# --- guest init (PID 1) and test scripts -------------------------------------
install -m 0755 "$HERE/guest/rxe-init" "$ROOT/sbin/rxe-init"
echo "rxevm" > "$ROOT/etc/hostname"
printf '127.0.0.1 localhost rxevm\n' > "$ROOT/etc/hosts"
mkdir -p "$ROOT/mnt/proj" "$ROOT/mnt/out"

umount_chroot; trap - EXIT

# --- ext4 image --------------------------------------------------------------
rm -f "$IMG"
mkfs.ext4 -q -F -L rxeroot -d "$ROOT" "$IMG" "$IMG_SIZE"
t3=$(date +%s); echo "[build] image $IMG built; total $((t3-t0)) s"
ls -lh "$WORK/vmlinuz" "$WORK/initrd-mini.img" "$WORK/initrd.img" "$IMG"
