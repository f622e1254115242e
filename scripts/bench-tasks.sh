#!/usr/bin/env bash
# Benchmark the futures / cluster work-stealing kernels (`rhizome bench tasks`) on 1 and on
# 2 PEs of one worker each, and UTS T1L beside Lace's uts-lace on 2 workers.
#
# Each case runs R rounds; a round launches the 1-PE run and then the 2-PE run (so noise
# hits both alike), each launch taking the median of K repetitions of the kernel. The
# table shows the median over rounds of those medians and the speedup (1 PE / 2 PEs).
# Every launch checks its own result (the command fails on a wrong one); the result of
# the last launch is shown.
#
# With --transport mpi (default) the PEs are MPI ranks started by mpirun (the binary must
# be built with `cargo build --release --features mpi`); with local they are PEs of one
# process.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/bench-tasks.sh [OPTIONS] [CASE...]

CASE is the arguments of `rhizome bench tasks`, quoted, e.g. "qsort" or "uts --tree T1L".
Default cases: "fib 42" "nqueens 15" "uts --tree T1L" "qsort" "lu" "pingpong"

Options:
  --transport T    mpi (mpirun -np 1 / -np 2, default) or local (--pes 1 / --pes 2)
  --rounds R       alternating rounds per case; medians are reported (default 3)
  --repeat K       repetitions inside each launch (default 5)
  --uts-lace PATH  Lace's uts-lace for the UTS T1L comparison on 2 workers
                   (default ../peers/lace-src/build/benchmarks/uts-lace; skipped if absent)
  --rhizome PATH   our binary (default target/release/rhizome)
  -h, --help       this text
EOF
}

prog=bench-tasks
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

transport=mpi
rounds=3
repeat=5
uts_lace="$base/../peers/lace-src/build/benchmarks/uts-lace"
rhizome="$root/target/release/rhizome"
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --transport) transport=${2:?--transport needs mpi or local}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    --repeat) repeat=${2:?--repeat needs a number}; shift 2 ;;
    --uts-lace) uts_lace=${2:?--uts-lace needs a path}; shift 2 ;;
    --rhizome) rhizome=${2:?--rhizome needs a path}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) cases+=("$1"); shift ;;
  esac
done
[ ${#cases[@]} -gt 0 ] || cases=("fib 42" "nqueens 15" "uts --tree T1L" "qsort" "lu" "pingpong")
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive number, not $rounds"
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive number, not $repeat"
[ -x "$rhizome" ] || die "$rhizome is missing: cargo build --release --features mpi"
case "$transport" in
  mpi) command -v mpirun >/dev/null || die "mpirun not found (apt-get install openmpi-bin)" ;;
  local) ;;
  *) die "--transport must be mpi or local, not $transport" ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The value of the JSON record whose name ends in " $1" (the records are pretty-printed).
field() {
  awk -v want="$1" '
    /"name":/ { hit = ($0 ~ ("\"[^\"]* " want "\",?$")) }
    hit && /"value":/ { gsub(/[ ,]/, "", $2); print $2; exit }
  ' "$2"
}
result_of() {
  grep -m1 '"result"' "$1" | sed 's/.*"result": *"\([^"]*\)".*/\1/'
}
transport_of() {
  grep -m1 '"transport"' "$1" | sed 's/.*"transport": *"\([^"]*\)".*/\1/'
}

# run NPES CASE... -> JSON in $tmp/out.json
run() {
  local np=$1
  shift
  local json="$tmp/out.json"
  rm -f "$json"
  if [ "$transport" = mpi ]; then
    mpirun --allow-run-as-root --oversubscribe -np "$np" "$rhizome" bench tasks "$@" \
      --workers 1 --repeat "$repeat" --no-seq --json "$json" >"$tmp/log" 2>&1 ||
      { cat "$tmp/log" >&2; die "mpirun -np $np rhizome bench tasks $* failed"; }
    [ "$(transport_of "$json")" = mpi ] ||
      die "the run did not use MPI: build with cargo build --release --features mpi"
  else
    "$rhizome" bench tasks "$@" --pes "$np" --workers 1 --repeat "$repeat" --no-seq \
      --json "$json" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; die "rhizome bench tasks $* failed"; }
  fi
}

printf '%-18s %12s %12s %8s  %s\n' "case ($transport)" "1 PE" "2 PEs" "speedup" "result"
for c in "${cases[@]}"; do
  read -r -a args <<<"$c"
  : >"$tmp/t1"
  : >"$tmp/t2"
  if [ "${args[0]}" = pingpong ]; then
    for _ in $(seq "$rounds"); do
      run 2 "${args[@]}"
      field "round trip" "$tmp/out.json" >>"$tmp/t2"
    done
    printf '%-18s %12s %9.2f us %8s  %s\n' "$c" - "$(median <"$tmp/t2")" - "round trip"
    continue
  fi
  for _ in $(seq "$rounds"); do
    run 1 "${args[@]}"
    field time "$tmp/out.json" >>"$tmp/t1"
    run 2 "${args[@]}"
    field time "$tmp/out.json" >>"$tmp/t2"
  done
  t1=$(median <"$tmp/t1")
  t2=$(median <"$tmp/t2")
  printf '%-18s %10.4f s %10.4f s %8.2f  %s\n' "$c" "$t1" "$t2" "$(awk -v a="$t1" -v b="$t2" 'BEGIN { print a / b }')" "$(result_of "$tmp/out.json")"
done

# UTS T1L on 2 workers: one PE of 2 workers (ours) beside uts-lace -w 2, alternating.
if [ -x "$uts_lace" ]; then
  : >"$tmp/ours"
  : >"$tmp/lace"
  for _ in $(seq "$rounds"); do
    "$rhizome" bench tasks uts --tree T1L --pes 1 --workers 2 --repeat 1 --no-seq \
      --json "$tmp/u.json" >/dev/null 2>&1 || die "rhizome bench tasks uts --tree T1L failed"
    field time "$tmp/u.json" >>"$tmp/ours"
    # T1L: geometric tree, branching 4, depth 13, root seed 29 (the UTS sample trees).
    "$uts_lace" -w 2 -t 1 -a 3 -d 13 -b 4 -r 29 >"$tmp/lace.out" 2>&1 || die "uts-lace failed"
    awk '/[Tt]ime/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { print $i; exit } }' "$tmp/lace.out" >>"$tmp/lace"
  done
  ours=$(median <"$tmp/ours")
  lace=$(median <"$tmp/lace" || true)
  if [ -n "$lace" ]; then
    printf 'uts T1L, 2 workers: rhizome %.3f s, uts-lace %.3f s, ratio %.2f\n' "$ours" "$lace" "$(awk -v a="$ours" -v b="$lace" 'BEGIN { print a / b }')"
  else
    echo "uts T1L, 2 workers: rhizome $ours s; no time found in uts-lace's output:" >&2
    cat "$tmp/lace.out" >&2
  fi
else
  echo "(uts-lace not found at $uts_lace: no Lace comparison)"
fi
