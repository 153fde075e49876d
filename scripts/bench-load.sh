# SPDX-License-Identifier: MIT
# Load guards shared by the benchmarks (issue #22): a wall-clock figure taken
# while the machine ran more than it has CPUs for is not evidence.  Source it;
# around each point:
#
#   load_begin     QUIET=1: first wait, up to QUIET_TIMEOUT s (600), until the
#                  1-minute load average is below QUIET_LOAD (1); then LOAD_B
#   load_end       LOAD_E, and LOADED: "*" when the load at the start or the end
#                  exceeded MAX_LOAD (the CPU count), else ""
#   load_refused   true when REFUSE_LOADED=1 and the point was LOADED: the caller
#                  keeps the row but leaves its figure out
#   load_note      one line for under a table: what "*" means, and the settings
# LOAD_LOG (a file), when set, gets a line per run, so that runs measured in
# subshells count in load_note too.
load_now() { cut -d' ' -f1 /proc/loadavg; }
LOAD_CPUS=$(nproc)
MAX_LOAD=${MAX_LOAD:-$LOAD_CPUS}
QUIET_LOAD=${QUIET_LOAD:-1}
QUIET_TIMEOUT=${QUIET_TIMEOUT:-600}
LOAD_FLAGGED=0 LOAD_POINTS=0

load_begin() {
	local t0=$SECONDS
	if [ -n "${QUIET:-}" ]; then
		while awk -v l="$(load_now)" -v q="$QUIET_LOAD" 'BEGIN { exit !(l >= q) }'; do
			if [ $((SECONDS - t0)) -ge "$QUIET_TIMEOUT" ]; then
				echo "load: still $(load_now) after ${QUIET_TIMEOUT} s of waiting for < $QUIET_LOAD; measuring anyway" >&2
				break
			fi
			sleep 5
		done
	fi
	LOAD_B=$(load_now)
}

load_end() {
	LOAD_E=$(load_now)
	LOADED=$(awk -v a="$LOAD_B" -v b="$LOAD_E" -v m="$MAX_LOAD" 'BEGIN { if (a > m || b > m) print "*" }')
	LOAD_POINTS=$((LOAD_POINTS + 1))
	[ -z "$LOADED" ] || LOAD_FLAGGED=$((LOAD_FLAGGED + 1))
	[ -z "${LOAD_LOG:-}" ] || echo "$LOAD_B $LOAD_E $LOADED" >>"$LOAD_LOG"
}

load_refused() { [ -n "${REFUSE_LOADED:-}" ] && [ -n "$LOADED" ]; }

load_note() {
	if [ -n "${LOAD_LOG:-}" ]; then
		LOAD_POINTS=$(wc -l <"$LOAD_LOG" 2>/dev/null || echo 0)
		LOAD_FLAGGED=$(grep -c '\*' "$LOAD_LOG" 2>/dev/null)
	fi
	echo "*: the 1-minute load average exceeded $MAX_LOAD (MAX_LOAD; $LOAD_CPUS CPUs) at the start or the end of a run of that row ($LOAD_FLAGGED of $LOAD_POINTS runs)$([ -n "${REFUSE_LOADED:-}" ] && echo "; REFUSE_LOADED: those runs' figures are left out")$([ -n "${QUIET:-}" ] && echo "; QUIET: each run waited for a load below $QUIET_LOAD (up to $QUIET_TIMEOUT s)")."
}
