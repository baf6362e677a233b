#!/bin/sh
# netns-agent.sh HOST COMMAND... - mpirun's launch agent for netns.sh (in
# place of ssh): runs the command in the namespace that stands for HOST
# ($DTLAB_NETNS_DIR/ns.HOST). Options before the host, as ssh gets, are
# skipped.
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
ns=$(cat "$DTLAB_NETNS_DIR/ns.$host") || exit 1
exec ip netns exec "$ns" /bin/sh -c "$*"
