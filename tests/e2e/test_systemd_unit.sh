#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed mrocd.service (make install into a temporary DESTDIR, PREFIX=/usr)
# passes "systemd-analyze verify" with no message about it: its directives parse,
# ExecStart and ExecReload are executables, the Documentation= man pages are
# found among the installed ones.  systemd-analyze runs offline, without systemd
# as PID 1 and without root.  The unit keeps what issue 5 asks of it, and
# "systemd-analyze security" rates its exposure 2.1 or better (3.0 as root with CAP_SYS_ADMIN).
set -u
. "$(dirname "$0")/lib.sh"

for t in make systemd-analyze; do
	command -v "$t" >/dev/null || skip "needs $t (scripts/deps.sh installs it)"
done

WORK=$(mktemp -d /tmp/mroc-unit.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM
DEST=$WORK/root

env -u MAKEFLAGS -u MFLAGS make -C "$E2E_TOP" --no-print-directory -s BUILD="$BUILD" \
	install DESTDIR="$DEST" PREFIX=/usr >"$WORK/install.log" 2>&1 ||
	fail "make install failed: $(cat "$WORK/install.log")"
installed=$DEST/lib/systemd/system/mrocd.service
[ -f "$installed" ] || fail "make install put no $installed"

# The unit as installed, but ExecStart on the binary installed in DESTDIR (verify
# checks that it is executable); nothing else changes.
unit=$WORK/mrocd.service
sed -e "s|^ExecStart=/usr/sbin/mrocd |ExecStart=$DEST/usr/sbin/mrocd |" \
    -e "s|^ExecReload=/usr/bin/mroc-cli |ExecReload=$DEST/usr/bin/mroc-cli |" "$installed" >"$unit"
grep -q "^ExecStart=$DEST/usr/sbin/mrocd -c /etc/mroc/mrocd.conf\$" "$unit" ||
	fail "unexpected ExecStart in the installed unit: $(grep ExecStart= "$installed")"

# Documentation=man:... is looked up with man(1): in the installed pages only.
man_check=--man=yes
if ! command -v man >/dev/null; then
	man_check=--man=no
	echo "note: no man(1) here, Documentation= not checked"
fi
MANPATH=$DEST/usr/share/man SYSTEMD_LOG_COLOR=0 \
	systemd-analyze verify --recursive-errors=no "$man_check" "$unit" >"$WORK/verify.log" 2>&1
rc=$?
# Messages about other units of this machine are not ours; any about ours fail.
grep -v -e '^$' "$WORK/verify.log" | grep -e 'mrocd' >"$WORK/ours.log"
if [ "$rc" != 0 ] || [ -s "$WORK/ours.log" ]; then
	fail "systemd-analyze verify (exit $rc):
$(cat "$WORK/verify.log")"
fi
if [ -s "$WORK/verify.log" ]; then
	echo "note: systemd-analyze verify said, about other units:"
	sed 's/^/    /' "$WORK/verify.log"
fi
ok "systemd-analyze verify: no message about mrocd.service (ExecStart, ExecReload, man pages found)"

# What the unit must keep (issue 5): a notify service with watchdog, reload, restart and
# runtime directory; group mroc; the capability set; no privilege escalation.
for d in 'Type=notify' "ExecReload=$DEST/usr/bin/mroc-cli config reload" 'WatchdogSec=10s' \
	 'Restart=on-failure' 'RuntimeDirectory=mroc' 'Group=mroc' 'NoNewPrivileges=yes' \
	 'LimitMEMLOCK=infinity' 'ProtectSystem=strict' \
	 'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK AF_XDP' \
	 'User=mroc' 'CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_RAW CAP_BPF CAP_PERFMON' \
	 'AmbientCapabilities=CAP_NET_ADMIN CAP_NET_RAW CAP_BPF CAP_PERFMON'; do
	grep -qxF "$d" "$unit" || fail "the unit lost '$d'"
done
ok "Type=notify, reload, watchdog, restart, /run/mroc, user and group mroc, four ambient capabilities, no CAP_SYS_ADMIN"

# Exposure as systemd rates it: 2.1 today (user mroc, four ambient capabilities); anything worse means hardening was lost.
if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
	systemd-analyze security --offline=yes --threshold=21 --no-pager "$unit" >"$WORK/sec.log" 2>&1 ||
		fail "systemd-analyze security: exposure above 2.1:
$(tail -n 5 "$WORK/sec.log")"
	ok "systemd-analyze security: $(grep -o 'Overall exposure level.*' "$WORK/sec.log")"
else
	echo "note: this systemd-analyze has no security --offline, exposure not rated"
fi
