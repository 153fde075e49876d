#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run every libFuzzer harness (build-fuzz/tests/fuzz/fuzz_*, `make fuzz-build`)
# on its seeds (generated from real packets) and its regression inputs
# (tests/fuzz/regress/NAME/: every input that once crashed), then mutate for
# a bounded time.  Any crash, sanitizer report, leak or failed check fails.
#
#   FUZZ_TIME=10 FUZZ_RUNS=20000 tests/fuzz/test_fuzz.sh    (make check)
#   FUZZ_TIME=600 FUZZ_RUNS=-1 FUZZ_CORPUS=build-fuzz/corpus tests/fuzz/test_fuzz.sh   (make fuzz)
#
# FUZZ_CORPUS: where new inputs are kept between runs (default: a temporary folder).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/build-fuzz/tests/fuzz
time=${FUZZ_TIME:-10}
runs=${FUZZ_RUNS:-20000}

compgen -G "$bin/fuzz_*" >/dev/null || { echo "SKIP: no harness built (make fuzz-build)"; exit 77; }
tmp=$(mktemp -d /tmp/mroc-fuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
corpus=${FUZZ_CORPUS:-$tmp/corpus}
# Undefined behaviour is a failure, not a message.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Bounded runs (make check) also run every input on a fixture of its own and compare
# (fuzz_engine_rx, fuzz_client: the reset between inputs must be complete); make fuzz's
# long runs do not (half the speed).
[ "$runs" = -1 ] || export MROC_FUZZ_CHECK_RESET=${MROC_FUZZ_CHECK_RESET:-1}
rc=0
for h in "$bin"/fuzz_*; do
	[ -x "$h" ] || continue
	name=$(basename "$h")
	mkdir -p "$corpus/$name"
	dirs=("$corpus/$name" "$bin/seeds/$name")
	[ -d "$top/tests/fuzz/regress/$name" ] && dirs+=("$top/tests/fuzz/regress/$name")
	if "$h" -max_total_time="$time" -runs="$runs" -print_final_stats=1 \
		-artifact_prefix="$tmp/$name-" "${dirs[@]}" >"$tmp/$name.log" 2>&1; then
		echo "ok: $name: $(awk '/stat::number_of_executed_units/ { print $2 }' \
			"$tmp/$name.log") inputs in ${time} s at most"
	else
		echo "FAIL: $name"
		grep -v '^#' "$tmp/$name.log" | tail -n 40
		for a in "$tmp/$name"-*; do
			[ -f "$a" ] || continue
			mkdir -p "$top/build-fuzz/artifacts"
			cp "$a" "$top/build-fuzz/artifacts/"
			echo "reproducer: build-fuzz/artifacts/$(basename "$a")" \
			     "(commit it to tests/fuzz/regress/$name/ with the fix)"
		done
		rc=1
	fi
done
# The engine's own timers, without the driver loop's tick (fuzz_pair.h): no input of the
# seeds or regressions may make a timer storm (fuzz_engine_rx counts the timer runs).
h=$bin/fuzz_engine_rx
if [ -x "$h" ]; then
	dirs=("$bin/seeds/fuzz_engine_rx" "$top/tests/fuzz/regress/fuzz_engine_rx")
	if MROC_FUZZ_TICK_NS=0 "$h" -runs=0 "${dirs[@]}" >"$tmp/tick0.log" 2>&1; then
		echo "ok: fuzz_engine_rx without the loop's tick: no timer storm"
	else
		echo "FAIL: fuzz_engine_rx without the loop's tick"
		grep -v '^#' "$tmp/tick0.log" | tail -n 20
		rc=1
	fi
fi
exit $rc
