#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run test binaries one after another and summarise.
#
#   scripts/run-tests.sh build/tests/unit/test_wire build/tests/sim/test_loss ...
#
# Each binary passes (exit 0), is skipped (exit 77, e.g. needs root) or fails
# (anything else, or running longer than TEST_TIMEOUT seconds, default 600).
# Output goes to <binary>.log; a failing test's log is printed, VERBOSE=1
# prints every log.  The last line is "N passed, N failed, N skipped"; the exit
# status is 1 if any test failed.
set -uo pipefail

timeout_s=${TEST_TIMEOUT:-600}
verbose=${VERBOSE:-0}

export CMOCKA_MESSAGE_OUTPUT=${CMOCKA_MESSAGE_OUTPUT:-stdout}
# Sanitizer builds: undefined behaviour fails the test instead of only printing.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

passed=0 failed=0 skipped=0
failed_names=()

for bin in "$@"; do
	# A glob such as build/tests/unit/* also matches the last run's logs: not tests.
	case $bin in *.log) continue ;; esac
	name=${bin#*tests/}
	case $bin in
	"${BUILD:-build}"/*) log=$bin.log ;;
	*)	# a script from the source tree: its log goes to the build folder
		log=${BUILD:-build}/tests/$name.log
		mkdir -p "$(dirname "$log")" ;;
	esac
	start=$(date +%s.%N)
	timeout --kill-after=10 "$timeout_s" "$bin" >"$log" 2>&1
	rc=$?
	secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')

	case $rc in
	0)	status=PASS; passed=$((passed + 1)) ;;
	77)	status=SKIP; skipped=$((skipped + 1)) ;;
	124|137) status="FAIL (timeout after ${timeout_s}s)" ;;
	*)	status="FAIL (exit $rc)" ;;
	esac
	printf '%-6s %s (%ss)\n' "${status%% *}" "$name" "$secs"
	if [ "${status%% *}" = FAIL ]; then
		failed=$((failed + 1))
		failed_names+=("$name")
		echo "------ $name: $status, output ($log):"
		cat "$log"
		echo "------"
	elif [ "$verbose" = 1 ] || [ "$status" = SKIP ]; then
		# A skip says why in its output; keep that short.
		if [ "$verbose" = 1 ]; then cat "$log"; else tail -n 3 "$log" | sed 's/^/       /'; fi
	fi
done

if [ "$failed" -gt 0 ]; then
	echo "failed: ${failed_names[*]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
