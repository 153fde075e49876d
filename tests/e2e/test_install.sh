#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make install into temporary DESTDIRs (never the real system; root not needed):
# every file where it belongs with its mode, the library's soname and symlinks
# and exports, the unit's paths filled in, the man pages without groff warnings
# and mrocd.conf(5) naming every key with its default; then a small program
# built against the installed header and pkg-config file, linked with the shared
# and with the static library, runs; make uninstall leaves no file behind and
# keeps a changed configuration; PREFIX=/usr/local puts everything under it.
set -u
. "$(dirname "$0")/lib.sh"

for t in make cc pkg-config readelf cmp; do
	command -v "$t" >/dev/null || skip "needs $t (scripts/deps.sh installs it)"
done

WORK=$(mktemp -d /tmp/mroc-install.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

# The outer make's jobserver is not ours; its variables (SANITIZE, CFLAGS, ...)
# stay in the environment, so the same build folder is used unchanged.
mk() {
	env -u MAKEFLAGS -u MFLAGS make -C "$E2E_TOP" --no-print-directory -s BUILD="$BUILD" "$@"
}

# mode PATH: octal permissions.
mode() { stat -c %a "$1"; }

# A file (not a symlink) with the given mode.
expect_file() {
	local f=$DEST$1
	[ -f "$f" ] && [ ! -L "$f" ] || fail "missing: $1"
	[ "$(mode "$f")" = "$2" ] || fail "$1: mode $(mode "$f"), expected $2"
}

# ---- install with PREFIX=/usr --------------------------------------------------------

DEST=$WORK/usr-root
mkdir "$DEST"
mk install DESTDIR="$DEST" PREFIX=/usr >"$WORK/install.log" 2>&1 ||
	fail "make install failed: $(cat "$WORK/install.log")"
[ -f "$BUILD/libmroc.so.0.1.0" ] || skip "libmroc not built (no libclient/*.c yet)"

# Where Wireshark looks for Lua plugins (the dissector goes there whatever the prefix).
WS_LUADIR=$(tshark -G folders 2>/dev/null | sed -n 's/^Global Lua Plugins:[[:space:]]*//p')
WS_LUADIR=${WS_LUADIR:-/usr/lib/$(cc -print-multiarch)/wireshark/plugins}

# What must be there: programs that this tree builds, then the rest.
expected=(/usr/sbin/mrocd)
for p in mroc-cli mroc-perf; do
	[ -x "$BUILD/$p" ] && expected+=("/usr/bin/$p")
done
expected+=(
	/usr/lib/libmroc.so.0.1.0 /usr/lib/libmroc.so.0 /usr/lib/libmroc.so /usr/lib/libmroc.a
	/usr/include/mroc/mroc.h /usr/lib/pkgconfig/libmroc.pc /etc/mroc/mrocd.conf
	/lib/systemd/system/mrocd.service /usr/lib/sysusers.d/mroc.conf
	/usr/share/man/man1/mroc-perf.1 /usr/share/man/man3/libmroc.3
	/usr/share/man/man5/mrocd.conf.5 /usr/share/man/man8/mrocd.8
	/usr/share/man/man8/mroc-cli.8 "$WS_LUADIR/mroc.lua"
	/usr/share/bash-completion/completions/mroc-cli
	/usr/share/doc/mroc/examples/Makefile /usr/share/doc/mroc/examples/README.md
)
for f in "$E2E_TOP"/examples/*.c; do
	expected+=("/usr/share/doc/mroc/examples/${f##*/}")
done
expected+=(/usr/share/doc/mroc/examples/allreduce.py)
# The NCCL net plugin (NCCL_NET_PLUGIN=mroc finds it on the library path).
[ -f "$BUILD/libnccl-net-mroc.so" ] && expected+=(/usr/lib/libnccl-net-mroc.so)
# The libfabric provider, where libfabric-dev let it be built.
[ -f "$BUILD/libmroc-fi.so" ] && expected+=(/usr/lib/libfabric/libmroc-fi.so)
diff <(printf '%s\n' "${expected[@]}" | sort) \
     <(cd "$DEST" && find . \( -type f -o -type l \) | sed 's|^\.||' | sort) >"$WORK/diff" ||
	fail "installed tree differs from the expected one (< expected, > installed):
$(cat "$WORK/diff")"
ok "every file installed, nothing else (${#expected[@]} files)"

for f in "${expected[@]}"; do
	case $f in
	*/bin/*|*/sbin/*|*.so.0.1.0|*-fi.so|*/libnccl-net-mroc.so) expect_file "$f" 755 ;;
	*.so|*.so.0) ;;
	*) expect_file "$f" 644 ;;
	esac
done
for p in "${expected[@]}"; do
	case $p in */bin/*|*/sbin/*) cmp -s "$DEST$p" "$BUILD/${p##*/}" || fail "$p is not $BUILD/${p##*/}" ;; esac
done
cmp -s "$DEST/etc/mroc/mrocd.conf" "$E2E_TOP/conf/mrocd.conf" || fail "mrocd.conf is not conf/mrocd.conf"
cmp -s "$DEST/usr/include/mroc/mroc.h" "$E2E_TOP/libclient/include/mroc/mroc.h" ||
	fail "mroc.h is not libclient/include/mroc/mroc.h"
ok "modes 0755 for programs and the library, 0644 for the rest; contents are the built ones"

lib=$DEST/usr/lib
[ "$(readlink "$lib/libmroc.so.0")" = libmroc.so.0.1.0 ] || fail "libmroc.so.0 -> $(readlink "$lib/libmroc.so.0")"
[ "$(readlink "$lib/libmroc.so")" = libmroc.so.0 ] || fail "libmroc.so -> $(readlink "$lib/libmroc.so")"
soname=$(readelf -d "$lib/libmroc.so.0.1.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libmroc.so.0 ] || fail "soname is '$soname', expected libmroc.so.0"
# Exported functions: mroc_* only, each with the version node of libmroc.map.
readelf --dyn-syms -W "$lib/libmroc.so.0.1.0" |
	awk '$5 == "GLOBAL" && $7 != "UND" && $7 != "ABS" && $8 != "" { print $8 }' >"$WORK/exports"
[ -s "$WORK/exports" ] || fail "the library exports nothing"
bad=$(grep -v '^mroc_[a-z0-9_]*@@MROC_' "$WORK/exports" || true)
[ -z "$bad" ] || fail "exports outside mroc_*@@MROC_*: $bad"
ok "libmroc.so -> libmroc.so.0 -> libmroc.so.0.1.0, soname libmroc.so.0, $(wc -l <"$WORK/exports") versioned mroc_* exports"

# The NCCL net plugin exports its five tables and nothing else.
if [ -f "$lib/libnccl-net-mroc.so" ]; then
	got=$(readelf --dyn-syms -W "$lib/libnccl-net-mroc.so" |
		awk '$5 == "GLOBAL" && $7 != "UND" && $8 != "" { print $8 }' | sort | tr '\n' ' ')
	[ "$got" = "ncclNetPlugin_v10 ncclNetPlugin_v11 ncclNetPlugin_v12 ncclNetPlugin_v8 ncclNetPlugin_v9 " ] ||
		fail "libnccl-net-mroc.so exports: $got"
	readelf -d "$lib/libnccl-net-mroc.so" | grep -q 'NEEDED.*libmroc' &&
		fail "libnccl-net-mroc.so needs a shared libmroc (it links libmroc in)"
	ok "libnccl-net-mroc.so exports ncclNetPlugin_v8 .. _v12 only, libmroc linked in"
fi

unit=$DEST/lib/systemd/system/mrocd.service
grep -q '@[A-Z]*@' "$unit" && fail "placeholders left in the unit: $(grep '@[A-Z]*@' "$unit")"
grep -qx 'ExecStart=/usr/sbin/mrocd -c /etc/mroc/mrocd.conf' "$unit" ||
	fail "unexpected ExecStart: $(grep ExecStart= "$unit")"
grep -qx 'g mroc -' "$DEST/usr/lib/sysusers.d/mroc.conf" || fail "sysusers.d/mroc.conf does not create group mroc"
ok "unit: ExecStart=/usr/sbin/mrocd -c /etc/mroc/mrocd.conf; sysusers.d creates group mroc"
# The unit's comments name files that exist (issue 15: it named systemd/mroc-sysusers.conf).
for f in $(grep -o 'systemd/[A-Za-z0-9_.-]*' "$E2E_TOP/systemd/mrocd.service" | sort -u); do
	[ -e "$E2E_TOP/$f" ] || fail "mrocd.service names $f, which does not exist"
done
v=$("$DEST/usr/sbin/mrocd" --version) || fail "mrocd --version: exit $?"
[[ $v =~ ^mrocd\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "mrocd --version: $v"
ok "the unit's comments name existing files; $v"

# ---- man pages -------------------------------------------------------------------------

if command -v groff >/dev/null; then
	for m in "$DEST"/usr/share/man/man*/*; do
		w=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
		[ -z "$w" ] || fail "groff warnings in ${m#"$DEST"}: $w"
	done
	ok "man pages format without groff warnings"
	# mrocd.conf(5) lists every key the daemon knows, each as 'key = default;', and no other.
	: >"$WORK/empty.conf"
	"$BUILD/mrocd" --dump-config -c "$WORK/empty.conf" | sed -n 's/^\t\([a-z_]* = .*;\)$/\1/p' |
		sort >"$WORK/keys.daemon"
	[ "$(wc -l <"$WORK/keys.daemon")" -gt 40 ] || fail "mrocd --dump-config printed too few keys"
	groff -man -Tascii -P-cbou "$DEST/usr/share/man/man5/mrocd.conf.5" 2>/dev/null |
		sed -n 's/^ \{7\}\([a-z_]* = .*;\)$/\1/p' | sort >"$WORK/keys.man"
	diff "$WORK/keys.daemon" "$WORK/keys.man" >"$WORK/diff" ||
		fail "mrocd.conf(5) and mrocd --dump-config disagree (< daemon, > man page):
$(cat "$WORK/diff")"
	ok "mrocd.conf(5) documents all $(wc -l <"$WORK/keys.man") keys with the daemon's defaults"
	# Each program's page names every long option of its --help (and mroc-cli's objects).
	for p in sbin/mrocd:man8/mrocd.8 bin/mroc-perf:man1/mroc-perf.1 bin/mroc-cli:man8/mroc-cli.8; do
		prog=$DEST/usr/${p%%:*} page=$DEST/usr/share/man/${p#*:}
		[ -x "$prog" ] || continue
		"$prog" --help >"$WORK/help.txt" 2>&1
		groff -man -Tascii -P-cbou "$page" 2>/dev/null >"$WORK/page.txt"
		words=$(grep -o -- '--[a-z][a-z-]*' "$WORK/help.txt" | sort -u)
		words+=" $(sed -n 's/.*OBJECT := { \(.*\) }.*/\1/p' "$WORK/help.txt" | tr -d '|')"
		n=0
		for w in $words; do
			grep -q -- "$w" "$WORK/page.txt" || fail "${page##*/} does not mention $w of ${prog##*/} --help"
			n=$((n + 1))
		done
		[ "$n" -gt 1 ] || fail "${prog##*/} --help gave no options: $(cat "$WORK/help.txt")"
		echo "ok: ${page##*/}: all $n options/objects of ${prog##*/} --help"
	done
else
	echo "note: groff not installed, man pages not checked (scripts/deps.sh installs groff-base)"
fi

# ---- a program built against the installed header and pkg-config file -------------------

cat >"$WORK/hello.c" <<'EOF'
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <mroc/mroc.h>

int main(int argc, char **argv)
{
	struct mroc_ctx_opts opts = { .sz = sizeof(opts), .socket_path = argv[1] };
	struct mroc_ctx *ctx;
	const char *s = mroc_strerror(-ENOENT);

	if (argc != 2 || !s || !*s)
		return 2;
	ctx = mroc_open(&opts);
	if (ctx) {
		mroc_close(ctx);
		return 3;
	}
	if (errno != ENOENT && errno != ECONNREFUSED) {
		fprintf(stderr, "mroc_open: errno %d (%s)\n", errno, strerror(errno));
		return 4;
	}
	printf("libmroc %d.%d: %s: %s\n", MROC_VERSION_MAJOR, MROC_VERSION_MINOR, argv[1],
	       mroc_strerror(-errno));
	return 0;
}
EOF
# A sanitizer build's library needs the same -fsanitize in its users.
san=${SANITIZE:+-fsanitize=$SANITIZE}
# The sysroot is prepended to -I and -L; the system-directory filter would drop them.
export PKG_CONFIG_SYSROOT_DIR=$DEST PKG_CONFIG_LIBDIR=$DEST/usr/lib/pkgconfig PKG_CONFIG_PATH=
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
[ "$(pkg-config --modversion libmroc)" = 0.1.0 ] || fail "pkg-config --modversion: $(pkg-config --modversion libmroc 2>&1)"
cflags=$(pkg-config --cflags libmroc) && libs=$(pkg-config --libs libmroc) &&
	slibs=$(pkg-config --static --libs libmroc) || fail "pkg-config libmroc failed"
[ "$(echo $cflags)" = "-I$DEST/usr/include" ] || fail "pkg-config --cflags: '$cflags'"
cc $san -Wall -Werror $cflags -o "$WORK/hello-shared" "$WORK/hello.c" $libs 2>"$WORK/cc.log" ||
	fail "building against the shared library: $(cat "$WORK/cc.log")"
# shellcheck disable=SC2086 # word splitting of the flags is meant
cc $san -Wall -Werror $cflags -o "$WORK/hello-static" "$WORK/hello.c" -Wl,-Bstatic $slibs -Wl,-Bdynamic \
	2>"$WORK/cc.log" || fail "building against the static library: $(cat "$WORK/cc.log")"
readelf -d "$WORK/hello-shared" | grep -q 'NEEDED.*\[libmroc.so.0\]' || fail "hello-shared does not need libmroc.so.0"
readelf -d "$WORK/hello-static" | grep -q 'libmroc' && fail "hello-static still needs a shared libmroc"
out=$(LD_LIBRARY_PATH=$lib "$WORK/hello-shared" "$WORK/no-such.sock" 2>&1) || fail "hello-shared: $out"
LD_LIBRARY_PATH=$lib ldd "$WORK/hello-shared" | grep -q "libmroc.so.0 => $lib/libmroc.so.0 " ||
	fail "hello-shared did not load the installed library: $(LD_LIBRARY_PATH=$lib ldd "$WORK/hello-shared")"
out2=$("$WORK/hello-static" "$WORK/no-such.sock" 2>&1) || fail "hello-static: $out2"
ok "built with pkg-config against the installed files, shared and static; both say: $out"

# The installed examples build where they are, with their own Makefile and pkg-config.
cp -r "$DEST/usr/share/doc/mroc/examples" "$WORK/examples"
make -s -C "$WORK/examples" CFLAGS="-O2 -Wall -Wextra -Werror $san" >"$WORK/ex.log" 2>&1 ||
	fail "the installed examples do not build: $(cat "$WORK/ex.log")"
for f in "$E2E_TOP"/examples/*.c; do
	b=${f##*/}; b=${b%.c}
	[ -x "$WORK/examples/$b" ] || fail "examples: $b not built by the installed Makefile"
done
ok "the installed examples build with their Makefile against the installed libmroc"

# libmroc(3): its example compiles and links as shown, its synopsis names every export.
awk '/^\.\\" The program between/ { f = 1; next } f && /^\.EX/ { g = 1; next } g && /^\.EE/ { exit } g' \
	"$DEST/usr/share/man/man3/libmroc.3" | sed -e 's/\\-/-/g' -e 's/\\e/\\/g' >"$WORK/example.c"
grep -q 'int main' "$WORK/example.c" || fail "no example program found in libmroc.3"
cc $san -Wall -Wextra -Werror $cflags -o "$WORK/example" "$WORK/example.c" $libs 2>"$WORK/cc.log" ||
	fail "the example of libmroc(3) does not build: $(cat "$WORK/cc.log")"
if command -v groff >/dev/null; then
	groff -man -Tascii -P-cbou "$DEST/usr/share/man/man3/libmroc.3" 2>/dev/null >"$WORK/libmroc.txt"
	for f in $(sed 's/@.*//' "$WORK/exports"); do
		grep -q "[ *]$f(" "$WORK/libmroc.txt" || fail "libmroc(3) does not show $f()"
	done
	ok "libmroc(3): the example builds, the synopsis shows all $(wc -l <"$WORK/exports") exported functions"
else
	ok "libmroc(3): the example builds"
fi
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR PKG_CONFIG_PATH

# ---- uninstall ----------------------------------------------------------------------------

mk uninstall DESTDIR="$DEST" PREFIX=/usr >"$WORK/uninstall.log" 2>&1 || fail "make uninstall: $(cat "$WORK/uninstall.log")"
left=$(cd "$DEST" && find . \( -type f -o -type l \))
[ -z "$left" ] || fail "make uninstall left files behind: $left"
[ -e "$DEST/etc/mroc" ] && fail "make uninstall left /etc/mroc"
[ -e "$DEST/usr/include/mroc" ] && fail "make uninstall left /usr/include/mroc"
ok "make uninstall removed every file, /etc/mroc and /usr/include/mroc"

# A changed configuration survives a second install and the uninstall.
mk install DESTDIR="$DEST" PREFIX=/usr >"$WORK/install.log" 2>&1 || fail "make install (again): $(cat "$WORK/install.log")"
echo "# changed by the administrator" >>"$DEST/etc/mroc/mrocd.conf"
cp "$DEST/etc/mroc/mrocd.conf" "$WORK/changed.conf"
mk install DESTDIR="$DEST" PREFIX=/usr >"$WORK/install.log" 2>&1 || fail "make install (over): $(cat "$WORK/install.log")"
cmp -s "$DEST/etc/mroc/mrocd.conf" "$WORK/changed.conf" || fail "make install overwrote a changed mrocd.conf"
mk uninstall DESTDIR="$DEST" PREFIX=/usr >"$WORK/uninstall.log" 2>&1 || fail "make uninstall: $(cat "$WORK/uninstall.log")"
left=$(cd "$DEST" && find . \( -type f -o -type l \))
[ "$left" = ./etc/mroc/mrocd.conf ] || fail "after uninstall, expected only the changed mrocd.conf, found: $left"
grep -q "KEEP.*mrocd.conf" "$WORK/uninstall.log" || fail "uninstall did not say it kept mrocd.conf"
ok "a changed mrocd.conf is neither overwritten by install nor removed by uninstall"

# ---- PREFIX=/usr/local (the default) --------------------------------------------------

DEST=$WORK/local-root
mkdir "$DEST"
mk install DESTDIR="$DEST" >"$WORK/install.log" 2>&1 || fail "make install (default prefix): $(cat "$WORK/install.log")"
for f in /usr/local/sbin/mrocd /usr/local/lib/libmroc.so.0.1.0 /usr/local/include/mroc/mroc.h \
	 /usr/local/lib/pkgconfig/libmroc.pc /usr/local/lib/systemd/system/mrocd.service \
	 /usr/local/lib/sysusers.d/mroc.conf /usr/local/share/man/man8/mrocd.8 /etc/mroc/mrocd.conf \
	 "$WS_LUADIR/mroc.lua" /usr/local/share/bash-completion/completions/mroc-cli; do
	[ -e "$DEST$f" ] || fail "PREFIX=/usr/local: missing $f"
done
grep -qx 'ExecStart=/usr/local/sbin/mrocd -c /etc/mroc/mrocd.conf' "$DEST/usr/local/lib/systemd/system/mrocd.service" ||
	fail "PREFIX=/usr/local: $(grep ExecStart= "$DEST/usr/local/lib/systemd/system/mrocd.service")"
grep -qx 'libdir=/usr/local/lib' "$DEST/usr/local/lib/pkgconfig/libmroc.pc" || fail "PREFIX=/usr/local: libmroc.pc libdir"
mk uninstall DESTDIR="$DEST" >"$WORK/uninstall.log" 2>&1 || fail "make uninstall (default prefix)"
left=$(cd "$DEST" && find . \( -type f -o -type l \))
[ -z "$left" ] || fail "make uninstall (default prefix) left: $left"
ok "PREFIX=/usr/local: everything under it (config in /etc, dissector in Wireshark's folder), uninstall removes it all"
