#!/usr/bin/env bash
# Benchmark `rhizome reach` against Sylvan's symbolic model checkers on the BEEM BDD models.
#
# For every case (STRATEGY:MODELFILE) both tools run R times under `/usr/bin/time -v`; the
# table shows median wall-clock time, median peak RSS, their ratios (ours / peer) and
# whether the state counts of both tools agree (across all repeats). Wall-clock time is the
# whole process (loading the model included) because that is what both tools can be
# measured on alike; the "reach" columns are the reachability-only times each tool prints.
#
# Which peer runs depends on the file's format (see shared/formats/bdd-model-files.md):
#   format B (ltsmin-2017/*.bdd)       -> Sylvan's bddmc:  bddmc -w N -s STRATEGY MODEL
#   format A (thesis-2014/*-rgs.bdd)   -> Sylvan's mc of 2014 (test/mc.c; examples/mc.c reads
#                                         format A until mid-2015), patched to take the same
#                                         options: mc -w N -s bfs|par MODEL
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/bench-reach.sh [OPTIONS] [CASE...]

CASE is STRATEGY:MODELFILE, MODELFILE relative to the models directory (or an existing path).
Default cases: bfs:ltsmin-2017/schedule_world.2.bdd bfs:ltsmin-2017/bakery.4.bdd
               sat:ltsmin-2017/collision.5.bdd sat:ltsmin-2017/schedule_world.3.bdd
               bfs:thesis-2014/at.5.8-rgs.bdd

Options:
  --workers N      workers for both tools (default 2)
  --repeat R       runs per tool and case; medians are reported (default 3)
  --bddmc PATH     Sylvan bddmc, for format-B files (default ../peers/sylvan-src/build/examples/bddmc)
  --mc2014 PATH    Sylvan 2014 mc (taking -w N -s bfs|par), for format-A files (default ../peers/sylvan-2014/build/mc)
  --rhizome PATH   our binary (default target/release/rhizome)
  --models DIR     model directory (default ../shared/models)
  --only WHO       run only "ours" or only "peer"
  --timeout SEC    kill a run after SEC seconds, 0 = never (default 0)
  --keep DIR       keep every run's output, /usr/bin/time report and JSON in DIR
  -h, --help       this text
Relative defaults are resolved beside the repository root (or beside the main checkout when
this is a git worktree).
EOF
}

prog=bench-reach
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

workers=2
repeat=3
bddmc=""
mc2014=""
rhizome="$root/target/release/rhizome"
models=""
only=""
timeout_s=0
keep=""
cases=()

need_arg() {
  if [ "$#" -lt 2 ] || [ -z "$2" ]; then die "option $1 needs a value"; fi
}

while [ "$#" -gt 0 ]; do
  case $1 in
  --workers) need_arg "$@"; workers=$2; shift 2 ;;
  --repeat) need_arg "$@"; repeat=$2; shift 2 ;;
  --bddmc) need_arg "$@"; bddmc=$2; shift 2 ;;
  --mc2014) need_arg "$@"; mc2014=$2; shift 2 ;;
  --rhizome) need_arg "$@"; rhizome=$2; shift 2 ;;
  --models) need_arg "$@"; models=$2; shift 2 ;;
  --only) need_arg "$@"; only=$2; shift 2 ;;
  --timeout) need_arg "$@"; timeout_s=$2; shift 2 ;;
  --keep) need_arg "$@"; keep=$2; shift 2 ;;
  -h | --help) usage; exit 0 ;;
  --) shift; cases+=("$@"); break ;;
  -*) die "unknown option '$1' (see --help)" ;;
  *) cases+=("$1"); shift ;;
  esac
done

[[ $workers =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive integer, got '$workers'"
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive integer, got '$repeat'"
[[ $timeout_s =~ ^[0-9]+$ ]] || die "--timeout must be a number of seconds, got '$timeout_s'"
case $only in "" | ours | peer) ;; *) die "--only takes 'ours' or 'peer', got '$only'" ;; esac
[ -n "$bddmc" ] || bddmc="$(sibling peers)/sylvan-src/build/examples/bddmc"
[ -n "$mc2014" ] || mc2014="$(sibling peers)/sylvan-2014/build/mc"
[ -n "$models" ] || models="$(sibling shared)/models"

if [ "${#cases[@]}" -eq 0 ]; then
  cases=(
    bfs:ltsmin-2017/schedule_world.2.bdd
    bfs:ltsmin-2017/bakery.4.bdd
    sat:ltsmin-2017/collision.5.bdd
    sat:ltsmin-2017/schedule_world.3.bdd
    bfs:thesis-2014/at.5.8-rgs.bdd
  )
fi

[ -x /usr/bin/time ] || die "/usr/bin/time not found (Debian package 'time')"
if [ "$timeout_s" -gt 0 ]; then
  command -v timeout >/dev/null || die "--timeout needs 'timeout' (coreutils)"
fi

# Format A starts with a 64-bit vector size (a small number); format B with two 32-bit ints
# (vector size, bits of the first integer), so its first 64-bit word is at least 2^32.
model_format() {
  local first
  first=$(od -An -t u8 -N8 "$1" | tr -d ' ')
  [ -n "$first" ] || die "$1: too short to be a model file"
  if [ "${#first}" -lt 10 ] || [ "$first" -lt 4294967296 ]; then echo A; else echo B; fi
}

check_binary() { # what, path, hint
  if [ ! -f "$2" ] || [ ! -x "$2" ]; then die "$1 not found or not executable at '$2' ($3)"; fi
}

# Resolve and validate every case before running anything.
strategies=()
paths=()
formats=()
need_bddmc=0
need_mc2014=0
for c in "${cases[@]}"; do
  [[ $c == *:* ]] || die "case '$c' is not STRATEGY:MODELFILE"
  s=${c%%:*}
  f=${c#*:}
  [[ $s =~ ^[a-z]+$ ]] || die "case '$c': bad strategy '$s'"
  if [ -f "$f" ]; then
    p=$f
  elif [ -f "$models/$f" ]; then
    p=$models/$f
  else
    die "case '$c': model file not found ('$f', nor under '$models')"
  fi
  fmt=$(model_format "$p")
  if [ "$fmt" = A ]; then
    case $s in bfs | par) ;; *) die "case '$c': the 2014 mc (format A) has only bfs and par" ;; esac
    need_mc2014=1
  else
    need_bddmc=1
  fi
  strategies+=("$s")
  paths+=("$p")
  formats+=("$fmt")
done

if [ "$only" != peer ]; then
  check_binary "rhizome" "$rhizome" "build it with 'cargo build --release' or pass --rhizome PATH"
fi
if [ "$only" != ours ]; then
  if [ "$need_bddmc" = 1 ]; then
    check_binary "Sylvan bddmc" "$bddmc" "build Sylvan's examples or pass --bddmc PATH"
  fi
  if [ "$need_mc2014" = 1 ]; then
    check_binary "Sylvan 2014 mc" "$mc2014" "build the old Sylvan mc or pass --mc2014 PATH"
  fi
fi

if [ -n "$keep" ]; then
  mkdir -p "$keep"
  logdir=$(cd "$keep" && pwd)
else
  logdir=$(mktemp -d "${TMPDIR:-/tmp}/bench-reach.XXXXXX")
fi
failed=0
cleanup() {
  if [ -z "$keep" ]; then
    if [ "$failed" = 0 ]; then rm -rf "$logdir"; else echo "bench-reach: logs kept in $logdir" >&2; fi
  fi
}
trap cleanup EXIT

# Wall-clock seconds from a `/usr/bin/time -v` report ("h:mm:ss" or "m:ss.ss").
time_wall() {
  awk -F': ' '/Elapsed \(wall clock\)/ {
    n = split($2, p, ":"); s = 0
    for (i = 1; i <= n; i++) s = s * 60 + p[i]
    printf "%.2f\n", s }' "$1"
}
time_rss_kb() {
  awk -F': ' '/Maximum resident set size/ { print $2 }' "$1"
}
median() {
  [ "$#" -gt 0 ] || { echo -; return; }
  printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 }
    END { if (NR % 2) m = a[(NR + 1) / 2]; else m = (a[NR / 2] + a[NR / 2 + 1]) / 2
          printf "%.2f\n", m }'
}
ratio() {
  if [ "$1" = - ] || [ "$2" = - ]; then echo -; return; fi
  awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f\n", a / b; else print "-" }'
}
mib() {
  if [ "$1" = - ]; then echo -; return; fi
  awk -v k="$1" 'BEGIN { printf "%.1f\n", k / 1024 }'
}
json_field() { # file, key: a string or number field of a flat JSON object
  tr -d '\n' <"$2" | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\{0,1\}\([0-9.eE+-]*\)\"\{0,1\}.*/\1/p"
}

# What a run reported, from its log prefix: the state count and the reachability time.
o_states_of() { json_field states "$1.json" 2>/dev/null || true; }
o_alg_of() { json_field seconds "$1.json" || true; }
p_states_of() { grep -oE 'Final states: [0-9,]+ states' "$1.out" | head -n1 | awk '{ print $3 }' | tr -d , || true; }
p_alg_of() { grep -oE '(BFS|PAR|SAT|CHAINING) Time: [0-9.]+' "$1.out" | awk '{ print $3 }' || true; }

# record_run SIDE WHAT LOGPREFIX CMD... : one timed run of side SIDE (o: ours, p: the peer);
# appends its state count, wall time, peak RSS and reachability time to SIDE's arrays, or
# says why it cannot and marks the case failed.
record_run() {
  local side=$1 what=$2 pre=$3 st
  shift 3
  local -n states=${side}_states wall=${side}_wall rss=${side}_rss alg=${side}_alg
  if run_timed "$pre" "$@"; then
    st=$("${side}_states_of" "$pre")
    if [ -z "$st" ]; then
      echo "bench-reach: $c: $what reported no state count, see $pre.out or $pre.json" >&2
      case_failed=1
    else
      states+=("$st")
      wall+=("$run_wall")
      rss+=("$run_rss_kb")
      alg+=("$("${side}_alg_of" "$pre")")
    fi
  else
    echo "bench-reach: $c: $what failed (exit $?), see $pre.out" >&2
    case_failed=1
  fi
}

# run LABEL LOGPREFIX CMD... : one timed run; sets run_wall, run_rss_kb; returns the exit code.
run_timed() {
  local prefix=$1
  shift
  local rc=0
  if [ "$timeout_s" -gt 0 ]; then
    timeout "$timeout_s" /usr/bin/time -v -o "$prefix.time" "$@" >"$prefix.out" 2>&1 || rc=$?
  else
    /usr/bin/time -v -o "$prefix.time" "$@" >"$prefix.out" 2>&1 || rc=$?
  fi
  run_wall=$(time_wall "$prefix.time" 2>/dev/null || true)
  run_rss_kb=$(time_rss_kb "$prefix.time" 2>/dev/null || true)
  return "$rc"
}

printf '%-42s %9s %9s %6s %9s %9s %10s %10s %6s  %s\n' \
  case ours_s peer_s ratio reach_o reach_p ours_MiB peer_MiB ratio states
any_disagree=0
for idx in "${!cases[@]}"; do
  c=${cases[$idx]}
  s=${strategies[$idx]}
  p=${paths[$idx]}
  fmt=${formats[$idx]}
  tag=$(printf '%02d-%s-%s' "$idx" "$s" "$(basename "$p" .bdd)")
  if [ "$fmt" = A ]; then peer=("$mc2014"); else peer=("$bddmc"); fi
  peer+=(-w "$workers" -s "$s" "$p")

  o_wall=() o_rss=() o_alg=() o_states=()
  p_wall=() p_rss=() p_alg=() p_states=()
  case_failed=0
  for i in $(seq 1 "$repeat"); do
    if [ "$only" != peer ]; then
      pre="$logdir/$tag.ours.$i"
      record_run o "ours run $i" "$pre" "$rhizome" reach "$p" --strategy "$s" --workers "$workers" --json "$pre.json"
    fi
    if [ "$only" != ours ]; then
      record_run p "peer run $i" "$logdir/$tag.peer.$i" "${peer[@]}"
    fi
  done
  [ "$case_failed" = 0 ] || failed=1

  ow=$(median "${o_wall[@]}") pw=$(median "${p_wall[@]}")
  oa=$(median "${o_alg[@]}") pa=$(median "${p_alg[@]}")
  orss=$(median "${o_rss[@]}") prss=$(median "${p_rss[@]}")
  ou=$(printf '%s\n' "${o_states[@]}" | sort -u | grep -c . || true)
  pu=$(printf '%s\n' "${p_states[@]}" | sort -u | grep -c . || true)
  if [ "$ou" -gt 1 ] || [ "$pu" -gt 1 ]; then
    agree="NO: counts differ between repeats"
    any_disagree=1
  elif [ "$ou" = 1 ] && [ "$pu" = 1 ]; then
    if [ "${o_states[0]}" = "${p_states[0]}" ]; then
      agree="yes ${o_states[0]}"
    else
      agree="NO: ours ${o_states[0]}, peer ${p_states[0]}"
      any_disagree=1
    fi
  elif [ "$ou" = 1 ]; then
    agree="ours ${o_states[0]}"
  elif [ "$pu" = 1 ]; then
    agree="peer ${p_states[0]}"
  else
    agree="-"
  fi
  [ "$case_failed" = 0 ] || agree="FAILED; $agree"
  printf '%-42s %9s %9s %6s %9s %9s %10s %10s %6s  %s\n' "$c" "$ow" "$pw" "$(ratio "$ow" "$pw")" \
    "$oa" "$pa" "$(mib "$orss")" "$(mib "$prss")" "$(ratio "$orss" "$prss")" "$agree"
done

if [ "$any_disagree" = 1 ]; then
  echo "bench-reach: state counts disagree (see the states column)" >&2
  failed=1
  exit 1
fi
[ "$failed" = 0 ] || exit 1
