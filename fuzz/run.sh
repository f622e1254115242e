#!/usr/bin/env bash
# A bounded fuzzing run of the model-file readers with AFL++, failing if AFL finds a crash
# or a hang. Usage: fuzz/run.sh [SECONDS] (default 60). Needs `cargo install cargo-afl`.
# Prints the executions done, the paths found and the crashes/hangs saved.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"

# Without these AFL refuses to start on a machine it has not tuned (CPU governor, core
# dumps piped to a handler) or wants a terminal for its status screen.
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1
export AFL_NO_AFFINITY=1  # CPUs are shared; binding to one that is busy only slows it

# All bins with AFL's flags: a plain `cargo run` of the seed writer would rebuild the
# shared dependencies without them.
cargo afl build --release --locked
# The seed corpus is generated, not stored: the built-in models and a one-bit model.
seeds="$(mktemp -d)"
out="$(mktemp -d)"
trap 'rm -rf "$seeds" "$out"' EXIT
target/release/seeds "$seeds" >/dev/null

cargo afl fuzz -i "$seeds" -o "$out" -V "$seconds" -t 2000 target/release/model_file >"$out/afl.log" 2>&1 || {
  cat "$out/afl.log"
  echo "fuzz: afl-fuzz failed" >&2
  exit 1
}
stats="$out/default/fuzzer_stats"
field() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
crashes=$(find "$out/default/crashes" -type f -name 'id:*' | wc -l)
hangs=$(find "$out/default/hangs" -type f -name 'id:*' | wc -l)
echo "fuzz: $(field execs_done) executions in $(field run_time) s ($(field execs_per_sec)/s), corpus $(field corpus_count), $crashes crashes, $hangs hangs"
if [ "$crashes" -gt 0 ] || [ "$hangs" -gt 0 ]; then
  keep="$(pwd)/findings"
  mkdir -p "$keep"
  cp -r "$out/default/crashes" "$out/default/hangs" "$keep/"
  echo "fuzz: inputs kept in $keep; replay one with: fuzz/target/release/replay FILE" >&2
  exit 1
fi
