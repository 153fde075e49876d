#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Registration pins, like verbs (issue #22): a client's regions and rings are
# locked in mrocd's mapping when registered, so reclaim cannot unmap them and
# the data path never takes a page fault.  Two mrocd on AF_XDP over veth:
#  - limits.max_locked_bytes_per_client: a registration over it is refused with
#    EDQUOT, the rest stay registered; mrocd's mappings of them are locked; all
#    unlocked (status locked_bytes 0) once the client is gone;
#  - a region's pages are charged to the client's memory cgroup (libmroc populates them;
#    left to mrocd's mlock they were mrocd's), where a memory cgroup can be made;
#  - a SEND_IMM transfer whose every byte the receiver checks, while pageout
#    (process_madvise MADV_PAGEOUT, as DAMON's pageout) works on every client
#    memfd mrocd maps, in both daemons, from registration to the end: the
#    kernel refuses to page out every one of those mappings (they are locked),
#    and after a warm-up (a third of the messages) the workers' page faults
#    stay flat: none on client memory.  What is left is the engine's per-QP
#    arrays growing with the window (engine/ring.c, calloc of new heap: 0-3
#    faults in a run, perf record -e page-faults), bounded here by FAULTS_MAX;
#    without pinning the same run took 2,463 and 42,702.  Both clients try to
#    punch holes in their regions (fallocate PUNCH_HOLE, MADV_REMOVE) when the
#    warm-up ends: refused (EPERM, mrocd sealed the memfds, PROTOCOL 11a);
#    allowed, the receiver's worker faulted the region in again (256 pages).
#    Each registers its memfd a second time first (sealed: libmroc and mrocd
#    copy a live region's mapping).
# pin_client keeps no mapping of its regions itself: MADV_PAGEOUT leaves pages
# that two processes map alone (DAMON and memory.reclaim do not).
set -u
. "$(dirname "$0")/lib.sh"

PIN=$BUILD/tests/e2e/pin_client
PAGEOUT=$BUILD/tests/e2e/pageout
e2e_require
for b in "$PIN" "$PAGEOUT"; do [ -x "$b" ] || skip "$b not built"; done
e2e_setup_pair
LIMIT=$((16 << 20))
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
for n in a b; do
	sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/$n.conf"
	echo "limits = { max_locked_bytes_per_client = $LIMIT; };" >>"$E2E_DIR/$n.conf"
done
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 || fail "a: no link to b"

# locked_kb PID: kB locked in PID's client memfd mappings (smaps), and their size.
locked_kb() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { m = /memfd:mroc-/ } m && /^Size:/ { s += $2 }
	     m && /^Locked:/ { l += $2 } END { printf "%d %d\n", l, s }' "/proc/$1/smaps"
}

# ---- the limit -----------------------------------------------------------------
ip netns exec "$NS_A" "$PIN" "$E2E_DIR/a.ctl" reg $((4 << 20)) 8 "$E2E_DIR/stop-reg" \
	>"$E2E_DIR/reg.out" 2>&1 &
REG=$!
E2E_PIDS+=($REG)
for _ in $(seq 100); do grep -q registered "$E2E_DIR/reg.out" && break; sleep 0.1; done
grep -qx "registered 4" "$E2E_DIR/reg.out" ||
	fail "4 regions of 4 MiB should fit a 16 MiB limit: $(cat "$E2E_DIR/reg.out")"
grep -q "^refused: EDQUOT: .*pinned bytes" "$E2E_DIR/reg.out" ||
	fail "the fifth region was not refused with EDQUOT: $(cat "$E2E_DIR/reg.out")"
read -r l s <<<"$(locked_kb "$(e2e_pid a)")"
[ "$s" = $((16 << 10)) ] && [ "$l" = "$s" ] ||
	fail "mrocd a maps $s kB of client regions, $l kB locked (want 16384 both)"
st=$(e2e_admin a status)
[ "$(jq .locked_bytes <<<"$st")" = "$LIMIT" ] || fail "status locked_bytes: $(jq -c . <<<"$st")"
ok "over limits.max_locked_bytes_per_client: EDQUOT; mrocd's 16 MiB of mappings locked"
touch "$E2E_DIR/stop-reg"
wait $REG
e2e_wait a status '.locked_bytes == 0' 5 ||
	fail "pinned bytes not released with the client: $(e2e_admin a status | jq -c .locked_bytes)"
read -r l s <<<"$(locked_kb "$(e2e_pid a)")"
[ "$s" = 0 ] || fail "mrocd a still maps $s kB of a gone client's regions"
ok "the client gone: its regions unlocked and unmapped"

# ---- the pages are the client's ---------------------------------------------------
# libmroc allocates a region's pages in the application (MAP_POPULATE): they count against
# its memory cgroup.  Left to mrocd's mlock they were charged to mrocd's, and a tenant's
# registered memory escaped its own limit.  The client runs in a memory cgroup of its own
# (v1 memory.usage_in_bytes or v2 memory.current), charged at least its region once it is
# registered.
CG=''
for root in /sys/fs/cgroup/memory /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [ -f "$root/memory.usage_in_bytes" ] ||
		grep -qw memory "$root/cgroup.subtree_control" 2>/dev/null; then
		CG=$root/mroc-pin-$$
		break
	fi
done
if [ -n "$CG" ] && mkdir "$CG" 2>/dev/null; then
	trap 'e2e_cleanup; rmdir "$CG" 2>/dev/null' EXIT
	usage=$CG/memory.usage_in_bytes
	[ -f "$usage" ] || usage=$CG/memory.current
	REGION=$((8 << 20))
	rm -f "$E2E_DIR/stop-reg"
	(echo "$BASHPID" >"$CG/cgroup.procs" &&
		exec ip netns exec "$NS_A" "$PIN" "$E2E_DIR/a.ctl" reg $REGION 1 "$E2E_DIR/stop-reg") \
		>"$E2E_DIR/cg.out" 2>&1 &
	REG=$!
	E2E_PIDS+=($REG)
	for _ in $(seq 100); do grep -q registered "$E2E_DIR/cg.out" && break; sleep 0.1; done
	grep -qx "registered 1" "$E2E_DIR/cg.out" || fail "8 MiB not registered: $(cat "$E2E_DIR/cg.out")"
	charged=$(cat "$usage")
	[ "$charged" -ge $REGION ] ||
		fail "the client's memory cgroup holds $charged bytes with an 8 MiB region registered"
	ok "the region's pages are charged to the client's memory cgroup ($charged bytes)"
	touch "$E2E_DIR/stop-reg"
	wait $REG
	rmdir "$CG" 2>/dev/null
else
	echo "(no memory cgroup to put the client in: its charge not checked)"
fi

# ---- a transfer under forced reclaim ----------------------------------------------
SIZE=65536 MSGS=6000
ip netns exec "$NS_B" "$PIN" "$E2E_DIR/b.ctl" recv 0x22 $SIZE $MSGS >"$E2E_DIR/recv.out" 2>&1 &
RECV=$!
E2E_PIDS+=($RECV)
# Listening, not only a QP made: a REQ before the listen is refused (the ASan half saw the
# sender's "refused the connection" once, at load 10).
for _ in $(seq 100); do grep -q "^listening" "$E2E_DIR/recv.out" && break; sleep 0.1; done
grep -q "^listening" "$E2E_DIR/recv.out" || fail "the receiver did not listen within 10 s: $(cat "$E2E_DIR/recv.out")"
ip netns exec "$NS_A" "$PIN" "$E2E_DIR/a.ctl" send "$IP_B" 0x22 $SIZE $MSGS "$E2E_DIR/go" \
	>"$E2E_DIR/send.out" 2>&1 &
SEND=$!
E2E_PIDS+=($SEND)
for _ in $(seq 200); do grep -q ready "$E2E_DIR/send.out" && break; sleep 0.1; done
grep -q ready "$E2E_DIR/send.out" || fail "the sender did not connect: $(cat "$E2E_DIR/send.out")"
for n in a b; do
	"$PAGEOUT" "$(e2e_pid $n)" memfd:mroc- 120 "$E2E_DIR/stop-pageout" >"$E2E_DIR/pageout-$n.out" &
	eval "PO_$n=$!"
	E2E_PIDS+=($!)
done

# faults NAME: the workers' minor and major page faults.
faults() { e2e_admin "$1" status | jq -r '"\(.worker_minor_faults) \(.worker_major_faults)"'; }
read -r a_minr a_majr <<<"$(faults a)"
read -r b_minr b_majr <<<"$(faults b)"
for _ in $(seq 600); do grep -q warm "$E2E_DIR/send.out" && break; sleep 0.1; done
grep -q warm "$E2E_DIR/send.out" || fail "no warm-up within 60 s: $(cat "$E2E_DIR/send.out")"
read -r a_min0 a_maj0 <<<"$(faults a)"
read -r b_min0 b_maj0 <<<"$(faults b)"
touch "$E2E_DIR/go"
wait $SEND || fail "the sender failed: $(cat "$E2E_DIR/send.out")"
wait $RECV || fail "the receiver failed: $(cat "$E2E_DIR/recv.out")"
touch "$E2E_DIR/stop-pageout"
for n in a b; do
	wait "$(eval echo \$PO_$n)"
	rc=$?
	[ $rc = 77 ] && skip "$(cat "$E2E_DIR/pageout-$n.out")"
	[ $rc = 0 ] || fail "pageout on $n: $(cat "$E2E_DIR/pageout-$n.out")"
done
grep -q "verified $MSGS messages" "$E2E_DIR/recv.out" || fail "receiver: $(cat "$E2E_DIR/recv.out")"
read -r a_min1 a_maj1 <<<"$(faults a)"
read -r b_min1 b_maj1 <<<"$(faults b)"
echo "   workers' page faults in the warm-up: a +$((a_min0 - a_minr)) minor +$((a_maj0 - a_majr)) major, b +$((b_min0 - b_minr)) +$((b_maj0 - b_majr))"
echo "   workers' page faults after it: a +$((a_min1 - a_min0)) minor +$((a_maj1 - a_maj0)) major, b +$((b_min1 - b_min0)) +$((b_maj1 - b_maj0)); pageout a: $(cat "$E2E_DIR/pageout-a.out"); b: $(cat "$E2E_DIR/pageout-b.out")"
for n in a b; do
	grep -Eq "passes [1-9].*mappings [1-9]" "$E2E_DIR/pageout-$n.out" ||
		fail "pageout never found mrocd $n's client mappings: $(cat "$E2E_DIR/pageout-$n.out")"
	grep -Eq "mappings ([0-9]+), advised 0 bytes, refused \1\$" "$E2E_DIR/pageout-$n.out" ||
		fail "mrocd $n's client mappings were not all locked: $(cat "$E2E_DIR/pageout-$n.out")"
done
for f in send recv; do
	grep -q "^punch: fallocate EPERM, MADV_REMOVE EPERM" "$E2E_DIR/$f.out" ||
		fail "the $f client could punch holes in its registered region: $(grep punch "$E2E_DIR/$f.out")"
done
FAULTS_MAX=64
for f in $((a_min1 - a_min0)) $((a_maj1 - a_maj0)) $((b_min1 - b_min0)) $((b_maj1 - b_maj0)); do
	[ "$f" -le $FAULTS_MAX ] || fail "the workers took page faults on the data path under reclaim"
done
ok "$MSGS x $SIZE bytes verified under MADV_PAGEOUT: no page out of client memory, workers' faults flat;" \
	"the clients' hole punching refused"
e2e_wait a status '.locked_bytes == 0' 5 || fail "a: pinned bytes left after the clients ended"
e2e_wait b status '.locked_bytes == 0' 5 || fail "b: pinned bytes left after the clients ended"
ok "every pinned byte released when the clients ended"
