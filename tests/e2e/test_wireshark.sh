#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Wireshark dissector (tools/wireshark/mroc.lua) under tshark:
#  1. hand-made packets of every header (text2pcap): the fields, the SACK bitmap
#     as PSN ranges, NAK codes, CM reasons, the ICRC checked, and each malformed
#     case that mrocd drops shown as malformed (not as a Lua error);
#  2. a real transfer between two mrocd on AF_XDP over a 1-plane fabric with 2%
#     loss, captured with `mroc-cli capture` on the plane's router namespace
#     (AF_XDP frames are visible there, not on the hosts): every packet decodes,
#     none is malformed, data, ACKs with SACK ranges, retransmissions and CM show.
set -u
. "$(dirname "$0")/lib.sh"

LUA=$E2E_TOP/tools/wireshark/mroc.lua
for t in tshark text2pcap; do
	command -v $t >/dev/null || skip "needs $t (scripts/deps.sh installs tshark)"
done
TMP=$(mktemp -d /tmp/mroc-ws.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
ts() { tshark -X "lua_script:$LUA" "$@" 2>>"$TMP/tshark.err"; }

# ---- 1. hand-made packets ------------------------------------------------------------
h8() { printf '%02x' "$1"; }
h16() { printf '%04x' "$1"; }
h32() { printf '%08x' "$1"; }
h64() { printf '%016x' "$1"; }
zeros() { printf '%0*d' $(($1 * 2)) 0; }
# common VERSION OPCODE FLAGS PATH DST_QPN SRC_QPN TS (16 bytes)
common() { echo -n "$(h8 "$1")$(h8 "$2")$(h8 "$3")$(h8 "$4")$(h32 "$5")$(h32 "$6")$(h32 "$7")"; }
# data PSN FLOOR DSN MSN SSN OFFSET MSG_LEN KEY IMM RADDR (44 bytes)
data() { echo -n "$(h32 "$1")$(h32 "$2")$(h32 "$3")$(h32 "$4")$(h32 "$5")$(h32 "$6")$(h32 "$7")$(h32 "$8")$(h32 "$9")$(h64 "${10}")"; }
# cm SERVICE ISN_DSN ISN_PSN MTU NPATHS MODE REASON (24 bytes)
cm() { echo -n "$(h64 "$1")$(h32 "$2")$(h32 "$3")$(h16 "$4")$(h8 "$5")$(h8 "$6")$(h8 "$7")$(zeros 3)"; }
pkt() { sed 's/../& /g; s/^/0000 /' <<<"$1"; }
{
	# 1 ACK path 2: cum_psn 100, cum_dsn 50, hint 25000 Mbit/s, NAK RNR at DSN 51 (seq 3);
	#   SACK bits 0, 1, 3, 15 and 255: PSNs 101-102, 104, 116, 356.
	pkt "$(common 1 0x10 0 2 7 9 1000)$(h32 100)$(h32 50)$(h32 5)$(h32 10)$(h32 2)$(h32 25000)$(h32 51)$(h16 3)$(h8 1)00""0b80$(zeros 29)80"
	# 2 WRITE, RETX, path 1: 16 bytes at offset 4096 of an 8192-byte message, rkey 0x1234
	pkt "$(common 1 0x01 2 1 7 9 1)$(data 10 8 20 3 0 4096 8192 0x1234 0 65536)$(zeros 16)"
	# 3 CONNECT_REQ service 42, 4 paths, MTU 4096, MetaRoCE
	pkt "$(common 1 0x20 0 0 0 9 1)$(cm 42 1000 2000 4096 4 0 0)"
	# 4 CONNECT_REJ NO_LISTENER
	pkt "$(common 1 0x22 0 0 9 0 1)$(cm 43 0 0 0 0 0 1)"
	# 5 KEEPALIVE with ACK_REQ on path 3
	pkt "$(common 1 0x11 1 3 7 9 1)"
	# 6 READ_RESP answering the READ_REQ of MSN 5; 7 SEND_IMM imm 0xbeef
	pkt "$(common 1 0x06 0 0 7 9 1)$(data 1 1 1 0 0 0 4 5 0 0)01020304"
	pkt "$(common 1 0x04 0 0 7 9 1)$(data 1 1 1 0 2 0 4 0 0xbeef 0)01020304"
	# 8.. malformed: 10 bytes; version 2; opcode 0x30; flag 0x40; path 16; a 40-byte ACK;
	#   a WRITE whose payload passes msg_len; a READ_REQ with a payload; an empty segment.
	pkt "0110000200000007000a"
	pkt "$(common 2 0x11 0 0 7 9 1)"
	pkt "$(common 1 0x30 0 0 7 9 1)"
	pkt "$(common 1 0x11 0x40 0 7 9 1)"
	pkt "$(common 1 0x11 0 16 7 9 1)"
	pkt "$(common 1 0x10 0 0 7 9 1)$(zeros 24)"
	pkt "$(common 1 0x01 0 0 7 9 1)$(data 1 1 1 0 0 0 8 1 0 0)$(zeros 16)"
	pkt "$(common 1 0x05 0 0 7 9 1)$(data 1 1 1 0 0 0 8 1 0 0)$(zeros 4)"
	pkt "$(common 1 0x03 0 0 7 9 1)$(data 1 1 1 0 0 0 8 0 0 0)"
	# 17 KEEPALIVE ACK_REQ path 3 with its ICRC (CRC32C of ports 50000, 4793 and the packet,
	#   flag 0x80 set; computed by a bitwise reference); 18 the same, its last CRC bit flipped.
	pkt "$(common 1 0x11 0x81 3 7 9 1)09089b06"
	pkt "$(common 1 0x11 0x81 3 7 9 1)09089b07"
	# 19 KEEPALIVE with a "token" tag; 20 CONNECT_REQ of mode token with its key;
	#   21 a sealed ("aead") SEND (AEAD and AEAD_IP): 4 bytes of ciphertext, then key id 3,
	#   sender, seq 77, GCM tag.
	pkt "$(common 1 0x11 0x41 0 7 9 1)0102030405060708"
	pkt "$(common 1 0x20 0 0 0 9 1)$(h64 42)$(h32 1000)$(h32 2000)$(h16 4096)04000001000000112233445566778899aabbccddeeff"
	pkt "$(common 1 0x03 0x30 0 7 9 1)$(data 1 1 1 0 0 0 4 0 0 0)deadbeef$(h32 3)$(h64 0x1122334455667788)$(h64 77)$(zeros 16)"
	# 22 CONNECT_REP with port addresses (ext flag 0x01): port 0 10.1.0.2, port 1 fd02::2;
	#   23 the same, its extension cut short (malformed).
	ext="$(h16 37)02""0004""0a010002$(zeros 12)""0106""fd02$(zeros 13)02"
	pkt "$(common 1 0x21 0 0 9 7 1)$(h64 42)$(h32 1000)$(h32 2000)$(h16 4096)040000000100$ext"
	pkt "$(common 1 0x21 0 0 9 7 1)$(h64 42)$(h32 1000)$(h32 2000)$(h16 4096)040000000100${ext:0:60}"
	# 24 KEEPALIVE with its number 5 (PROTOCOL 3.4a); 25 one with 4 of its 8 bytes (malformed).
	pkt "$(common 1 0x11 1 3 7 9 1)$(h64 5)"
	pkt "$(common 1 0x11 0 0 7 9 1)01020304"
} >"$TMP/hand.txt"
text2pcap -q -u 50000,4793 "$TMP/hand.txt" "$TMP/hand.pcap" >/dev/null 2>&1 || fail "text2pcap"

# field FRAME FIELD...: the values of the frame's fields, tab-separated
field() {
	local n=$1
	shift
	ts -r "$TMP/hand.pcap" -Y "frame.number == $n" -T fields -E occurrence=a -E aggregator=, \
		$(printf -- '-e %s ' "$@")
}
expect() { # FRAME "FIELDS" "VALUES"
	local got
	got=$(field "$1" $2 | tr '\t' ' ')
	[ "$got" = "$3" ] || fail "frame $1: $2 = \"$got\", expected \"$3\""
}
expect 1 "mroc.opcode mroc.path_id mroc.dst_qpn mroc.src_qpn" "0x10 2 7 9"
expect 1 "mroc.ack.cum_psn mroc.ack.cum_dsn mroc.ack.rate_hint" "100 50 25000"
expect 1 "mroc.ack.sack.range mroc.ack.sack.received mroc.ack.sack.missing" "101-102,104,116,356 5 252"
expect 1 "mroc.ack.nak_code mroc.ack.nak_dsn mroc.ack.nak_seq" "1 51 3"
expect 2 "mroc.flags.retx mroc.flags.ack_req mroc.data.psn mroc.data.psn_floor" "1 0 10 8"
expect 2 "mroc.data.dsn mroc.data.msn mroc.data.offset mroc.data.msg_len" "20 3 4096 8192"
expect 2 "mroc.data.rkey mroc.data.raddr mroc.data.payload_len" "0x00001234 65536 16"
expect 3 "mroc.cm.service_id mroc.cm.isn_dsn mroc.cm.isn_psn" "42 1000 2000"
expect 3 "mroc.cm.mtu mroc.cm.npaths mroc.cm.mode" "4096 4 0"
expect 4 "mroc.opcode mroc.cm.reason" "0x22 1"
expect 5 "mroc.opcode mroc.flags.ack_req mroc.path_id" "0x11 1 3"
expect 6 "mroc.data.read_msn mroc.data.payload_len" "5 4"
expect 7 "mroc.data.imm mroc.data.ssn" "0x0000beef 2"
expect 17 "mroc.opcode mroc.flags.icrc mroc.flags.ack_req mroc.path_id mroc.icrc mroc.icrc.status" \
	"0x11 1 1 3 0x09089b06 good"
expect 18 "mroc.icrc.status" "bad"
expect 19 "mroc.opcode mroc.flags.tag mroc.tag" "0x11 1 0102030405060708"
expect 20 "mroc.cm.sec mroc.cm.key" "1 00112233445566778899aabbccddeeff"
expect 21 "mroc.flags.aead mroc.flags.aead_ip mroc.aead.key_id mroc.aead.seq mroc.data.payload_len" \
	"1 1 3 77 4"
expect 22 "mroc.cm.ext_flags mroc.cm.ext_len mroc.cm.port_addrs mroc.cm.port" "0x01 37 2 0,1"
expect 22 "mroc.cm.port_ip mroc.cm.port_ip6" "10.1.0.2 fd02::2"
expect 24 "mroc.opcode mroc.path_id mroc.keepalive.seq" "0x11 3 5"
info=$(ts -r "$TMP/hand.pcap" -Y "frame.number == 1" -T fields -e _ws.col.Info)
grep -q "sack 101-102,104,116,356.*NAK RNR" <<<"$info" || fail "ACK's Info column: $info"
mal=$(ts -r "$TMP/hand.pcap" -Y 'mroc.malformed && _ws.expert.group == "Malformed"' -T fields \
	-e frame.number | tr '\n' ' ')
[ "$mal" = "8 9 10 11 12 13 14 15 16 18 23 25 " ] ||
	fail "malformed frames: $mal (expected 8..16, 18, 23, 25)"
[ "$(ts -r "$TMP/hand.pcap" -Y 'mroc && !mroc.malformed' | wc -l)" = 13 ] ||
	fail "frames 1..7, 17, 19..22, 24 not all well-formed"
grep -qi "lua" "$TMP/tshark.err" && fail "Lua errors: $(cat "$TMP/tshark.err")"
ts -r "$TMP/hand.pcap" -V >/dev/null || fail "tshark -V"
grep -qi "lua error" <(ts -r "$TMP/hand.pcap" -V) && fail "a Lua error in the detailed view"
ok "hand-made packets: every header and opcode decoded, SACK as ranges, malformed shown as malformed"

# ---- 2. a real transfer, captured on the fabric ----------------------------------------------
e2e_require
FABRIC=$E2E_TOP/scripts/fabric
PERF=$BUILD/mroc-perf
CLI=$BUILD/mroc-cli
for b in "$PERF" "$CLI" "$BUILD/bpf/impair.bpf.o"; do [ -e "$b" ] || skip "$b not built"; done
command -v dumpcap >/dev/null || skip "needs dumpcap (tshark's package)"
FNAME=w$((E2E_ID % 10000000))
E2E_DIR=$(mktemp -d /tmp/mroc-e2e.XXXXXX)
CAP=
cleanup() {
	[ -n "$CAP" ] && kill -INT "$CAP" 2>/dev/null
	e2e_cleanup
	BUILD=$BUILD "$FABRIC" down --name "$FNAME" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
BUILD=$BUILD "$FABRIC" up --name "$FNAME" --planes 1 >/dev/null || fail "fabric up"
eval "$(BUILD=$BUILD "$FABRIC" env --name "$FNAME" | tr ' ' '\n')"
NS_A=$FABRIC_NS_0 NS_B=$FABRIC_NS_1
e2e_config a af_xdp "$FABRIC_IF_0" "$FABRIC_IP_0" "$FABRIC_IP_1"
e2e_config b af_xdp "$FABRIC_IF_1" "$FABRIC_IP_1" "$FABRIC_IP_0"
sed -i 's/log_level = "debug"/log_level = "info"/; s/keepalive_ms = 100;/keepalive_ms = 100; paths = 4;/' \
	"$E2E_DIR/a.conf" "$E2E_DIR/b.conf"
# The capture must see the first CONNECT_REQ: start it before the daemons, on the plane's
# side towards A (it carries both directions); a dry run gives the command to check it.
PLANE=mrocf-$FNAME-p1
e2e_start a "$NS_A"
e2e_wait_ready a
cmd=$(ip netns exec "$PLANE" "$CLI" -S "$E2E_DIR/a.admin" capture dev pa write "$E2E_DIR/cap.pcapng" snaplen 160 dry) ||
	fail "mroc-cli capture dry"
[ "$cmd" = "dumpcap -i pa -f 'udp dst port 4793' -w $E2E_DIR/cap.pcapng -s 160" ] ||
	fail "mroc-cli capture would run: $cmd"
ip netns exec "$PLANE" "$CLI" -S "$E2E_DIR/a.admin" capture dev pa write "$E2E_DIR/cap.pcapng" \
	snaplen 160 >"$E2E_DIR/dumpcap.log" 2>&1 &
CAP=$!
for _ in $(seq 100); do grep -q "^Capturing on" "$E2E_DIR/dumpcap.log" && break; sleep 0.1; done
grep -q "^Capturing on" "$E2E_DIR/dumpcap.log" || fail "dumpcap did not start: $(cat "$E2E_DIR/dumpcap.log")"
BUILD=$BUILD "$FABRIC" set 1 --name "$FNAME" loss 2 >/dev/null
e2e_start b "$NS_B"
e2e_wait_ready b
e2e_wait a links '[.links[] | select(.state == "up")] | length >= 1' 10 ||
	fail "a: control link never came up"
ip netns exec "$NS_B" timeout 60 "$PERF" write_bw --mrocd-socket "$E2E_DIR/b.ctl" --verify -s 65536 \
	--mroc-addr "$FABRIC_IP_1" -n 150 >"$E2E_DIR/srv.txt" 2>&1 &
SERVER=$!
sleep 0.3
ip netns exec "$NS_A" timeout 60 "$PERF" write_bw --mrocd-socket "$E2E_DIR/a.ctl" --verify -s 65536 -n 150 \
	"$FABRIC_MGMT_1" >"$E2E_DIR/cli.txt" 2>&1 || { cat "$E2E_DIR/cli.txt"; fail "mroc-perf client"; }
wait "$SERVER" || { cat "$E2E_DIR/srv.txt"; fail "mroc-perf server"; }
sleep 0.3
kill -INT "$CAP"
wait "$CAP"
CAP=
[ -s "$E2E_DIR/cap.pcapng" ] || fail "no capture file"

# One pass of tshark; the checks read its table (one line per packet).
ts -r "$E2E_DIR/cap.pcapng" -T fields -E occurrence=f -e mroc -e mroc.malformed -e mroc.opcode \
	-e mroc.path_id -e mroc.flags.retx -e mroc.data.payload_len -e mroc.data.rkey \
	-e mroc.ack.cum_dsn -e mroc.ack.sack.range -e mroc.cm.npaths -e mroc.cm.mtu \
	-e mroc.icrc.status >"$TMP/real.tsv" || fail "tshark on the capture"
# count AWK_CONDITION: lines where it holds ($1 mroc $2 malformed $3 opcode $4 path $5 retx
# $6 payload_len $7 rkey $8 cum_dsn $9 sack ranges $10 npaths $11 mtu $12 ICRC status)
count() { awk -F'\t' "$1 { n++ } END { print n + 0 }" "$TMP/real.tsv"; }
all=$(count 1)
n_mroc=$(count '$1 != ""')
echo "captured $all packets: $n_mroc MetaRoCE; by opcode:"
cut -f3 "$TMP/real.tsv" | sort | uniq -c
[ "$all" -gt 100 ] && [ "$n_mroc" = "$all" ] || fail "$n_mroc of $all packets decoded as MetaRoCE"
[ "$(count '$2 != ""')" = 0 ] || fail "malformed packets in a real transfer: $(grep -m3 . "$TMP/real.tsv")"
grep -qi "lua" "$TMP/tshark.err" && fail "Lua errors: $(head "$TMP/tshark.err")"
[ "$(count '$3 == "0x01" && $6 > 0 && $7 != "0x00000000"')" -gt 50 ] ||
	fail "too few WRITE segments with a payload and an rkey"
[ "$(count '$3 == "0x10" && $8 > 0')" -gt 20 ] || fail "too few ACKs"
# Every packet carries an ICRC; those shorter than the snaplen (ACKs, CM) are checked good.
[ "$(count '$12 == ""')" = 0 ] || fail "packets without an ICRC"
[ "$(count '$3 == "0x10" && $12 == "good"')" = "$(count '$3 == "0x10"')" ] || fail "ACKs whose ICRC is not good"
[ "$(count '$3 == "0x20" && $10 == 4 && $11 >= 64')" -ge 2 ] ||
	fail "no CONNECT_REQ announcing 4 paths (the control link's and mroc-perf's)"
[ "$(count '$3 == "0x21" && $10 == 4')" -ge 2 ] || fail "no CONNECT_REP"
[ "$(count '$3 == "0x11"')" -ge 1 ] || fail "no KEEPALIVE"
paths=$(awk -F'\t' '$3 == "0x01" { print $4 }' "$TMP/real.tsv" | sort -u | tr '\n' ' ')
[ "$paths" = "0 1 2 3 " ] || fail "WRITE segments on paths \"$paths\", expected 0 1 2 3"
# 2% loss on the plane (behind this capture point for data): the receiver's ACKs report holes
# as SACK ranges and the sender resends with the RETX flag.
[ "$(count '$9 != ""')" -ge 1 ] || fail "no ACK with SACK ranges under 2% loss"
[ "$(count '$5 == 1')" -ge 1 ] || fail "no retransmission flagged RETX under 2% loss"
ok "a real AF_XDP transfer captured on the fabric decodes: WRITE, ACK (SACK ranges), CM, KEEPALIVE, RETX, ICRC"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
