#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The C example in README.md compiles against libmroc's header and links
# against the built library, and runs (it must fail cleanly without a daemon).
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
[ -f "$BUILD/libmroc.a" ] || { echo "SKIP: $BUILD/libmroc.a not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '/^```c$/ { on = 1; next } /^```$/ { on = 0 } on' "$TOP/README.md" >"$tmp/example.c"
[ -s "$tmp/example.c" ] || { echo "FAIL: no C example in README.md"; exit 1; }
# A sanitizer build's library needs the sanitizers' runtime at link time.
san=
nm "$BUILD/libmroc.a" 2>/dev/null | grep -q __asan_ && san="$san -fsanitize=address"
nm "$BUILD/libmroc.a" 2>/dev/null | grep -q __ubsan_ && san="$san -fsanitize=undefined"
nm "$BUILD/libmroc.a" 2>/dev/null | grep -q __tsan_ && san="$san -fsanitize=thread"
# shellcheck disable=SC2086
${CC:-cc} -std=gnu11 -Wall -Wextra -Werror $san -I"$TOP/libclient/include" -o "$tmp/example" \
	"$tmp/example.c" "$BUILD/libmroc.a" || { echo "FAIL: the README example does not compile"; exit 1; }
MROC_SOCKET=$tmp/no-such.sock "$tmp/example" 10.0.0.1 0x1 >"$tmp/out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "mrocd running" "$tmp/out" || { echo "FAIL: rc $rc: $(cat "$tmp/out")"; exit 1; }
echo "ok: the README example compiles, links and fails cleanly without mrocd"
echo "1 passed, 0 failed"
