#!/bin/sh
# node_exec.sh NODE COMMAND...: COMMAND on a node of slurm_cluster.sh's
# cluster, in its namespaces (network, UTS: its hostname, mount: its own
# /etc/hosts, /tmp and /dev/shm). NODE "login" is nodea with the machine's
# own /tmp, where the user's commands run, as on a login node.
# Reads HVDS_WORK, HVDS_NS_A and HVDS_NS_B (slurm_cluster.sh exports them).
node=$1
shift
case "$node" in
  nodea | login) ns=$HVDS_NS_A ;;
  nodeb) ns=$HVDS_NS_B ;;
  *) echo "node_exec.sh: unknown node $node" >&2; exit 2 ;;
esac
if [ "$node" = login ]; then
  exec nsenter --net="/var/run/netns/$ns" unshare --uts --mount sh -c '
    mount --bind "$HVDS_WORK/hosts" /etc/hosts && hostname nodea && exec "$@"' sh "$@"
fi
exec nsenter --net="/var/run/netns/$ns" unshare --uts --mount sh -c '
  node=$1
  shift
  mkdir -p "$HVDS_WORK/tmp-$node" && mount --bind "$HVDS_WORK/hosts" /etc/hosts &&
    mount --bind "$HVDS_WORK/tmp-$node" /tmp && mount -t tmpfs -o mode=1777 none /dev/shm &&
    hostname "$node" && exec "$@"' sh "$node" "$@"
