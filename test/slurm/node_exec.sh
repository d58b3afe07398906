#!/bin/sh
# node_exec.sh NODE COMMAND...: COMMAND on a node of slurm_cluster.sh's
# cluster, in its namespaces (network, UTS: its hostname, mount: its own
# /etc/hosts, /tmp and /dev/shm). NODE "login" is nodea with the machine's
# own /tmp, where the user's commands run, as on a login node.
# Reads HVDS_WORK, HVDS_NS_A and HVDS_NS_B (slurm_cluster.sh exports them),
# and HVDS_SHARED: directories, one a line, that every node sees where the
# login node does, as a cluster's shared file system (the checkout and the
# build may lie under /tmp, which each node has of its own).
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
# The node's /tmp is $HVDS_WORK/tmp-NODE with each shared directory under
# /tmp bound into it (at the same path) before it covers the machine's /tmp.
exec nsenter --net="/var/run/netns/$ns" unshare --uts --mount sh -c '
  node=$1
  shift
  tmp="$HVDS_WORK/tmp-$node"
  mkdir -p "$tmp" && mount --bind "$HVDS_WORK/hosts" /etc/hosts || exit 1
  printf "%s\n" "${HVDS_SHARED:-}" | while IFS= read -r dir; do
    case "$dir" in
      /tmp/?*) mkdir -p "$tmp/${dir#/tmp/}" && mount --bind "$dir" "$tmp/${dir#/tmp/}" || exit 1 ;;
    esac
  done || exit 1
  mount --rbind "$tmp" /tmp && mount -t tmpfs -o mode=1777 none /dev/shm &&
    hostname "$node" && exec "$@"' sh "$node" "$@"
