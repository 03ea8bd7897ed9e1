#!/bin/bash
# One VM of the two-host RDMA test (tests/rdma/test_vm_two_hosts.py), run inside it from the
# project root: two-hosts.sh server|client.
#
# Both VMs have a virtio-net eth0 on one Ethernet segment (a qemu socket netdev) and put a
# soft-RoCE device on it (rxe1; rxe-init's rxe0 on dummy0 stays unused). The server VM runs
# pykv-server with TCP and an rdma listener (compiled ibverbs backend) on 10.77.1.1 until it is told
# to SHUTDOWN; the client VM (10.77.1.2) waits for it, runs
# tests/rdma/verbs/test_two_hosts.py against it, then shuts it down.
# Exit status: the server's or the client tests'; 90 = the network or rxe setup failed.
set -u
ROLE=${1:?usage: two-hosts.sh server|client}
SERVER_IP=10.77.1.1 CLIENT_IP=10.77.1.2 TCP_PORT=7379 RDMA_PORT=7380
[ "$ROLE" = server ] && IP=$SERVER_IP || IP=$CLIENT_IP

modprobe virtio_net
for _ in $(seq 50); do ip link show eth0 >/dev/null 2>&1 && break; sleep 0.2; done
ip addr add "$IP/24" dev eth0 && ip link set eth0 up || exit 90
rdma link add rxe1 type rxe netdev eth0 || exit 90
echo "TWOHOSTS: $ROLE on $IP: $(rdma link show | tr '\n' ' ')"

if [ "$ROLE" = server ]; then
  # protected mode would refuse the other host (no password), as Redis 7.0 does
  exec timeout 1500 .venv/bin/pykv-server --bind "$SERVER_IP" --port "$TCP_PORT" --save '' \
    --protected-mode no --dir /tmp \
    --listener "rdma,bind=$SERVER_IP,port=$RDMA_PORT,backend=ibverbs"
fi

export PYKV_REMOTE=$SERVER_IP PYKV_REMOTE_TCP_PORT=$TCP_PORT PYKV_REMOTE_RDMA_PORT=$RDMA_PORT
# the server VM boots at the same time: wait for its TCP port (ARP and all, over eth0)
.venv/bin/python - <<'EOF' || exit 90
import os, socket, time
deadline = time.monotonic() + 600
while True:
    try:
        socket.create_connection((os.environ["PYKV_REMOTE"],
                                  int(os.environ["PYKV_REMOTE_TCP_PORT"])), timeout=2).close()
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(1)
EOF
.venv/bin/python -m pytest -q -p no:cacheprovider -rfEs --color=no \
  tests/rdma/verbs/test_two_hosts.py
rc=$?
.venv/bin/python - <<'EOF'
import os, socket
s = socket.create_connection((os.environ["PYKV_REMOTE"], int(os.environ["PYKV_REMOTE_TCP_PORT"])))
s.sendall(b"SHUTDOWN NOSAVE\r\n")
s.recv(64)
EOF
exit $rc
