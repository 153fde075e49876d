#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An IPv4 peer running an older provider (the HELLO of 24 bytes, before MFI_HELLO_ADDR6)
# and this one interoperate: fi_pingpong msg and rdm, data checked, each way (the older
# provider as server, then as client).  OLD_BUILD names the older build folder (one with
# libmroc-fi.so, e.g. a main checkout's build/); skipped without it.
set -u
. "$(dirname "$0")/../tests/e2e/lib.sh"
. "$(dirname "$0")/../tests/e2e/fi_lib.sh"

PROV=$BUILD/libmroc-fi.so
e2e_require
e2e_require_unsanitized fi_pingpong
command -v fi_pingpong >/dev/null || skip "needs fi_pingpong (libfabric-bin)"
[ -f "$PROV" ] || skip "$PROV not built"
[ -n "${OLD_BUILD:-}" ] && [ -f "$OLD_BUILD/libmroc-fi.so" ] ||
	skip "OLD_BUILD (a build folder with an older libmroc-fi.so) not given"

e2e_setup_pair
e2e_pair_up

# fipp NS NAME IP PROVIDER_DIR ARGS...
fipp() {
	local ns=$1 name=$2 ip=$3 dir=$4
	shift 4
	ip netns exec "$ns" env FI_PROVIDER_PATH="$dir" MROC_SOCKET="$E2E_DIR/$name.ctl" \
		FI_MROC_ADDR="$ip" timeout 120 fi_pingpong -p mroc "$@"
}

# pingpong PORT SERVER_DIR CLIENT_DIR ARGS...: server in B, client in A (fi_lib.sh's pp_pair).
srv_b() { fipp "$NS_B" b "$IP_B" "$PP_SDIR" "$@"; }
cli_a() { fipp "$NS_A" a "$IP_A" "$PP_CDIR" "$@"; }
pingpong() {
	local port=$1
	PP_SDIR=$2 PP_CDIR=$3
	shift 3
	pp_pair "$port" "$NS_B" srv_b cli_a "$IP_B" "$@"
}

port=47640
for e in msg rdm; do
	pingpong $((port++)) "$OLD_BUILD" "$BUILD" -e $e -I 10 -c || fail "older server, -e $e"
	ok "fi_pingpong -e $e: the older provider serves, this one connects"
	pingpong $((port++)) "$BUILD" "$OLD_BUILD" -e $e -I 10 -c || fail "older client, -e $e"
	ok "fi_pingpong -e $e: this provider serves, the older one connects"
done
echo "1 passed, 0 failed"
