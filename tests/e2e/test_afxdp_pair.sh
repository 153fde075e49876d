#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two mrocd in network namespaces over a veth pair, AF_XDP in native mode:
# they connect in band, keepalives flow through the XDP program and the
# AF_XDP sockets (not the fallback), ping still works, malformed packets are
# counted and dropped, and SIGTERM leaves no XDP program attached.
set -u
. "$(dirname "$0")/lib.sh"

# check_stamps NAME WHERE: the XDP program's arrival stamps reach NAME's engine, when the
# kernel let mrocd load the stamping program (status xdp_stamps); when it did not (some
# kernels refuse bpf_xdp_adjust_meta to XDP programs), mrocd's log says so.  Sets STAMPS.
check_stamps() {
	if [ "$(e2e_admin $1 status | jq -r .xdp_stamps)" = true ]; then
		e2e_wait $1 counters '.engine.rx_stamped >= 3' 10 ||
			fail "$1: no arrival stamps in $2: $(e2e_admin $1 counters)"
		STAMPS=stamped
	else
		grep -q "refuses bpf_xdp_adjust_meta" "$E2E_DIR/$1.log" ||
			fail "$1: a program without stamps and no warning why: $(e2e_admin $1 status)"
		STAMPS="not stamped (the kernel refuses the helper; mrocd warned)"
	fi
}

e2e_require
e2e_setup_pair
e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
e2e_config b af_xdp "$IF_B" "$IP_B" "$IP_A"
WATCHDOG_USEC=200000 e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b
ok "both daemons sent READY=1"

for n in a b; do
	st=$(e2e_admin $n status)
	[ "$(jq -r .backend <<<"$st")" = af_xdp ] || fail "$n: backend is not af_xdp: $st"
	[ "$(jq -r .fallback <<<"$st")" = false ] || fail "$n: fell back: $st"
	[ "$(jq -r .xdp_mode <<<"$st")" = native ] || fail "$n: XDP not native: $st"
	[ "$(jq -r '.xdp_prog_id > 0' <<<"$st")" = true ] || fail "$n: no XDP program id: $st"
done
ip -n "$NS_A" link show dev "$IF_A" | grep -q "xdp" || fail "no XDP program on $IF_A"
ok "AF_XDP native, XDP program attached"

e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
	fail "a: control connection never came up: $(e2e_admin a links)"
e2e_wait b links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
	fail "b: control connection never came up: $(e2e_admin b links)"
ok "control connections up in band"

# Keepalives every 100 ms: soon both sides have sent and received several, through the
# XDP program's redirect into the AF_XDP socket (waited for: 10 s at most), each with
# the program's arrival stamp in its metadata, read by the backend and taken by the engine.
for n in a b; do
	e2e_wait $n counters '.engine.tx_keepalive >= 3 and .engine.rx_pkts >= 3 and
		.xdp.redirected >= 3 and .backend.rx_pkts >= 3 and .backend.tx_pkts >= 3' 10
	check_stamps $n "native mode"
	c=$(e2e_admin $n counters)
	jq -e '.engine.tx_keepalive >= 3 and .engine.tx_cm >= 1 and .engine.rx_pkts >= 3' \
		<<<"$c" >/dev/null || fail "$n: keepalives/control did not flow: $c"
	jq -e '.xdp.redirected >= 3 and .backend.rx_pkts >= 3 and .backend.tx_pkts >= 3' \
		<<<"$c" >/dev/null || fail "$n: traffic did not cross XDP/AF_XDP: $c"
	# Batches: at least one each way, and never more than the packets in them.
	jq -e '.backend.rx_batches >= 1 and .backend.rx_batches <= .backend.rx_pkts and
		.backend.tx_batches >= 1 and .backend.tx_batches <= .backend.tx_pkts' \
		<<<"$c" >/dev/null || fail "$n: receive or TX batches not counted: $c"
done
ok "control and keepalive packets went through XDP and AF_XDP on both sides, $STAMPS, in counted batches"
grep -q "WATCHDOG=1" "$E2E_DIR/a.notify.log" || fail "a: no WATCHDOG=1 with WATCHDOG_USEC set"
grep -q "WATCHDOG=1" "$E2E_DIR/b.notify.log" && fail "b: WATCHDOG=1 without WATCHDOG_USEC"
ok "watchdog pings only when asked for"

ip netns exec "$NS_A" ping -c 3 -i 0.2 -W 2 "$IP_B" >/dev/null || fail "ping A -> B failed with XDP attached"
ok "ping works with the XDP program attached"

before=$(e2e_admin b counters)
# Too short for a MetaRoCE header; then a bad version; then a bad opcode (passes XDP, the engine drops it).
ip netns exec "$NS_A" bash -c "printf 'garbage' >/dev/udp/$IP_B/4793"
ip netns exec "$NS_A" bash -c "printf '\\x02\\x01\\x00\\x00AAAABBBBCCCCDDDD' >/dev/udp/$IP_B/4793"
ip netns exec "$NS_A" bash -c "printf '\\x01\\x7f\\x00\\x00AAAABBBBCCCCDDDD' >/dev/udp/$IP_B/4793"
e2e_wait b counters "$(jq -r '"(.xdp.drop_short_mroc > \(.xdp.drop_short_mroc)) and
	(.xdp.drop_bad_mroc_version > \(.xdp.drop_bad_mroc_version)) and
	(.engine.rx_malformed > \(.engine.rx_malformed))"' <<<"$before")" 10
after=$(e2e_admin b counters) || fail "b stopped answering after malformed packets"
d() { echo $(( $(jq -r "$1" <<<"$after") - $(jq -r "$1" <<<"$before") )); }
[ "$(d .xdp.drop_short_mroc)" -ge 1 ] || fail "short packet not counted: $after"
[ "$(d .xdp.drop_bad_mroc_version)" -ge 1 ] || fail "bad version not counted: $after"
[ "$(d .engine.rx_malformed)" -ge 1 ] || fail "bad opcode not counted by the engine: $after"
kill -0 "$PID_b" || fail "b died"
ok "malformed packets counted and dropped, daemon still running"

# A crash leaves no XDP program (it hangs on a bpf_link, gone with the process); a restart
# works, here in generic (skb) XDP mode, where the arrival stamps must come through too.
old_id=$(jq -r .xdp_prog_id <<<"$(e2e_admin a status)")
kill -KILL "$PID_a"
wait "$PID_a" 2>/dev/null
ip -n "$NS_A" link show dev "$IF_A" | grep -q "xdp" && fail "the crashed daemon's program stayed"
: >"$E2E_DIR/a.notify.log"
sed -i 's/xdp_mode = "native";/xdp_mode = "generic";/' "$E2E_DIR/a.conf"
e2e_start a "$NS_A"
e2e_wait_ready a
st=$(e2e_admin a status)
new_id=$(jq -r .xdp_prog_id <<<"$st")
[ "$new_id" != "$old_id" ] || fail "restart reports the dead daemon's program $old_id"
[ "$(jq -r .xdp_mode <<<"$st")" = generic ] || fail "a: XDP not generic after the restart: $st"
e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
	fail "a: no control connection after the restart: $(e2e_admin a links)"
check_stamps a "generic mode"
ok "a crash left no XDP program; the restart attached its own ($old_id -> $new_id, generic), reconnected, $STAMPS"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC after SIGTERM"
done
grep -q "STOPPING=1" "$E2E_DIR/a.notify.log" || fail "no STOPPING=1"
ip -n "$NS_A" link show dev "$IF_A" | grep -q "xdp" && fail "XDP program still attached on $IF_A"
ip -n "$NS_B" link show dev "$IF_B" | grep -q "xdp" && fail "XDP program still attached on $IF_B"
[ -e "$E2E_DIR/a.admin" ] && fail "admin socket left behind"
ok "SIGTERM: clean exit, XDP detached, sockets removed"
echo "1 passed, 0 failed"
