#!/bin/bash
# Boot the rxe test VM built by build-image.sh, run one command inside, power off.
#
# Usage: run-vm.sh [-p PROJECT_DIR] [-t TIMEOUT_S] [-a kvm|tcg|auto] [COMMAND...]
#   COMMAND   shell command run inside the VM (as root, cwd=/mnt/proj if -p given);
#             default: show the RDMA devices (rdma link show; ibv_devinfo)
#   -p DIR    share DIR read-write into the VM (9p, mount_tag=proj) at /mnt/proj and
#             at DIR's own absolute path; the command runs with cwd=DIR
#   -t N      kill the VM after N seconds (default 600)
#   -a MODE   accelerator: kvm, tcg or auto (default auto: kvm only if a probe boot
#             of the kernel prints within 15 s; the result is cached in $WORK/accel.cache)
# Env: WORK (default /var/tmp/rxevm), MEM (2G), SMP (2), LOG (default $WORK/console.log),
#      KERNEL (default $WORK/vmlinux if present, else $WORK/vmlinuz),
#      INITRD (default $WORK/initrd-mini.img if present, else $WORK/initrd.img),
#      KAPPEND (extra kernel args, e.g. "loglevel=7 printk.time=1" to debug the boot),
#      NETDEV (a qemu -netdev backend without id, e.g. "socket,listen=127.0.0.1:7100": the
#      VM gets one virtio-net card on it, MAC from $MAC; two VMs joined by a socket netdev
#      are two hosts on one Ethernet segment)
# Exit status = exit status of COMMAND inside the VM (from the RXEVM_EXIT= marker),
#               or 124 on timeout, 125 if the marker never appeared.
# Without NETDEV the VM has NO network card (-nodefaults, no -nic): RDMA traffic stays
# inside it.
set -uo pipefail
WORK=${WORK:-/var/tmp/pykv-rxevm}
MEM=${MEM:-2G}; SMP=${SMP:-2}
LOG=${LOG:-$WORK/console.log}
PROJ=""; TMO=600; ACCEL=auto
while getopts "p:t:a:" o; do
  case $o in p) PROJ=$(cd "$OPTARG" && pwd) ;; t) TMO=$OPTARG ;; a) ACCEL=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND-1))
CMD="${*:-rdma link show && ibv_devinfo}"

for f in vmlinuz rootfs.ext4; do
  [ -f "$WORK/$f" ] || { echo "missing $WORK/$f: run build-image.sh first" >&2; exit 2; }
done

KERNEL=${KERNEL:-}
if [ -z "$KERNEL" ]; then
  if [ -f "$WORK/vmlinux" ]; then KERNEL=$WORK/vmlinux; else KERNEL=$WORK/vmlinuz; fi
fi
INITRD=${INITRD:-}
if [ -z "$INITRD" ]; then
  if [ -f "$WORK/initrd-mini.img" ]; then INITRD=$WORK/initrd-mini.img; else INITRD=$WORK/initrd.img; fi
fi

# /dev/kvm can exist and open but still be useless (nested virtualisation without
# hardware support): probe by booting the kernel with no root and waiting for its
# first printk. Prints the working -cpu model, or nothing.
kvm_probe() {
  [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] || return 0
  local cpu plog=$WORK/kvm-probe.log
  for cpu in host host,-arch-capabilities; do
    rm -f "$plog"
    timeout 15 qemu-system-x86_64 -accel kvm -cpu "$cpu" -m 256 -nodefaults -display none \
      -no-reboot -monitor none -kernel "$WORK/vmlinuz" \
      -append "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1" -serial "file:$plog" \
      </dev/null >/dev/null 2>&1
    if grep -aq 'Linux version' "$plog" 2>/dev/null; then echo "$cpu"; return 0; fi
  done
}
KVM_CPU=""
if [ "$ACCEL" = auto ]; then
  if [ -f "$WORK/accel.cache" ]; then KVM_CPU=$(cat "$WORK/accel.cache")
  else KVM_CPU=$(kvm_probe); echo "$KVM_CPU" > "$WORK/accel.cache"; fi
  [ -n "$KVM_CPU" ] && ACCEL=kvm || ACCEL=tcg
fi
if [ "$ACCEL" = kvm ]; then ACC=(-accel kvm -cpu "${KVM_CPU:-${CPU:-host}}")
else ACC=(-accel tcg,thread=multi -cpu max); fi

B64=$(printf '%s' "$CMD" | base64 -w0)
APPEND="root=/dev/vda rw console=ttyS0 init=/sbin/rxe-init quiet loglevel=3 panic=-1 mitigations=off ${KAPPEND:-} rxerun=$B64"

SHARE=()
if [ -n "$PROJ" ]; then
  SHARE=(-virtfs "local,path=$PROJ,mount_tag=proj,security_model=none,id=proj")
  # same absolute path inside the VM too (only if it has no spaces)
  [[ "$PROJ" =~ ^[A-Za-z0-9_./+-]+$ ]] && APPEND="$APPEND rxeproj=$PROJ"
fi

NIC=()
if [ -n "${NETDEV:-}" ]; then
  NIC=(-netdev "$NETDEV,id=n0" -device "virtio-net-pci,netdev=n0,mac=${MAC:-52:54:00:77:00:01}")
fi

[ ${#APPEND} -lt 2000 ] || { echo "command too long for the kernel command line; put it in a script under -p DIR" >&2; exit 2; }
echo "[run-vm] accel=$ACCEL ${ACC[*]} kernel=${KERNEL##*/} initrd=${INITRD##*/} mem=$MEM smp=$SMP share=${PROJ:-none} net=${NETDEV:-none} cmd=$CMD" >&2
t0=$(date +%s%3N)
timeout "$TMO" qemu-system-x86_64 "${ACC[@]}" -m "$MEM" -smp "$SMP" \
  -nodefaults -no-user-config -display none -no-reboot -monitor none \
  -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" \
  -drive "file=$WORK/rootfs.ext4,if=virtio,format=raw,snapshot=on" \
  -device virtio-rng-pci \
  "${SHARE[@]}" "${NIC[@]}" \
  -serial stdio < /dev/null 2>&1 | tee "$LOG"
qrc=${PIPESTATUS[0]}
t1=$(date +%s%3N)
printf '[run-vm] wall time %d.%03d s (qemu rc=%s)\n' $(( (t1-t0)/1000 )) $(( (t1-t0)%1000 )) "$qrc" >&2
[ "$qrc" = 124 ] && { echo "[run-vm] TIMEOUT after $TMO s" >&2; exit 124; }
rc=$(grep -a -o 'RXEVM_EXIT=[0-9]*' "$LOG" | tail -1 | cut -d= -f2)
[ -n "$rc" ] || { echo "[run-vm] no RXEVM_EXIT marker in console output" >&2; exit 125; }
exit "$rc"
