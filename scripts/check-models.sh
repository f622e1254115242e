#!/usr/bin/env bash
# Runs `rhizome reach` on every BDD model file with every strategy and checks the results
# against the oracle table of the formats document (states; for `bfs` on the format-A
# files also levels and final BDD nodes), and every strategy against the others (states,
# nodes). The slow half of the oracle checks: the fast ones run in `cargo test`.
#
# Exit status: 0 when every finished run agrees, 1 on any disagreement, 2 on bad usage.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/check-models.sh [--workers N] [--timeout SEC] [--strategies LIST] [FILE...]

FILE defaults to every *.bdd under the models directory.
  --workers N         workers (default 2)
  --timeout SEC       give up on one run after SEC seconds (default 120); a run that
                      times out is reported as such, not as a failure
  --strategies LIST   comma-separated (default bfs,chaining,sat,par)
  --models DIR        models directory (default ../shared/models beside the checkout)
  --formats FILE      formats document with the oracle table
                      (default ../shared/formats/bdd-model-files.md)
  --rhizome PATH      our binary (default target/release/rhizome)
EOF
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
workers=2
timeout_s=120
strategies=bfs,chaining,sat,par
models=$root/../shared/models
formats=$root/../shared/formats/bdd-model-files.md
rhizome=$root/target/release/rhizome
files=()
while [ $# -gt 0 ]; do
  case $1 in
    --workers) workers=${2:?--workers needs a value}; shift 2 ;;
    --timeout) timeout_s=${2:?--timeout needs a value}; shift 2 ;;
    --strategies) strategies=${2:?--strategies needs a value}; shift 2 ;;
    --models) models=${2:?--models needs a value}; shift 2 ;;
    --formats) formats=${2:?--formats needs a value}; shift 2 ;;
    --rhizome) rhizome=${2:?--rhizome needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "check-models: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
[ -x "$rhizome" ] || { echo "check-models: $rhizome not built (cargo build --release)" >&2; exit 2; }
[ -d "$models" ] || { echo "check-models: no models directory at $models" >&2; exit 2; }
[ -f "$formats" ] || { echo "check-models: no formats document at $formats" >&2; exit 2; }
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(cd "$models" && ls ./*/*.bdd | sed 's|^\./||')
fi

# Oracle rows: "| dir/file.bdd | 1,234 | 56 | 789 |" -> "dir/file.bdd 1234 56 789".
oracle() {
  grep -E '^\| [a-z0-9-]+/[^|]+\.bdd \|' "$formats" | tr -d ', ' |
    awk -F'|' -v f="$1" '$2 == f { print $3, $4, $5 }'
}

field() { sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$2"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
printf '%-36s %-9s %22s %7s %9s %9s  %s\n' file strategy states levels nodes seconds verdict
for f in "${files[@]}"; do
  path=$f
  [ -f "$path" ] || path=$models/$f
  [ -f "$path" ] || { echo "check-models: no file $f" >&2; exit 2; }
  read -r o_states o_levels o_nodes < <(oracle "$f"; echo) || true
  first_states='' first_nodes=''
  IFS=, read -ra strats <<<"$strategies"
  for s in "${strats[@]}"; do
    json=$tmp/out.json
    rm -f "$json"
    set +e
    timeout "$timeout_s" "$rhizome" reach "$path" --strategy "$s" --workers "$workers" \
      --json "$json" --progress never >"$tmp/log" 2>&1
    rc=$?
    set -e
    if [ $rc -eq 124 ]; then
      printf '%-36s %-9s %22s %7s %9s %9s  %s\n' "$f" "$s" - - - ">$timeout_s" "timeout"
      continue
    elif [ $rc -ne 0 ]; then
      printf '%-36s %-9s %22s %7s %9s %9s  %s\n' "$f" "$s" - - - - "FAILED: $(tail -1 "$tmp/log")"
      status=1
      continue
    fi
    states=$(field states "$json")
    levels=$(field levels "$json")
    [ "$levels" != null ] || levels=-
    nodes=$(field nodes "$json")
    secs=$(printf '%.2f' "$(field seconds "$json")")
    verdict=ok
    if [ -n "${o_states:-}" ] && [ "$states" != "$o_states" ]; then
      verdict="WRONG states (oracle $o_states)"
    elif [ "$s" = bfs ] && [ -n "${o_levels:-}" ] && [ "$levels" != "$o_levels" ]; then
      verdict="WRONG levels (oracle $o_levels)"
    elif [ "$s" = bfs ] && [ -n "${o_nodes:-}" ] && [ "$nodes" != "$o_nodes" ]; then
      verdict="WRONG nodes (oracle $o_nodes)"
    elif [ -n "$first_states" ] && { [ "$states" != "$first_states" ] || [ "$nodes" != "$first_nodes" ]; }; then
      verdict="DISAGREES with the first strategy ($first_states states, $first_nodes nodes)"
    fi
    [ "$verdict" = ok ] || status=1
    if [ -z "$first_states" ]; then first_states=$states first_nodes=$nodes; fi
    [ -n "${o_states:-}" ] || [ "$verdict" != ok ] || verdict="ok (no oracle; strategies agree)"
    printf '%-36s %-9s %22s %7s %9s %9s  %s\n' "$f" "$s" "$states" "${levels:--}" "$nodes" "$secs" "$verdict"
  done
done
exit $status
