# Two "hosts" on this machine for the multi-host tests (sourced): network
# namespaces $NS_A and $NS_B joined by a veth pair, 10.203.0.1 and
# 10.203.0.2 (only inside them), and "$WORK/rsh", a remote shell that maps
# an address to its namespace: hvdrun --remote-shell "$WORK/rsh {host}".
# Set WORK (a directory) and TAG (a word in the command line of every
# process of the test's jobs) before sourcing: at exit those processes are
# killed, the namespaces deleted and WORK removed. netns_pair_create returns
# 77 when namespaces cannot be created here (e.g. not root).
NS_A="hvdt-$$-a"
NS_B="hvdt-$$-b"
ADDR_A=10.203.0.1
ADDR_B=10.203.0.2

netns_pair_create() {
  if ! ip netns add "$NS_A" 2>"$WORK/netns.err"; then
    echo "SKIP: cannot create a network namespace ($(head -n1 "$WORK/netns.err")); needs root and ip netns"
    return 77
  fi
  ip netns add "$NS_B" &&
    ip link add hvdt0 netns "$NS_A" type veth peer name hvdt0 netns "$NS_B" &&
    ip -n "$NS_A" addr add "$ADDR_A/24" dev hvdt0 &&
    ip -n "$NS_B" addr add "$ADDR_B/24" dev hvdt0 &&
    ip -n "$NS_A" link set lo up && ip -n "$NS_A" link set hvdt0 up &&
    ip -n "$NS_B" link set lo up && ip -n "$NS_B" link set hvdt0 up || return 1
  cat >"$WORK/rsh" <<RSH
#!/bin/sh
case "\$1" in
  $ADDR_A) ns=$NS_A ;;
  $ADDR_B) ns=$NS_B ;;
  *) echo "rsh: unknown host \$1" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" sh -c "\$2"
RSH
  chmod +x "$WORK/rsh"
}

netns_pair_delete() {
  ip netns del "$NS_A" 2>/dev/null  # takes its end of the veth pair, and so the pair
  ip netns del "$NS_B" 2>/dev/null
}

netns_pair_cleanup() {
  local pid
  for pid in $(pgrep -f -- "$TAG"); do kill -KILL "$pid" 2>/dev/null; done
  netns_pair_delete
  rm -rf "$WORK"
}
trap netns_pair_cleanup EXIT
trap 'exit 130' INT TERM
