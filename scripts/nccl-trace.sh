#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Where a ring step's time goes: reads the files `nccl-harness --trace PATH` wrote
# (PATH.0 .. PATH.N-1, one per rank, on the clock all ranks of one machine share) and
# prints, over every run but the first (the checked warm-up), the median and 90th
# percentile in us of:
#   hop        a slice's send posted at rank r until its receive was done at rank r + 1
#              (the transport, both daemons and the receiver's polling), by step:
#              the run's first step and the others
#   send wait  the slice ready at rank r (its previous step's receive done; for the
#              first step, the rank's previous run over) until its send was posted:
#              the time isend gave NULL requests (waiting for a CTS, credits)
#   run        a rank's run, its first event to its last
#
#   scripts/nccl-trace.sh PATH
set -eu
[ $# = 1 ] || { echo "usage: $0 TRACE_PATH (the --trace argument)" >&2; exit 2; }
cat "$1".[0-9]* | awk '
	{ r = $1; k = $2; run = $3; g = $4; j = $5; t[k, r, run, g, j] = $6
	  if (r + 1 > n) n = r + 1
	  if (!((r, run) in first) || $6 < first[r, run]) first[r, run] = $6
	  if (!((r, run) in last) || $6 > last[r, run]) last[r, run] = $6
	  if (!(run in g0) || g < g0[run]) g0[run] = g
	  if (run > runs) runs = run
	  key[k, r, run, g, j] = 1 }
	END {
		for (x in key) {
			split(x, f, SUBSEP)
			if (f[1] != "S" || f[3] == 0) continue
			r = f[2]; run = f[3]; g = f[4]; j = f[5]; nx = (r + 1) % n
			if (("R", nx, run, g, j) in t)
				print (g == g0[run] ? "hop(first-step)" : "hop(later-steps)"), t["R", nx, run, g, j] - t["S", r, run, g, j]
			if (g == g0[run]) {
				if ((r, run - 1) in last)
					print "send-wait(first-step)", t["S", r, run, g, j] - last[r, run - 1]
			} else if (("R", r, run, g - 1, j) in t) {
				print "send-wait(later-steps)", t["S", r, run, g, j] - t["R", r, run, g - 1, j]
			}
		}
		for (x in first) {
			split(x, f, SUBSEP)
			if (f[2] > 0) print "run", last[x] - first[x]
		}
	}' | sort -k1,1 -k2,2n | awk '
	function flush() { if (c) printf "%-24s n=%-6d median %9.1f us   p90 %9.1f us\n", cat, c, v[int((c - 1) / 2) + 1], v[int((c - 1) * 0.9) + 1] }
	$1 != cat { flush(); cat = $1; c = 0 }
	{ v[++c] = $2 }
	END { flush() }'
