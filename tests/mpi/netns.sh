#!/usr/bin/env bash
# netns.sh - "two machines" on this one: two network namespaces joined by a
# veth pair, Open MPI's TCP transport between them (shared memory off:
# --mca btl tcp,self), mpirun started in the first with a launch agent
# (tests/mpi/netns-agent.sh) that enters the second with `ip netns exec`.
#
#   tests/mpi/netns.sh test GRADE        the mpi backend's tests across the two
#   tests/mpi/netns.sh run CMD...        any command under that mpirun (bench/)
#   tests/mpi/netns.sh tcp [MIB]         the link's TCP throughput, GB/s (python3:
#                                        one stream of MIB MiB, default 1024)
#
# Skips (status 0), saying why, where namespaces cannot be made (not root,
# no CAP_SYS_ADMIN, no `ip`) or mpirun is missing. Removes what it made.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:?usage: netns.sh test GRADE | run CMD...}
shift

skip() { echo "test-mpi-netns: skipped: $*"; exit 0; }
command -v mpirun >/dev/null || skip "mpirun is not installed (make deps installs Open MPI)"
command -v ip >/dev/null || skip "the ip command is missing (Debian: iproute2)"
tag=$$
A=dtlabA$tag B=dtlabB$tag
work=$(mktemp -d)
cleanup() {
    ip netns del "$A" 2>/dev/null
    ip netns del "$B" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$A" 2>"$work/err" || skip "cannot make a network namespace ($(head -c 200 "$work/err"))"
ip netns add "$B" 2>"$work/err" || skip "cannot make a second network namespace"
ip link add "va$tag" type veth peer name "vb$tag" 2>"$work/err" ||
    skip "cannot make a veth pair ($(head -c 200 "$work/err"))"
ip link set "va$tag" netns "$A" && ip link set "vb$tag" netns "$B" &&
    ip -n "$A" addr add 10.77.0.1/24 dev "va$tag" && ip -n "$B" addr add 10.77.0.2/24 dev "vb$tag" &&
    ip -n "$A" link set "va$tag" up && ip -n "$B" link set "vb$tag" up &&
    ip -n "$A" link set lo up && ip -n "$B" link set lo up || skip "cannot set up the veth pair"
# the agent finds each host's namespace here
printf '%s\n' "$A" >"$work/ns.10.77.0.1"
printf '%s\n' "$B" >"$work/ns.10.77.0.2"
printf '10.77.0.1 slots=1\n10.77.0.2 slots=1\n' >"$work/hosts"
export DTLAB_NETNS_DIR=$work

flags=(--hostfile "$work/hosts" -np 2 --map-by node --oversubscribe --bind-to none
       --mca plm_rsh_agent "$here/netns-agent.sh" --mca btl tcp,self
       --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24
       -x DT_QUIET=1 -x DTLAB_NETNS_DIR)
[ "$(id -u)" = 0 ] && flags+=(--allow-run-as-root)
under_mpirun() { ip netns exec "$A" timeout -k 5 "${MPI_TEST_LIMIT:-300}" mpirun "${flags[@]}" "$@"; }

if [ "$mode" = run ]; then
    under_mpirun "$@"
    exit $?
fi
if [ "$mode" = tcp ]; then
    command -v python3 >/dev/null || skip "python3 is missing (the TCP throughput test)"
    ip netns exec "$B" python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.2", 5201)); s.listen(1); c, _ = s.accept()
buf = bytearray(1 << 20); v = memoryview(buf)
while c.recv_into(v): pass
c.sendall(b"k")' &
    server=$!
    sleep 0.5
    ip netns exec "$A" python3 -c '
import socket, sys, time
n = int(sys.argv[1]); block = bytes(1 << 20)
c = socket.create_connection(("10.77.0.2", 5201))
t0 = time.perf_counter()
for _ in range(n): c.sendall(block)
c.shutdown(socket.SHUT_WR); c.recv(1)
print("%.3f" % (n * (1 << 20) / (time.perf_counter() - t0) / 1e9))' "${1:-1024}"
    rc=$?
    wait "$server"
    exit $rc
fi
grade=${1:?usage: netns.sh test GRADE}
pass=0 fail=0
# across machines: everything but the window (one machine's shared memory)
for name in $("$grade" --list | cut -f2 | grep -v window); do
    if under_mpirun "$grade" --run "$name" >"$work/log" 2>&1; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: across two namespaces over TCP: $grade --run $name"
        tail -n 20 "$work/log" | sed 's/^/    /'
    fi
done
echo "mpi across two namespaces (TCP): $pass passed, $fail failed"
[ "$fail" -eq 0 ]
