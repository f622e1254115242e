#!/usr/bin/env bash
# Times `rhizome reach --pes 2` with every state variable as the split variable
# (`--split-vars V`) and lists the variables fastest first, beside the rule's own choice.
#
# The split variable of a sliced run can change its work several times over (collision.5
# `sat`: 1.1 s split by variable 4, 2.0 s by the rule's 12, over 20 s by some), and what
# decides it shows only once the states are explored: the rule sees the states visited
# before the split. For a model explored again and again (a benchmark, a regression
# suite), one scan finds a variable to pass with --split-vars. The runs are on 2 local PEs
# of one worker each (PEs as threads of one process); confirm the best under mpirun.
set -euo pipefail

prog=split-scan.sh
usage() {
  cat <<'EOF'
Usage: scripts/split-scan.sh [OPTIONS] MODELFILE

MODELFILE relative to the models directory (../shared/models) or an existing path.

Options:
  --strategy S     bfs, par, chaining or sat (default sat)
  --timeout SEC    longest run per variable, after which it counts as too slow (default 60)
  --vars LIST      the candidates, comma-separated (default: every state variable)
  --rhizome PATH   the rhizome binary (default target/release/rhizome)
EOF
}
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

strategy=sat
limit=60
vars=
rhizome="$root/target/release/rhizome"
need_arg() { [ $# -ge 2 ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case $1 in
  --strategy) need_arg "$@"; strategy=$2; shift 2 ;;
  --timeout) need_arg "$@"; limit=$2; shift 2 ;;
  --vars) need_arg "$@"; vars=$2; shift 2 ;;
  --rhizome) need_arg "$@"; rhizome=$2; shift 2 ;;
  -h | --help) usage; exit 0 ;;
  -*) die "unknown option $1 (--help lists them)" ;;
  *) break ;;
  esac
done
[ $# -eq 1 ] || { usage >&2; exit 2; }
model=$1
[ -e "$model" ] || model="$(sibling shared)/models/$1"
[ -f "$model" ] || die "no model file $1 (nor $model)"
[ -x "$rhizome" ] || die "no rhizome binary at $rhizome (cargo build --release, or --rhizome PATH)"
[[ $limit =~ ^[0-9]+$ ]] && [ "$limit" -gt 0 ] || die "--timeout must be a positive number of seconds, not $limit"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run: seconds, split variables and states from its JSON report, or why it gave none.
run() {
  local json=$work/run.json
  rm -f "$json"
  if timeout "$limit" "$rhizome" reach "$model" -s "$strategy" -w 1 --pes 2 --progress never \
    --json "$json" "$@" >/dev/null 2>"$work/err"; then
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
s = d.get("slices") or {}
print("%.3f" % d["seconds"], ",".join(map(str, s.get("split_vars") or [])) or "-", d["states"])' "$json"
  elif [ $? -eq 124 ]; then
    echo "timeout"
  else
    echo "error $(head -c 200 "$work/err" | head -1)"
  fi
}

# The rule's choice first: its states are the reference every split must give.
read -r rule_s rule_vars states <<<"$(run)" || true
[[ $rule_s =~ ^[0-9] ]] || die "the run without --split-vars failed: $rule_s $rule_vars $states"
echo "rule's choice: variable $rule_vars, $rule_s s, $states states"

if [ -z "$vars" ]; then
  # The model's state variables, from the refusal of a variable that cannot be one.
  why=$("$rhizome" reach "$model" -s "$strategy" -w 1 --pes 2 --split-vars 4294967295 2>&1 >/dev/null || true)
  list=$(sed -n 's/.*state variables: \(.*\))$/\1/p' <<<"$why")
  [ -n "$list" ] || die "could not read the state variables: $why"
  IFS=', ' read -r -a shown <<<"$list"
  if [ "${#shown[@]}" -eq 5 ] && [ "${shown[3]}" = "..." ]; then
    step=$((shown[1] - shown[0]))
    vars=$(seq -s, "${shown[0]}" "$step" "${shown[4]}")
  else
    vars=$(IFS=,; echo "${shown[*]}")
  fi
fi

IFS=, read -r -a candidates <<<"$vars"
echo "scanning ${#candidates[@]} variables, $strategy on 2 PEs, at most ${limit} s each"
results=$work/results
: >"$results"
for v in "${candidates[@]}"; do
  read -r s got n <<<"$(run --split-vars "$v")" || true
  if [[ $s =~ ^[0-9] ]]; then
    [ "$n" = "$states" ] || die "variable $v gave $n states, not $states: a bug, please report it"
    echo "$s $v" >>"$results"
  else
    echo "99999 $v $s $got $n" >>"$results"
  fi
done
# The rule's choice again, timed like the others (its first run read the file cold).
read -r rule_s rule_vars _ <<<"$(run)" || true
echo "variable  seconds  (fastest first; the rule's: $rule_vars at $rule_s s)"
sort -n "$results" | while read -r s v rest; do
  if [ "$s" = 99999 ]; then
    printf '%8s  %s\n' "$v" "$rest"
  else
    printf '%8s  %7s\n' "$v" "$s"
  fi
done
