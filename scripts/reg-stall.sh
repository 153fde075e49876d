#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# How long mrocd's control thread is held by one client's registration (issue #22):
# one mrocd on AF_XDP in a network namespace of its own (tests/e2e/lib.sh), a client
# (tests/e2e/pin_client) that registers a region of SIZE_MB, and meanwhile the admin
# socket's `status` asked again and again: the registration's time and the slowest
# answer the admin socket gave while it ran.  Every other client's control call waits
# as that answer did.  Root.
#
#   scripts/reg-stall.sh    env: SIZE_MB (1024), REPS (3), BUILD (build: its mrocd), PIN (the
#                           client, BUILD/tests/e2e/pin_client)
set -u
. "$(dirname "$0")/../tests/e2e/lib.sh"

SIZE_MB=${SIZE_MB:-1024}
REPS=${REPS:-3}
PIN=${PIN:-$BUILD/tests/e2e/pin_client}
e2e_require
[ -x "$PIN" ] || skip "$PIN not built (make tests)"
e2e_setup_pair
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf"
echo "limits = { max_locked_bytes_per_client = $((SIZE_MB << 20))L; };" >>"$E2E_DIR/a.conf"
e2e_start a "$NS_A"
e2e_wait_ready a

now_ns() { date +%s%N; }
for ((r = 1; r <= REPS; r++)); do
	out=$E2E_DIR/reg.$r.out
	: >"$out"
	rm -f "$E2E_DIR/stop-reg"
	t0=$(now_ns)
	ip netns exec "$NS_A" "$PIN" "$E2E_DIR/a.ctl" reg $((SIZE_MB << 20)) 1 "$E2E_DIR/stop-reg" \
		>"$out" 2>&1 &
	reg=$!
	E2E_PIDS+=("$reg")
	slowest=0
	until grep -q '^registered' "$out" || ! kill -0 "$reg" 2>/dev/null; do
		s=$(now_ns)
		e2e_admin a status >/dev/null
		d=$(( ($(now_ns) - s) / 1000000 ))
		[ "$d" -le "$slowest" ] || slowest=$d
	done
	t1=$(now_ns)
	grep -qx 'registered 1' "$out" || fail "run $r: the region was not registered: $(cat "$out")"
	echo "run $r: $SIZE_MB MiB registered in $(( (t1 - t0) / 1000000 )) ms;" \
		"slowest admin answer meanwhile $slowest ms (load $(cut -d' ' -f1 /proc/loadavg))"
	touch "$E2E_DIR/stop-reg"
	wait "$reg"
done
