#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/ run between two mrocd (UDP backend over veth): write_server prints
# its rkey, write_client (README.md's example, byte for byte) writes into its
# region and the server prints the text it found there; recv prints what send
# sent; counter add's ten FETCH_ADDs find 0..9 and counter serve ends at 10.  Also: write_client's code is README.md's C block.
set -u
. "$(dirname "$0")/lib.sh"

EX=$BUILD/examples
e2e_require
for p in write_server write_client recv send counter; do
	[ -x "$EX/$p" ] || skip "$EX/$p not built"
done

readme=$(awk '/^```c$/ { on = 1; next } /^```$/ { on = 0 } on' "$E2E_TOP/README.md")
# The example file without its opening comment.
example=$(awk 'body { print } /^ \*\/$/ { body = 1 }' "$E2E_TOP/examples/write_client.c")
[ -n "$readme" ] && [ "$readme" = "$example" ] ||
	fail "examples/write_client.c is not README.md's example: $(diff <(echo "$readme") <(echo "$example"))"
ok "examples/write_client.c is README.md's C example"

e2e_setup_pair
e2e_config a udp "$IF_A" "$IP_A" "$IP_B"
e2e_config b udp "$IF_B" "$IP_B" "$IP_A"
e2e_start a "$NS_A"
e2e_start b "$NS_B"
e2e_wait_ready a
e2e_wait_ready b

MROC_SOCKET=$E2E_DIR/b.ctl ip netns exec "$NS_B" timeout 30 "$EX/write_server" 20 >"$E2E_DIR/ws.out" 2>&1 &
srv=$!
for _ in $(seq 100); do grep -q "^rkey 0x" "$E2E_DIR/ws.out" && break; sleep 0.1; done
rkey=$(awk '/^rkey/ { print $2 }' "$E2E_DIR/ws.out")
[ -n "$rkey" ] || fail "write_server printed no rkey: $(cat "$E2E_DIR/ws.out")"
out=$(MROC_SOCKET=$E2E_DIR/a.ctl ip netns exec "$NS_A" timeout 30 "$EX/write_client" "$IP_B" "$rkey" 2>&1) ||
	fail "write_client: $out"
[ "$out" = "write: success" ] || fail "write_client: $out"
wait $srv || fail "write_server: $(cat "$E2E_DIR/ws.out")"
grep -qx "received: hello over MetaRoCE" "$E2E_DIR/ws.out" || fail "write_server: $(cat "$E2E_DIR/ws.out")"
ok "write_server (rkey $rkey) received write_client's text"

MROC_SOCKET=$E2E_DIR/b.ctl ip netns exec "$NS_B" timeout 30 "$EX/recv" 43 >"$E2E_DIR/recv.out" 2>&1 &
srv=$!
for _ in $(seq 100); do grep -q "^listening" "$E2E_DIR/recv.out" && break; sleep 0.1; done
grep -q "^listening" "$E2E_DIR/recv.out" || fail "recv did not listen within 10 s: $(cat "$E2E_DIR/recv.out")"
out=$(MROC_SOCKET=$E2E_DIR/a.ctl ip netns exec "$NS_A" timeout 30 "$EX/send" "$IP_B" 43 "ping over SEND" 2>&1) ||
	fail "send: $out"
wait $srv || fail "recv: $(cat "$E2E_DIR/recv.out")"
grep -qx "received 14 bytes: ping over SEND" "$E2E_DIR/recv.out" || fail "recv: $(cat "$E2E_DIR/recv.out")"
ok "recv received send's 14 bytes"

MROC_SOCKET=$E2E_DIR/b.ctl ip netns exec "$NS_B" timeout 30 "$EX/counter" serve 20 >"$E2E_DIR/cs.out" 2>&1 &
srv=$!
for _ in $(seq 100); do grep -q "^rkey 0x" "$E2E_DIR/cs.out" && break; sleep 0.1; done
rkey=$(awk '/^rkey/ { print $2 }' "$E2E_DIR/cs.out")
[ -n "$rkey" ] || fail "counter serve printed no rkey: $(cat "$E2E_DIR/cs.out")"
out=$(MROC_SOCKET=$E2E_DIR/a.ctl ip netns exec "$NS_A" timeout 30 "$EX/counter" add "$IP_B" "$rkey" 10 2>&1) ||
	fail "counter add: $out"
[ "$(grep -c "^add [0-9]*: counter was" <<<"$out")" = 10 ] && grep -qx "add 10: counter was 9" <<<"$out" &&
	[ "$(awk '{ print $5 }' <<<"$out" | sort -n | uniq | wc -l)" = 10 ] || fail "counter add: $out"
wait $srv || fail "counter serve: $(cat "$E2E_DIR/cs.out")"
grep -qx "counter = 10" "$E2E_DIR/cs.out" || fail "counter serve: $(cat "$E2E_DIR/cs.out")"
ok "counter: ten FETCH_ADDs found 0..9, the counter ends at 10"

for n in a b; do
	e2e_stop $n
	[ "$E2E_RC" = 0 ] || fail "mrocd $n exited with $E2E_RC"
done
echo "1 passed, 0 failed"
