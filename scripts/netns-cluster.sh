#!/usr/bin/env bash
# netns-cluster.sh -- several "hosts" on this machine, joined only by virtual ethernet, and
# mpirun across them, so that every byte between MPI ranks goes over TCP.
#
# Usage (as root):
#   scripts/netns-cluster.sh up N [--delay 50us]   make hosts rz-h1..rz-hN
#   scripts/netns-cluster.sh run N [--delay D] [--osc C] -- PROGRAM [ARGS...]
#                                                   up, one rank per host, down
#   scripts/netns-cluster.sh mpirun N [--osc C] -- PROGRAM [ARGS...]
#                                                   one rank per host on hosts made by `up`
#   scripts/netns-cluster.sh down                   remove the hosts
#   scripts/netns-cluster.sh check                  exit 0 if namespaces can be made here
#
# Each host is a network namespace with its own UTS namespace (hostname rz-hI), one
# interface eth0 (address 10.231.0.(10+I)/24) and loopback. The eth0 ends meet on a bridge
# inside a namespace of their own (rz-sw), so the root namespace's network is not touched.
# `--delay` adds that much one-way latency (tc netem) on every host's eth0: a round trip
# between two hosts costs twice the delay more.
#
# mpirun runs in host 1 and reaches the others through an rsh agent (this script itself,
# called as `netns-cluster.sh rsh HOST COMMAND`) that enters the host's namespaces instead
# of using ssh. Open MPI is told to use TCP only: `btl tcp,self` for two-sided messages,
# UCX with `UCX_TLS=tcp` for one-sided (RMA) operations (`--osc`, default ucx), and the
# out-of-band channel on eth0. Shared-memory transports are off, so nothing crosses between
# ranks except through the virtual ethernet.
#
# State on this machine (Debian 12, Open MPI 4.1.4, kernel 6.18 without sch_netem):
# - launching works: `mpirun 2 -- hostname` prints rz-h1 and rz-h2, and rhizome's SPMD
#   suite passes its identity, put/get and atomics tests across the two hosts;
# - one-sided operations over TCP are not yet reliable: with `--osc ucx` the multithreaded
#   fetch-add stress test fails after minutes with UCX "Endpoint timeout" (RMA over TCP is
#   emulated with active messages that need the target to progress); `--osc pt2pt` refuses
#   MPI_THREAD_MULTIPLE; `--osc rdma` cannot create windows over `btl tcp`;
# - `--delay` needs the netem queueing discipline, which this kernel lacks; it says so.
set -euo pipefail

PREFIX=rz
SUBNET=10.231.0
SWITCH=${PREFIX}-sw
SELF=$(readlink -f "$0")

die() { echo "netns-cluster: $*" >&2; exit 2; }
host_ns() { echo "${PREFIX}-h$1"; }
host_ip() { echo "${SUBNET}.$((10 + $1))"; }

need_root() {
  [[ $(id -u) == 0 ]] || die "needs root (network namespaces)"
  command -v ip >/dev/null || die "needs iproute2 (ip)"
}

cmd_check() {
  need_root
  local probe="${PREFIX}-probe-$$"
  ip netns add "$probe" 2>/dev/null || die "cannot create network namespaces here"
  ip netns del "$probe"
  unshare --uts true 2>/dev/null || die "cannot create UTS namespaces here"
  command -v mpirun >/dev/null || die "needs Open MPI's mpirun"
}

cmd_down() {
  need_root
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep "^${PREFIX}-" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
}

cmd_up() {
  need_root
  local n=$1 delay=$2 i ns
  [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 16 ]] || die "host count must be 1..16, not '$n'"
  cmd_down
  ip netns add "$SWITCH"
  ip -n "$SWITCH" link add br0 type bridge
  ip -n "$SWITCH" link set br0 up
  ip -n "$SWITCH" link set lo up
  for ((i = 1; i <= n; i++)); do
    ns=$(host_ns "$i")
    ip netns add "$ns"
    ip link add "${PREFIX}h${i}a" type veth peer name "${PREFIX}h${i}b"
    ip link set "${PREFIX}h${i}a" netns "$ns"
    ip link set "${PREFIX}h${i}b" netns "$SWITCH"
    ip -n "$ns" link set "${PREFIX}h${i}a" name eth0
    ip -n "$ns" addr add "$(host_ip "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    ip -n "$SWITCH" link set "${PREFIX}h${i}b" master br0
    ip -n "$SWITCH" link set "${PREFIX}h${i}b" up
    if [[ -n $delay ]]; then
      ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "$delay" 2>/dev/null ||
        die "--delay: this kernel has no netem queueing discipline (tc qdisc ... netem failed)"
    fi
  done
  # Every host must reach every other before MPI starts (when ping is installed).
  command -v ping >/dev/null || return 0
  for ((i = 2; i <= n; i++)); do
    ip netns exec "$(host_ns 1)" ping -c 1 -W 2 "$(host_ip "$i")" >/dev/null ||
      die "host 1 cannot reach host $i"
  done
}

# The rsh agent: `rsh [ssh-like options] HOST COMMAND...`, HOST an address of ours.
cmd_rsh() {
  while [[ $# -gt 0 && $1 == -* ]]; do shift; done
  local host=$1
  shift
  local last=${host##*.}
  [[ $host == "${SUBNET}."* && $last =~ ^[0-9]+$ ]] || die "rsh: unknown host $host"
  local i=$((last - 10))
  exec ip netns exec "$(host_ns "$i")" unshare --uts sh -c "hostname $(host_ns "$i"); $*"
}

cmd_mpirun() {
  need_root
  local n=$1 osc=$2
  shift 2
  local hosts="" i var
  for ((i = 1; i <= n; i++)); do hosts+="${hosts:+,}$(host_ip "$i"):1"; done
  # Rhizome's own settings travel to every rank, when set.
  local pass=()
  for var in $(compgen -e | grep -E '^(RHIZOME_|RUST_)' || true); do pass+=(-x "$var"); done
  # Quoting survives `sh -c`: each argument is passed as a positional parameter.
  ip netns exec "$(host_ns 1)" unshare --uts sh -c 'hostname "$0"; exec "$@"' \
    "$(host_ns 1)" \
    mpirun --allow-run-as-root -np "$n" --host "$hosts" \
    --mca plm_rsh_agent "$SELF rsh" \
    --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
    --mca pml ob1 --mca osc "$osc" \
    -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=eth0 -x "OMPI_MCA_osc=$osc" \
    -x PATH "${pass[@]}" \
    "$@"
}

main() {
  [[ $# -ge 1 ]] || { sed -n '2,14p' "$SELF"; exit 2; }
  local cmd=$1
  shift
  case $cmd in
    check) cmd_check ;;
    down) cmd_down ;;
    rsh) cmd_rsh "$@" ;;
    up | run | mpirun)
      [[ $# -ge 1 ]] || die "$cmd needs a host count"
      local n=$1 delay="" osc=ucx
      shift
      while [[ $# -gt 0 && $1 != -- ]]; do
        case $1 in
          --delay) delay=${2:?--delay needs a value, e.g. 50us}; shift 2 ;;
          --osc) osc=${2:?--osc needs a component, e.g. ucx}; shift 2 ;;
          *) die "unknown option $1" ;;
        esac
      done
      [[ $# -gt 0 ]] && shift # the --
      case $cmd in
        up) cmd_up "$n" "$delay" ;;
        mpirun)
          [[ $# -ge 1 ]] || die "mpirun needs a program after --"
          cmd_mpirun "$n" "$osc" "$@"
          ;;
        run)
          [[ $# -ge 1 ]] || die "run needs a program after --"
          trap cmd_down EXIT
          cmd_up "$n" "$delay"
          cmd_mpirun "$n" "$osc" "$@"
          ;;
      esac
      ;;
    -h | --help | help) sed -n '2,14p' "$SELF" ;;
    *) die "unknown command $cmd (up, run, mpirun, down, check)" ;;
  esac
}

main "$@"
