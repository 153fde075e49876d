#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# security.mode between two mrocd (docs/PROTOCOL.md 1.2, 11a), A on AF_XDP, B on
# the UDP backend: "token" against "none" is refused and counted on both sides;
# "token" connects, and a capture shows a SEND's text in clear; a keepalive of the
# control link taken from the capture and sent again without its tag, with a wrong
# one, or turned into a DISCONNECT (the right QPNs, from A's address) is refused
# (rx_bad_tag) and the link stays up; "aead" with a key
# file: mrocd refuses a key file others can read, a verified write_bw and the SEND
# go through, the capture holds no trace of the text, and sealed packets taken
# from the capture and sent again are dropped and counted when a ciphertext bit is
# flipped or the key id is changed (and opened when left alone), and a sealed keepalive sent
# again is refused as stale (rx_stale_keepalive: no sign of life).
set -u
. "$(dirname "$0")/lib.sh"
PERF=$BUILD/mroc-perf
EX=$BUILD/examples
TEXT=mroc-plaintext-marker-7f3a9c

e2e_require
[ -x "$PERF" ] || skip "$PERF not built"
[ -x "$EX/send" ] && [ -x "$EX/recv" ] || skip "$EX/send, $EX/recv not built"
for t in dumpcap tshark; do
	command -v $t >/dev/null || skip "needs $t (scripts/deps.sh installs it)"
done
e2e_setup_pair

# configs MODE_A MODE_B [KEYFILE]: fresh configs for both daemons.
configs() {
	e2e_config a af_xdp "$IF_A" "$IP_A" "$IP_B"
	e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
	sed -i 's/log_level = "debug"/log_level = "info"/' "$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
	echo "security = { mode = \"$1\"; key_file = \"${3:-}\"; };" >>"$E2E_DIR/a.conf"
	echo "security = { mode = \"$2\"; key_file = \"${3:-}\"; };" >>"$E2E_DIR/b.conf"
}

start_both() {
	: >"$E2E_DIR/a.notify.log"
	: >"$E2E_DIR/b.notify.log"
	e2e_start a "$NS_A"
	e2e_start b "$NS_B"
	e2e_wait_ready a
	e2e_wait_ready b
}

stop_both() {
	local n
	for n in a b; do
		e2e_stop $n
		[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
	done
}

links_up() {
	e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
		fail "$1: no control connection: $(e2e_admin a links)"
}

# send_captured PCAP: recv on B, send TEXT from A, capturing on B's interface.
send_captured() {
	ip netns exec "$NS_B" dumpcap -i "$IF_B" -f "udp port 4793" -w "$1" -P \
		>"$E2E_DIR/dumpcap.log" 2>&1 &
	local dump=$! srv
	for _ in $(seq 100); do grep -q "^Capturing on" "$E2E_DIR/dumpcap.log" && break; sleep 0.1; done
	sleep 0.5	# it says so a little before it really captures
	MROC_SOCKET=$E2E_DIR/b.ctl ip netns exec "$NS_B" timeout 30 "$EX/recv" 43 \
		>"$E2E_DIR/recv.out" 2>&1 &
	srv=$!
	for _ in $(seq 100); do grep -q "^listening" "$E2E_DIR/recv.out" && break; sleep 0.1; done
	# Not listening (it failed, or is slow): say so, not send's refusal that would follow.
	grep -q "^listening" "$E2E_DIR/recv.out" || fail "recv did not listen within 10 s:" \
		"$(cat "$E2E_DIR/recv.out"); B's clients: $(e2e_admin b status | jq -c '.clients // .')"
	MROC_SOCKET=$E2E_DIR/a.ctl ip netns exec "$NS_A" timeout 30 "$EX/send" "$IP_B" 43 "$TEXT" \
		>"$E2E_DIR/send.out" 2>&1 || fail "send: $(cat "$E2E_DIR/send.out"); A's CM and aead" \
		"counters: $(e2e_admin a counters | jq -c '[.engine, .worker] | add | with_entries(select(.key |
		test("^(cm_|aead_|rx_bad|rx_unknown)")))'); B's: $(e2e_admin b counters | jq -c '[.engine,
		.worker] | add | with_entries(select(.key | test("^(cm_|aead_|rx_bad|rx_unknown)")))')"
	wait $srv || fail "recv: $(cat "$E2E_DIR/recv.out")"
	grep -q "received ${#TEXT} bytes: $TEXT" "$E2E_DIR/recv.out" ||
		fail "recv: $(cat "$E2E_DIR/recv.out")"
	sleep 0.3
	kill -INT $dump
	wait $dump
	[ -s "$1" ] || fail "no capture: $(cat "$E2E_DIR/dumpcap.log")"
}

# resend HEX: one datagram (bash's /dev/udp would split it at every newline byte).
resend() {
	printf '%b' "$(sed 's/../\\x&/g' <<<"$1")" >"$E2E_DIR/pkt.bin"
	ip netns exec "$NS_A" socat -u "OPEN:$E2E_DIR/pkt.bin" "UDP:$IP_B:4793" ||
		fail "cannot send the packet"
}
bcount() { e2e_admin b counters | jq -r ".worker.$1"; }
# bwait COUNTER MIN: until b's worker counter reaches MIN (a loaded machine may take a while).
bwait() { e2e_wait b counters ".worker.$1 >= $2" 10 || { e2e_admin b counters | jq -c .worker; false; }; }
# captured PCAP FILTER: the UDP payload (hex) of the first packet A sent that FILTER takes,
# without its ICRC (A is on AF_XDP), so that what B checks next is the security mode.
captured() {
	local hex flags
	hex=$(tshark -r "$1" -Y "ip.src == $IP_A && $2" -T fields -e udp.payload 2>/dev/null |
		head -n 1 | tr -d ':\n')
	flags=$(( 0x${hex:4:2} ))
	[ $((flags & 0x80)) = $((0x80)) ] || fail "no packet with an ICRC for \"$2\": \"$hex\""
	echo "${hex:0:4}$(printf '%02x' $((flags & 0x7f)))${hex:6:$((${#hex} - 6 - 8))}"
}
# ecount COUNTER: b's engine counter.
ecount() { e2e_admin b counters | jq -r ".engine.$1"; }

# ---- "token" against "none": refused, counted on both sides ----
configs token none
start_both
e2e_wait a counters '.engine.cm_sec_mismatch >= 1' 10 ||
	fail "a: no cm_sec_mismatch: $(e2e_admin a counters | jq -c .engine)"
e2e_wait b counters '.engine.cm_sec_mismatch >= 1' 10 ||
	fail "b: no cm_sec_mismatch: $(e2e_admin b counters | jq -c .engine)"
[ "$(e2e_admin a links | jq '[.links[] | select(.state == "up")] | length')" = 0 ] ||
	fail "a control link came up across security modes: $(e2e_admin a links)"
# An application's QP across the modes fails at the REJ, and says why (mroc_wc.conn_err).
ip netns exec "$NS_B" timeout 60 "$PERF" write_bw -S "$E2E_DIR/b.ctl" -p 18902 --sleep \
	-s 4096 -n 1 >"$E2E_DIR/srv.log" 2>&1 &
srv=$!
sleep 0.3
ip netns exec "$NS_A" timeout 60 "$PERF" write_bw -S "$E2E_DIR/a.ctl" -p 18902 --sleep \
	-s 4096 -n 1 "$IP_B" >"$E2E_DIR/cli.log" 2>&1 && fail "a QP connected across security modes"
grep -q "security modes differ" "$E2E_DIR/cli.log" ||
	fail "the client does not say why it failed: $(cat "$E2E_DIR/cli.log")"
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
stop_both
ok "token against none: CONNECT refused, cm_sec_mismatch counted on both daemons, the client told why"

# ---- "token": connects; the capture shows the text ----
configs token token
start_both
links_up token
send_captured "$E2E_DIR/token.pcap"
grep -qa "$TEXT" "$E2E_DIR/token.pcap" || fail "token: the text is not in the capture (the check is broken)"
for n in a b; do
	jq -e '.engine.rx_bad_tag == 0 and .engine.cm_sec_mismatch == 0' \
		<<<"$(e2e_admin $n counters)" >/dev/null || fail "$n: token refused packets"
done
ok "token: connected, SEND delivered (and readable in a capture)"

# A keepalive A sent on the control link (a live connection): right QPNs, from A's address.
ka=$(captured "$E2E_DIR/token.pcap" "udp.payload[1] == 11")
# 16 bytes of header, 8 of its number (PROTOCOL 3.4a), 8 of tag.
[ $(( ${#ka} / 2 )) = 32 ] && [ $(( 0x${ka:4:2} & 0x40 )) = 64 ] || fail "not a tagged keepalive: $ka"
bad=$(ecount rx_bad_tag)
flags=$(printf '%02x' $(( 0x${ka:4:2} & 0xbf )))
resend "${ka:0:4}$flags${ka:6:42}"				# its tag taken off
resend "${ka:0:62}$(printf '%02x' $(( 0x${ka:62:2} ^ 1 )))"	# a wrong tag
resend "${ka:0:2}2300${ka:6:26}$(printf '%048d' 0)"		# a DISCONNECT, untagged
resend "${ka:0:2}2340${ka:6:26}$(printf '%048d' 0)${ka:48:16}"	# ... with a made-up tag
e2e_wait b counters ".engine.rx_bad_tag >= $((bad + 4))" 10 ||
	fail "forged packets with the right QPNs not refused: $(e2e_admin b counters | jq -c .engine)"
sleep 0.5
[ "$(e2e_admin a links | jq '[.links[] | select(.state == "up")] | length')" -ge 1 ] ||
	fail "the forged DISCONNECT took the control link down: $(e2e_admin a links)"
stop_both
ok "token: forgeries with the right QPNs (no tag, a wrong tag, a DISCONNECT) refused, rx_bad_tag"


# ---- "aead" ----
keys=$E2E_DIR/keys
{
	echo "# test keys"
	echo "3 $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	echo "4 $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
} >"$keys"
chmod 0644 "$keys"
configs aead aead "$keys"
out=$("$MROCD" --check-config -c "$E2E_DIR/a.conf" 2>&1) && fail "a key file of mode 0644 accepted"
grep -q "0600" <<<"$out" || fail "check-config does not say why: $out"
chmod 0600 "$keys"
"$MROCD" --check-config -c "$E2E_DIR/a.conf" >/dev/null || fail "check-config refuses the key file"
ok "aead: a key file others can read is refused, 0600 accepted"

start_both
links_up aead
ip netns exec "$NS_B" timeout 60 "$PERF" write_bw -S "$E2E_DIR/b.ctl" -p 18900 --sleep --verify \
	-s 100000 -n 50 >"$E2E_DIR/srv.log" 2>&1 &
srv=$!
sleep 0.3
ip netns exec "$NS_A" timeout 60 "$PERF" write_bw -S "$E2E_DIR/a.ctl" -p 18900 --sleep --verify \
	-s 100000 -n 50 "$IP_B" >"$E2E_DIR/cli.log" 2>&1 || fail "write_bw: $(cat "$E2E_DIR/cli.log")"
wait $srv || fail "write_bw server: $(cat "$E2E_DIR/srv.log")"
# The other way: full-size sealed packets from the UDP backend.
ip netns exec "$NS_A" timeout 60 "$PERF" write_bw -S "$E2E_DIR/a.ctl" -p 18901 --sleep --verify \
	-s 100000 -n 50 >"$E2E_DIR/srv.log" 2>&1 &
srv=$!
sleep 0.3
ip netns exec "$NS_B" timeout 60 "$PERF" write_bw -S "$E2E_DIR/b.ctl" -p 18901 --sleep --verify \
	-s 100000 -n 50 "$IP_A" >"$E2E_DIR/cli.log" 2>&1 || fail "write_bw B->A: $(cat "$E2E_DIR/cli.log")"
wait $srv || fail "write_bw B->A server: $(cat "$E2E_DIR/srv.log")"
send_captured "$E2E_DIR/aead.pcap"
grep -qa "$TEXT" "$E2E_DIR/aead.pcap" && fail "aead: the text is readable in the capture"
for n in a b; do
	c=$(e2e_admin $n counters)
	jq -e '.worker.aead_tx_sealed > 100 and .worker.aead_rx_opened > 100 and
	       .worker.aead_tx_failed == 0 and
	       .worker.aead_rx_bad_tag == 0 and .worker.aead_rx_bad_key == 0 and
	       .engine.rx_bad_tag == 0' <<<"$c" >/dev/null ||
		fail "$n: aead counters: $(jq -c .worker <<<"$c")"
done
ok "aead: verified write_bw both ways and SEND delivered; the text is not in the capture"

# A sealed data packet A sent, from the capture: its ICRC (A is on AF_XDP) taken off, so
# that B's AES-GCM check is what judges it; sent again from A's address by a kernel socket.
hex=$(tshark -r "$E2E_DIR/aead.pcap" -Y "ip.src == $IP_A && udp.payload[1] == 03" \
	-T fields -e udp.payload 2>/dev/null | head -n 1 | tr -d ':\n')
[ $(( ${#hex} / 2 )) = $(( 60 + ${#TEXT} + 36 + 4 )) ] || fail "no sealed SEND in the capture: $hex"
flags=$(( 0x${hex:4:2} ))
[ $((flags & 0xa0)) = $((0xa0)) ] || fail "the captured packet is not sealed with an ICRC: flags $flags"
hex=${hex:0:4}$(printf '%02x' $((flags & 0x7f)))${hex:6:$((${#hex} - 6 - 8))}
nbytes=$(( ${#hex} / 2 ))

# Opened, it reaches the engine as a stale packet of a closed connection.
stale='(.engine.rx_unknown_qp + .engine.rx_dup + .engine.rx_bad_state)'
was=$(e2e_admin b counters | jq "$stale")
resend "$hex"
e2e_wait b counters "$stale > $was" 10 ||
	fail "the unchanged packet did not reach the engine: the forgery method is broken"
bad=$(bcount aead_rx_bad_tag)
off=$(( 2 * 70 ))		# a byte of the encrypted payload
flipped=${hex:0:$off}$(printf '%02x' $(( 0x${hex:$off:2} ^ 0x04 )))${hex:$((off + 2))}
resend "$flipped"
bwait aead_rx_bad_tag $((bad + 1)) || fail "a flipped ciphertext bit was not counted"
badkey=$(bcount aead_rx_bad_key)
off=$(( 2 * (nbytes - 36) ))	# the trailer's key id
wrongkey=${hex:0:$off}000000ff${hex:$((off + 8))}
resend "$wrongkey"
bwait aead_rx_bad_key $((badkey + 1)) || fail "an unknown key id was not counted"
c=$(e2e_admin b counters)
jq -e ".engine.rx_bad_tag == 0 and .worker.aead_rx_bad_tag == $((bad + 1)) and
       .worker.aead_rx_bad_key == $((badkey + 1))" <<<"$c" >/dev/null ||
	fail "b: $(jq -c '.engine, .worker' <<<"$c")"
kill -0 "$PID_b" || fail "b died"
ok "aead: a flipped ciphertext bit (aead_rx_bad_tag) and an unknown key id (aead_rx_bad_key) dropped"

# The last sealed keepalive A sent (the control link's, which lives on), sent again from A's
# address: it opens (sealed for these addresses), but its number (PROTOCOL 3.4a) is not
# above the last one B took, so it is no sign of life: dropped and counted (#24 item 6).
# Only the control link's: a client QP's keepalive names a QP that is gone by now (its replay
# is then rx_unknown_qp, which says nothing about the number check).
links=$(e2e_admin b links | jq -r '.links[] | select(.state == "up") | .qpn' |
	while read -r q; do printf '%08x ' "$q"; done)
[ -n "$links" ] || fail "b has no control link up: $(e2e_admin b links)"
ka=$(tshark -r "$E2E_DIR/aead.pcap" -Y "ip.src == $IP_A && udp.payload[1] == 11" \
	-T fields -e udp.payload 2>/dev/null | tr -d ':' |
	while read -r p; do [[ " $links" == *" ${p:8:8} "* ]] && echo "$p"; done | tail -n 1)
[ $(( ${#ka} / 2 )) = $(( 16 + 8 + 36 + 4 )) ] || fail "no sealed keepalive in the capture: $ka"
flags=$(( 0x${ka:4:2} ))
ka=${ka:0:4}$(printf '%02x' $((flags & 0x7f)))${ka:6:$((${#ka} - 6 - 8))}
was=$(ecount rx_stale_keepalive)
opened=$(bcount aead_rx_opened)
for _ in 1 2 3; do resend "$ka"; done
e2e_wait b counters ".engine.rx_stale_keepalive >= $((was + 3))" 10 ||
	fail "a replayed sealed keepalive not refused: $(e2e_admin b counters | jq -c '.engine, .worker')"
c=$(e2e_admin b counters)
jq -e ".worker.aead_rx_opened >= $((opened + 3)) and .worker.aead_rx_bad_tag == $((bad + 1))" \
	<<<"$c" >/dev/null || fail "b: the replays did not open as sealed: $(jq -c .worker <<<"$c")"
e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 5 ||
	fail "the control link went down: $(e2e_admin a links)"
ok "aead: a sealed keepalive sent again opens but is refused as stale (rx_stale_keepalive)"
stop_both
echo "1 passed, 0 failed"
