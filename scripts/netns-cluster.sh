#!/usr/bin/env bash
# netns-cluster.sh -- several "hosts" on this machine, joined only by virtual ethernet, and
# mpirun across them, so that every byte between MPI ranks goes over TCP.
#
# Usage (as root):
#   scripts/netns-cluster.sh up N [--delay-us US]   make hosts rz-h1..rz-hN
#   scripts/netns-cluster.sh run N [--delay-us US] [--rma R] [--timeout S] -- PROGRAM [ARGS...]
#                                                   up, one rank per host, down
#   scripts/netns-cluster.sh mpirun N [--rma R] [--timeout S] -- PROGRAM [ARGS...]
#                                                   one rank per host on hosts made by `up`
#   scripts/netns-cluster.sh down                   remove the hosts (and the wire)
#   scripts/netns-cluster.sh check                  exit 0 if namespaces can be made here
# NETNS_CLUSTER_PREFIX=p (default rz) names the hosts p-h1..p-hN instead, so that two
# clusters can live side by side; `down` removes only its own prefix's.
#
# Each host is a network namespace with its own UTS namespace (hostname rz-hI), one
# interface eth0 (address 10.231.0.(10+I)/24) and loopback. The eth0 ends meet on a bridge
# inside a namespace of their own (rz-sw), so the root namespace's network is not touched.
#
# `--delay-us US` adds US microseconds of one-way latency between every two hosts (a round
# trip costs 2 US more). Kernels without the netem queueing discipline (no `sch_netem`
# module, as on the machine this was written on) cannot delay a veth, so with this option
# each host's eth0 is a TUN device instead, and a user-space wire (netns_wire, an example
# of rhizome-cli: crates/rhizome-cli/examples/netns_wire.rs, built on first use) runs in
# the root namespace, forwards every IPv4 packet from one host's TUN device to the
# destination's, US microseconds after reading it, in order. The TUN devices have an MTU
# of 65535 (a veth passes 64 KiB segments too), so the wire handles few packets.
# `--delay-us 0` gives the wire without delay, to tell its own cost from the delay's. The
# wire's pid and log are /run/netns-cluster-rz.wire.{pid,log}; it ends with `down`.
# It needs /dev/net/tun; NETNS_CLUSTER_WIRE names a prebuilt netns_wire binary.
#
# The hosts share this machine's cores, so mpirun binds no rank to a core (`--bind-to
# none`): each host's daemon would bind its first rank to core 0, all of them to the same
# core (at.5 `bfs` on 2 hosts took 65 s so, its ranks waiting on core 0's run queue longer
# than they ran while core 1 idled, and 34 to 35 s unbound).
#
# mpirun runs in host 1 and reaches the others through an rsh agent (this script itself,
# called as `netns-cluster.sh rsh HOST COMMAND`) that enters the host's namespaces instead
# of using ssh. Open MPI is told to use TCP only: `btl tcp,self` for two-sided messages
# (no `vader`, no shared memory between ranks), the out-of-band channel on eth0, and
# rhizome's one-sided operations as messages (`--rma messages`, the default: the ranks run
# with RHIZOME_MPI_RMA=messages and make no RMA window). `--rma windows` uses MPI windows
# with `osc ucx` and UCX_TLS=tcp instead, which is not reliable here (below); `--rma auto`
# is a plain mpirun's default (shared-memory windows where ranks share a node, so here RMA
# windows as with `windows`), and `--rma shared` must fail (hosts share no memory).
# Before mpirun starts, every host must reach every other over eth0 (a TCP connection
# attempt answered by a refusal), else the script names the pair and exits 3: a dead link
# is one line, not a hang. `--timeout S` ends a run that takes longer than S seconds
# (mpirun --timeout), and a host whose daemon does not report within 20 s fails the start.
#
# State on this machine (Debian 12, Open MPI 4.1.4, UCX 1.13, kernel 6.18 without sch_netem):
# - with `--rma messages`, rhizome's SPMD and tasks suites pass on 2 and 4 hosts;
# - with `--rma windows` (`osc ucx` over TCP), the SPMD suite's multithreaded fetch-add
#   stress test stalls for minutes and fails with MPI_ERR_OTHER (UCX emulates atomics over
#   TCP with messages that need the target to progress); `osc pt2pt` refuses
#   MPI_THREAD_MULTIPLE; `osc rdma` cannot create windows over `btl tcp`.
set -euo pipefail

die() { echo "netns-cluster: $*" >&2; exit 2; }

# Exported: the rsh agent (this script, started by mpirun) must find the same hosts.
export NETNS_CLUSTER_PREFIX=${NETNS_CLUSTER_PREFIX:-rz}
PREFIX=$NETNS_CLUSTER_PREFIX
[[ $PREFIX =~ ^[a-z][a-z0-9]{0,5}$ ]] ||
  die "NETNS_CLUSTER_PREFIX must be a lower-case letter and up to 5 letters or digits, not '$PREFIX'"
SUBNET=10.231.0
SWITCH=${PREFIX}-sw
SELF=$(readlink -f "$0")
REPO=$(dirname "$(dirname "$SELF")")
WIRE_PID=/run/netns-cluster-${PREFIX}.wire.pid
WIRE_LOG=/run/netns-cluster-${PREFIX}.wire.log
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

# Ends the wire started by `up --delay-us`, if it still runs: the pid file holds its pid
# and binary, checked against /proc (a pid file can outlive its process and the number be
# reused). The wire does not end by itself when the namespaces go: its TUN devices hold
# them.
stop_wire() {
  local pid exe
  [[ -f $WIRE_PID ]] || return 0
  read -r pid exe <"$WIRE_PID" || true
  if [[ $pid =~ ^[0-9]+$ && -n $exe && $(readlink "/proc/$pid/exe" 2>/dev/null) == "$exe" ]]; then
    kill "$pid" 2>/dev/null || true
  fi
  rm -f "$WIRE_PID"
}

cmd_down() {
  need_root
  local ns
  stop_wire
  for ns in $(ip netns list | awk '{print $1}' | grep "^${PREFIX}-" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
}

# The netns_wire binary: NETNS_CLUSTER_WIRE, or the example built in this checkout
# (built here if it is not there yet).
wire_binary() {
  if [[ -n ${NETNS_CLUSTER_WIRE:-} ]]; then
    [[ -x $NETNS_CLUSTER_WIRE ]] || die "NETNS_CLUSTER_WIRE=$NETNS_CLUSTER_WIRE is not an executable"
    echo "$NETNS_CLUSTER_WIRE"
    return
  fi
  local bin=${CARGO_TARGET_DIR:-$REPO/target}/release/examples/netns_wire
  if [[ ! -x $bin ]]; then
    command -v cargo >/dev/null || die "--delay-us: needs cargo to build netns_wire (or NETNS_CLUSTER_WIRE)"
    echo "netns-cluster: building netns_wire (cargo build --release -p rhizome-cli --example netns_wire)" >&2
    (cd "$REPO" && cargo build --release -q -p rhizome-cli --example netns_wire) >&2 ||
      die "--delay-us: building netns_wire failed"
  fi
  echo "$bin"
}

# Host I with a veth end as eth0, its other end on the bridge in the switch namespace.
add_veth_host() {
  local i=$1 ns
  ns=$(host_ns "$i")
  ip link add "${PREFIX}h${i}a" type veth peer name "${PREFIX}h${i}b"
  ip link set "${PREFIX}h${i}a" netns "$ns"
  ip link set "${PREFIX}h${i}b" netns "$SWITCH"
  ip -n "$ns" link set "${PREFIX}h${i}a" name eth0
  ip -n "$SWITCH" link set "${PREFIX}h${i}b" master br0
  ip -n "$SWITCH" link set "${PREFIX}h${i}b" up
}

cmd_up() {
  need_root
  local n=$1 delay=$2 i ns wire
  [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 16 ]] || die "host count must be 1..16, not '$n'"
  if [[ -n $delay ]]; then
    [[ $delay =~ ^[0-9]+$ && $delay -le 1000000 ]] ||
      die "--delay-us needs whole microseconds (0..1000000), not '$delay'"
    [[ -c /dev/net/tun ]] || die "--delay-us: needs /dev/net/tun (TUN devices), which is missing here"
    wire=$(wire_binary)
  fi
  cmd_down
  if [[ -z $delay ]]; then
    ip netns add "$SWITCH"
    ip -n "$SWITCH" link add br0 type bridge
    ip -n "$SWITCH" link set br0 up
    ip -n "$SWITCH" link set lo up
  fi
  local ends=()
  for ((i = 1; i <= n; i++)); do
    ns=$(host_ns "$i")
    ip netns add "$ns"
    if [[ -z $delay ]]; then
      add_veth_host "$i"
    else
      ip -n "$ns" tuntap add dev eth0 mode tun
      ip -n "$ns" link set eth0 mtu 65535
      ends+=("$ns=$(host_ip "$i")")
    fi
    ip -n "$ns" addr add "$(host_ip "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
  done
  if [[ -n $delay ]]; then
    # Real-time priority (SCHED_FIFO 1, where allowed) so that a packet leaves when it is
    # due, not when a loaded machine next schedules the wire: at load 19 on 2 cores, a
    # 50 us wire measured ping round trips of 0.43 to 1.1 ms on average (max 16 to 28 ms)
    # as a normal process, 0.21 ms (max 0.6 ms) with it. Its work is a read and a write
    # per packet the hosts send, so it takes CPU in proportion to their traffic.
    local rt=()
    chrt -f 1 true 2>/dev/null && rt=(chrt -f 1)
    nohup "${rt[@]}" "$wire" --delay-us "$delay" --dev eth0 "${ends[@]}" </dev/null >"$WIRE_LOG" 2>&1 &
    echo "$! $(readlink -f "$wire")" >"$WIRE_PID"
    for ((i = 0; i < 100; i++)); do
      grep -qs ready "$WIRE_LOG" && return 0
      kill -0 "$!" 2>/dev/null || break
      sleep 0.1
    done
    local why
    why=$(tail -n 1 "$WIRE_LOG")
    cmd_down
    die "--delay-us: the wire did not start: ${why:-no word within 10 s}"
  fi
}

# Exits 3 naming the first pair of hosts that cannot reach each other. A connection
# attempt to a closed port is refused at once by a reachable host; anything else (no
# route, a timeout) means the link is down. Needs no ping.
check_links() {
  local n=$1 i j err
  for ((i = 1; i <= n; i++)); do
    ip netns list | grep -q "^$(host_ns "$i")\b" ||
      { echo "netns-cluster: host $(host_ns "$i") does not exist (run: $0 up $n)" >&2; exit 3; }
    for ((j = 1; j <= n; j++)); do
      ((i == j)) && continue
      err=$(ip netns exec "$(host_ns "$i")" timeout 2 bash -c \
        "exec 3<>/dev/tcp/$(host_ip "$j")/9" 2>&1 || true)
      [[ $err == *refused* ]] || {
        err=${err##*: }
        echo "netns-cluster: host $(host_ns "$i") cannot reach $(host_ns "$j") ($(host_ip "$j")): ${err:-no answer within 2 s}" >&2
        exit 3
      }
    done
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
  local n=$1 rma=$2 limit=$3
  shift 3
  check_links "$n"
  local transport=() limit_args=()
  [[ $limit =~ ^[0-9]+$ ]] || die "--timeout needs whole seconds, not '$limit'"
  ((limit > 0)) && limit_args=(--timeout "$limit")
  case $rma in
    messages) transport=(-x RHIZOME_MPI_RMA=messages) ;;
    windows) transport=(--mca osc ucx -x OMPI_MCA_osc=ucx -x RHIZOME_MPI_RMA=windows) ;;
    # The default of a plain mpirun: shared windows if the ranks share a node, which
    # hosts never do, so RMA windows (`osc ucx`) as with `windows`.
    auto) transport=(--mca osc sm,ucx -x OMPI_MCA_osc=sm,ucx -x RHIZOME_MPI_RMA=auto) ;;
    # Must fail with one line: the hosts share no memory.
    shared) transport=(-x RHIZOME_MPI_RMA=shared) ;;
    *) die "--rma must be messages, windows, auto or shared, not '$rma'" ;;
  esac
  local hosts="" i var
  for ((i = 1; i <= n; i++)); do hosts+="${hosts:+,}$(host_ip "$i"):1"; done
  # Rhizome's own settings travel to every rank, when set.
  local pass=()
  for var in $(compgen -e | grep -E '^(RHIZOME_|RUST_)' | grep -v '^RHIZOME_MPI_RMA$' || true); do
    pass+=(-x "$var")
  done
  # Quoting survives `sh -c`: each argument is passed as a positional parameter.
  ip netns exec "$(host_ns 1)" unshare --uts sh -c 'hostname "$0"; exec "$@"' \
    "$(host_ns 1)" \
    mpirun --allow-run-as-root -np "$n" --host "$hosts" "${limit_args[@]}" \
    --mca plm_rsh_agent "$SELF rsh" --mca orte_startup_timeout 20000 \
    --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
    --mca pml ob1 --bind-to none "${transport[@]}" \
    -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=eth0 \
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
      local n=$1 delay="" rma=messages limit=0
      shift
      while [[ $# -gt 0 && $1 != -- ]]; do
        case $1 in
          --delay-us) delay=${2:?--delay-us needs microseconds, e.g. 50}; shift 2 ;;
          --rma) rma=${2:?--rma needs messages, windows, auto or shared}; shift 2 ;;
          --timeout) limit=${2:?--timeout needs seconds}; shift 2 ;;
          *) die "unknown option $1" ;;
        esac
      done
      [[ $# -gt 0 ]] && shift # the --
      case $cmd in
        up) cmd_up "$n" "$delay" ;;
        mpirun)
          [[ $# -ge 1 ]] || die "mpirun needs a program after --"
          cmd_mpirun "$n" "$rma" "$limit" "$@"
          ;;
        run)
          [[ $# -ge 1 ]] || die "run needs a program after --"
          trap cmd_down EXIT
          cmd_up "$n" "$delay"
          cmd_mpirun "$n" "$rma" "$limit" "$@"
          ;;
      esac
      ;;
    -h | --help | help) sed -n '2,14p' "$SELF" ;;
    *) die "unknown command $cmd (up, run, mpirun, down, check)" ;;
  esac
}

main "$@"
