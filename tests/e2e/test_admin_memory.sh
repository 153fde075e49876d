#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The admin socket's "qps" reply gives its memory back (issue #22).  With 1,000
# client QPs (4 clients x 250) the reply builds tens of MiB of JSON on mrocd's
# control thread; before daemon/ctl.c trimmed the heap after such a reply, what
# it freed stayed in mrocd (interleaved with what the clients' QPs allocated),
# and bench-scale's sending daemon held 156 MiB more than idle at 4,000 QPs,
# most of it from its own "qp -d" polls.  Asserted: ten "qps" replies in a row
# leave mrocd's private memory (Pss_Anon) within half a reply's size of where it
# was before them (before the trim: 33 MiB kept after replies of 2.5 MB; with it,
# under 0.2 MiB).  Memory only, never times.
set -u
. "$(dirname "$0")/lib.sh"

PERF=$BUILD/mroc-perf
CLIENTS=4
QPS=250
e2e_require
[ -x "$PERF" ] || skip "$PERF not built"
# What is asserted is glibc's heap giving pages back (malloc_trim); a sanitizer's allocator
# holds freed memory in its quarantine whatever mrocd does (seen: 431 MiB kept under ASan).
[ -z "${SANITIZE:-}" ] || skip "SANITIZE=$SANITIZE build: the sanitizer's allocator keeps what is freed"
e2e_setup_pair
e2e_pair_up

# pss_anon NAME: the daemon's private anonymous memory, KiB.
pss_anon() { awk '$1 == "Pss_Anon:" { print $2 }' "/proc/$(e2e_pid "$1")/smaps_rollup"; }

# 1,000 QPs that stay connected with little traffic: 64 B messages, one in flight per QP.
pids=()
for i in $(seq $CLIENTS); do
	ip netns exec "$NS_B" timeout 150 "$PERF" write_bw -S "$E2E_DIR/b.ctl" -p $((18600 + i)) \
		--sleep --timeout 60 >"$E2E_DIR/srv-$i.txt" 2>&1 &
	pids+=($!)
	E2E_PIDS+=($!)
done
sleep 0.5
for i in $(seq $CLIENTS); do
	ip netns exec "$NS_A" timeout 150 "$PERF" write_bw -S "$E2E_DIR/a.ctl" -p $((18600 + i)) \
		--sleep --timeout 60 -q $QPS -s 64 -t 1 -D 60 "$IP_B" \
		>"$E2E_DIR/cli-$i.txt" 2>"$E2E_DIR/cli-$i.err" &
	pids+=($!)
	E2E_PIDS+=($!)
done
e2e_wait a counters ".clients.qps == $((CLIENTS * QPS))" 60 ||
	fail "a holds $(e2e_admin a counters | jq .clients.qps) of $((CLIENTS * QPS)) client QPs"
ok "$((CLIENTS * QPS)) client QPs on a"
sleep 2	# their connections done and their first messages out: the rings at their size

before=$(pss_anon a)
size=0
for _ in $(seq 10); do
	size=$(e2e_admin a qps | wc -c)
done
after=$(pss_anon a)
echo "a: Pss_Anon $before -> $after KiB over 10 \"qps\" replies of $size bytes"
[ "$size" -gt $((1024 * 1024)) ] || fail "the reply is only $size bytes: too small to test"
slack=$((size / 2048))
[ $((after - before)) -le $slack ] ||
	fail "a kept $((after - before)) KiB after 10 \"qps\" replies (allowed $slack, half a reply)"
ok "10 \"qps\" replies of $((CLIENTS * QPS)) QPs: mrocd's memory grew $((after - before)) KiB"

for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
