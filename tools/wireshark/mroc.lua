-- SPDX-License-Identifier: MIT
--
-- Wireshark/tshark dissector for MetaRoCE as mroc defines it (docs/PROTOCOL.md;
-- engine/wire.c is the reference for byte offsets).
--
--   tshark -X lua_script:tools/wireshark/mroc.lua -r capture.pcap -Y mroc
--   (installed by `make install` into Wireshark's Lua plugin folder: then just -Y mroc)
--
-- A packet with flag ICRC (0x80) ends in a CRC32C trailer (PROTOCOL.md 1.1):
-- shown as mroc.icrc and checked when the whole packet was captured
-- (mroc.icrc.status: good, bad, unchecked), then left out of the packet.
-- Security modes (PROTOCOL.md 1.2): flag AEAD (0x20) announces a 36-byte AES-GCM
-- trailer (mroc.aead.*: key id, sender, sequence, tag; the payload is ciphertext),
-- flag TAG (0x40) an 8-byte SipHash tag (mroc.tag); both are shown and left out of
-- the packet, unchecked (the keys are not here).  CM headers carry the mode
-- (mroc.cm.sec) and, in REQ/REP of "token", the sender's key (mroc.cm.key); REQ/REP
-- with flag 0x01 in mroc.cm.ext_flags carry mrocd's port addresses (mroc.cm.port_ip*).
--
-- Registered on the UDP port of the "mroc" preferences (default 4793, mrocd.conf's
-- network.udp_port) and as a UDP heuristic for other ports.  Every header and
-- opcode is decoded; the SACK bitmap is shown as the PSN ranges it acknowledges.
-- A packet wire_parse() would drop is shown with an expert item in the
-- Malformed group and the field mroc.malformed naming the reason (filter:
-- `mroc.malformed`), never with a Lua error.

local mroc = Proto("mroc", "MetaRoCE (mroc)")

-- Sizes and limits: docs/PROTOCOL.md sections 1 and 3, engine/wire.h.
local HDR_LEN, DATA_HDR_LEN, ACK_HDR_LEN, CM_HDR_LEN, KA_LEN = 16, 44, 64, 24, 8
local WIRE_VERSION, MAX_PATHS, SACK_BITS = 1, 16, 256
local DEFAULT_PORT = 4793
local F_ICRC, F_UNDEF, ICRC_LEN = 0x80, 0x08, 4
local F_TAG, TAG_LEN, F_AEAD, AEAD_LEN, CM_KEY_LEN = 0x40, 8, 0x20, 36, 16
local F_AEAD_IP = 0x10

local opcodes = {
	[0x01] = "WRITE", [0x02] = "WRITE_IMM", [0x03] = "SEND", [0x04] = "SEND_IMM",
	[0x05] = "READ_REQ", [0x06] = "READ_RESP", [0x10] = "ACK", [0x11] = "KEEPALIVE",
	[0x20] = "CONNECT_REQ", [0x21] = "CONNECT_REP", [0x22] = "CONNECT_REJ",
	[0x23] = "DISCONNECT", [0x24] = "DISCONNECT_ACK",
}
local nak_codes = { [0] = "NONE", [1] = "RNR", [2] = "ACCESS", [3] = "INVALID", [4] = "PSN_SEQ" }
local cm_reasons = {
	[0] = "OK", [1] = "NO_LISTENER", [2] = "BAD_PARAM", [3] = "NO_RESOURCES",
	[4] = "LOCAL_CLOSE", [5] = "ERROR", [6] = "SECURITY",
}
local sec_modes = { [0] = "none", [1] = "token", [2] = "aead" }
local modes = { [0] = "MetaRoCE", [1] = "RoCEv2" }

local function is_data(op) return op >= 0x01 and op <= 0x06 end
local function is_cm(op) return op >= 0x20 and op <= 0x24 end
local function is_ack(op) return op == 0x10 end
local function has_rkey(op) return op == 0x01 or op == 0x02 or op == 0x05 end
local function has_imm(op) return op == 0x02 or op == 0x04 end
local function uses_recv(op) return op == 0x02 or op == 0x03 or op == 0x04 end

-- Bytes each opcode needs after the UDP header; nil for an undefined opcode.
local function needed_len(op)
	if is_data(op) then return HDR_LEN + DATA_HDR_LEN end
	if is_ack(op) then return HDR_LEN + ACK_HDR_LEN end
	if is_cm(op) then return HDR_LEN + CM_HDR_LEN end
	if op == 0x11 then return HDR_LEN end
	return nil
end

local F = ProtoField
local f = {
	version = F.uint8("mroc.version", "Version", base.DEC),
	opcode = F.uint8("mroc.opcode", "Opcode", base.HEX, opcodes),
	flags = F.uint8("mroc.flags", "Flags", base.HEX),
	flag_ack_req = F.bool("mroc.flags.ack_req", "ACK_REQ (ACK this path now)", 8, nil, 0x01),
	flag_retx = F.bool("mroc.flags.retx", "RETX (sent before)", 8, nil, 0x02),
	flag_split = F.bool("mroc.flags.split", "SPLIT (cut by the split rule, not the MTU)", 8, nil, 0x04),
	flag_icrc = F.bool("mroc.flags.icrc", "ICRC (a CRC32C trailer follows)", 8, nil, F_ICRC),
	flag_tag = F.bool("mroc.flags.tag", "TAG (a SipHash tag follows, mode token)", 8, nil, F_TAG),
	flag_aead = F.bool("mroc.flags.aead", "AEAD (sealed: an AES-GCM trailer follows)", 8, nil, F_AEAD),
	flag_aead_ip = F.bool("mroc.flags.aead_ip", "AEAD_IP (with AEAD: the seal covers the IP addresses)",
		8, nil, F_AEAD_IP),
	tag = F.bytes("mroc.tag", "Tag (SipHash-2-4)"),
	aead_key_id = F.uint32("mroc.aead.key_id", "AEAD key id", base.DEC),
	aead_sender = F.uint64("mroc.aead.sender", "AEAD sender (per daemon start)", base.HEX),
	aead_seq = F.uint64("mroc.aead.seq", "AEAD sequence (nonce)", base.DEC),
	aead_tag = F.bytes("mroc.aead.tag", "AEAD tag (GCM)"),
	flag_undef = F.uint8("mroc.flags.undefined", "Undefined flags (must be 0)", base.HEX, nil, F_UNDEF),
	icrc = F.uint32("mroc.icrc", "ICRC", base.HEX),
	icrc_status = F.string("mroc.icrc.status", "ICRC status"),
	path_id = F.uint8("mroc.path_id", "Path id", base.DEC),
	dst_qpn = F.uint32("mroc.dst_qpn", "Destination QPN", base.DEC),
	src_qpn = F.uint32("mroc.src_qpn", "Source QPN", base.DEC),
	ts = F.uint32("mroc.ts", "Timestamp (ns mod 2^32)", base.DEC),
	malformed = F.string("mroc.malformed", "Malformed"),

	psn = F.uint32("mroc.data.psn", "PSN", base.DEC),
	psn_floor = F.uint32("mroc.data.psn_floor", "PSN floor", base.DEC),
	in_flight = F.uint32("mroc.data.psns_in_flight", "PSNs in flight (psn - psn_floor + 1)", base.DEC),
	dsn = F.uint32("mroc.data.dsn", "DSN", base.DEC),
	msn = F.uint32("mroc.data.msn", "MSN", base.DEC),
	ssn = F.uint32("mroc.data.ssn", "SSN (RECV index)", base.DEC),
	offset = F.uint32("mroc.data.offset", "Offset in message", base.DEC),
	msg_len = F.uint32("mroc.data.msg_len", "Message length", base.DEC),
	rkey = F.uint32("mroc.data.rkey", "Rkey", base.HEX),
	read_msn = F.uint32("mroc.data.read_msn", "MSN of the READ_REQ", base.DEC),
	key = F.uint32("mroc.data.key", "Key (unused, 0)", base.HEX),
	imm = F.uint32("mroc.data.imm", "Immediate data", base.HEX),
	raddr = F.uint64("mroc.data.raddr", "Remote offset (raddr)", base.DEC),
	payload_len = F.uint32("mroc.data.payload_len", "Payload length", base.DEC),
	payload = F.bytes("mroc.data.payload", "Payload"),

	cum_psn = F.uint32("mroc.ack.cum_psn", "Cumulative PSN (lowest missing)", base.DEC),
	cum_dsn = F.uint32("mroc.ack.cum_dsn", "Cumulative DSN", base.DEC),
	ts_echo = F.uint32("mroc.ack.ts_echo", "Timestamp echo", base.DEC),
	rcv_pkts = F.uint32("mroc.ack.rcv_pkts", "Data packets received on the path", base.DEC),
	ce_pkts = F.uint32("mroc.ack.ce_pkts", "Of those CE-marked", base.DEC),
	rate_hint = F.uint32("mroc.ack.rate_hint", "Rate hint (Mbit/s, 0 = none)", base.DEC),
	nak_dsn = F.uint32("mroc.ack.nak_dsn", "NAK DSN", base.DEC),
	nak_seq = F.uint16("mroc.ack.nak_seq", "NAK sequence (0 = none yet)", base.DEC),
	nak_code = F.uint8("mroc.ack.nak_code", "NAK code", base.DEC, nak_codes),
	host_delay = F.uint8("mroc.ack.host_delay", "Host delay in the echo (code)", base.HEX),
	sack = F.bytes("mroc.ack.sack", "SACK bitmap"),
	sack_range = F.string("mroc.ack.sack.range", "Received PSNs"),
	sack_left = F.uint32("mroc.ack.sack.left", "Range first PSN", base.DEC),
	sack_right = F.uint32("mroc.ack.sack.right", "Range last PSN", base.DEC),
	sack_count = F.uint16("mroc.ack.sack.received", "PSNs received above cum_psn", base.DEC),
	sack_holes = F.uint16("mroc.ack.sack.missing", "PSNs missing below the highest received", base.DEC),

	service_id = F.uint64("mroc.cm.service_id", "Service id", base.DEC),
	isn_dsn = F.uint32("mroc.cm.isn_dsn", "Initial DSN", base.DEC),
	isn_psn = F.uint32("mroc.cm.isn_psn", "Initial PSN", base.DEC),
	mtu = F.uint16("mroc.cm.mtu", "MTU (payload bytes per packet)", base.DEC),
	npaths = F.uint8("mroc.cm.npaths", "Paths", base.DEC),
	mode = F.uint8("mroc.cm.mode", "Mode", base.DEC, modes),
	reason = F.uint8("mroc.cm.reason", "Reason", base.DEC, cm_reasons),
	sec = F.uint8("mroc.cm.sec", "Security mode", base.DEC, sec_modes),
	cm_key = F.bytes("mroc.cm.key", "Receive key (mode token)"),
	ka_seq = F.uint64("mroc.keepalive.seq", "Keepalive number (above the last one taken)", base.DEC),
	cm_ext_flags = F.uint8("mroc.cm.ext_flags", "Extension flags", base.HEX),
	cm_ext_present = F.bool("mroc.cm.ext_present", "EXT (an extension follows)", 8, nil, 0x01),
	cm_bound = F.bool("mroc.cm.bound", "BOUND (REP of a QP already bound to the requester)", 8, nil, 0x02),
	cm_has_ports = F.bool("mroc.cm.has_ports", "PORTS (split ports in bits 4-7)", 8, nil, 0x04),
	cm_ports = F.uint8("mroc.cm.ports", "Split ports (the split rule's, PROTOCOL 5.2)", base.DEC),
	cm_split = F.uint8("mroc.cm.split", "Split unit (x 16 bytes, 0 = none)", base.DEC),
	cm_ext_len = F.uint16("mroc.cm.ext_len", "Extension length", base.DEC),
	cm_nports = F.uint8("mroc.cm.port_addrs", "Port addresses", base.DEC),
	cm_port = F.uint8("mroc.cm.port", "Port", base.DEC),
	cm_port_ip = F.ipv4("mroc.cm.port_ip", "Port address"),
	cm_port_ip6 = F.ipv6("mroc.cm.port_ip6", "Port address"),
}
local fields = {}
for _, v in pairs(f) do fields[#fields + 1] = v end
mroc.fields = fields

local ex = {
	malformed = ProtoExpert.new("mroc.malformed.expert", "Malformed MetaRoCE packet",
		expert.group.MALFORMED, expert.severity.ERROR),
	reserved = ProtoExpert.new("mroc.reserved.expert", "Reserved field not zero",
		expert.group.PROTOCOL, expert.severity.WARN),
	window = ProtoExpert.new("mroc.window.expert", "More than 256 PSNs in flight on the path",
		expert.group.PROTOCOL, expert.severity.WARN),
	range = ProtoExpert.new("mroc.range.expert", "Value out of its protocol range",
		expert.group.PROTOCOL, expert.severity.WARN),
	nak = ProtoExpert.new("mroc.nak.expert", "NAK", expert.group.RESPONSE_CODE, expert.severity.NOTE),
	truncated = ProtoExpert.new("mroc.truncated.expert", "Capture truncated (snaplen)",
		expert.group.UNDECODED, expert.severity.NOTE),
}
mroc.experts = { ex.malformed, ex.reserved, ex.window, ex.range, ex.nak, ex.truncated }

mroc.prefs.udp_port = Pref.uint("UDP port", DEFAULT_PORT,
	"UDP destination port of MetaRoCE packets (mrocd.conf network.udp_port)")

-- Mark the packet malformed: an expert item (Malformed group), a filterable
-- reason, and the Info column, as Wireshark does for its own dissectors.
local function malformed(pinfo, tree, why)
	tree:add(f.malformed, why):set_generated()
	tree:add_proto_expert_info(ex.malformed, "Malformed MetaRoCE packet: " .. why)
	pinfo.cols.info:append(" [Malformed: " .. why .. "]")
end

local function u32(tvb, off) return tvb(off, 4):uint() end

-- (a - b) mod 2^32 as a signed 32-bit difference (RFC 1982, PROTOCOL.md section 2).
local function seq_diff(a, b)
	local d = (a - b) % 4294967296
	if d >= 2147483648 then d = d - 4294967296 end
	return d
end

local function dissect_common(tvb, tree)
	local flags = tvb(2, 1):uint()
	tree:add(f.version, tvb(0, 1))
	tree:add(f.opcode, tvb(1, 1))
	local ft = tree:add(f.flags, tvb(2, 1))
	ft:add(f.flag_ack_req, tvb(2, 1))
	ft:add(f.flag_retx, tvb(2, 1))
	ft:add(f.flag_split, tvb(2, 1))
	ft:add(f.flag_icrc, tvb(2, 1))
	ft:add(f.flag_tag, tvb(2, 1))
	ft:add(f.flag_aead, tvb(2, 1))
	ft:add(f.flag_aead_ip, tvb(2, 1))
	ft:add(f.flag_undef, tvb(2, 1))
	local names = {}
	if bit32.band(flags, 0x01) ~= 0 then names[#names + 1] = "ACK_REQ" end
	if bit32.band(flags, 0x02) ~= 0 then names[#names + 1] = "RETX" end
	if bit32.band(flags, 0x04) ~= 0 then names[#names + 1] = "SPLIT" end
	if bit32.band(flags, F_ICRC) ~= 0 then names[#names + 1] = "ICRC" end
	if bit32.band(flags, F_TAG) ~= 0 then names[#names + 1] = "TAG" end
	if bit32.band(flags, F_AEAD) ~= 0 then names[#names + 1] = "AEAD" end
	if bit32.band(flags, F_AEAD_IP) ~= 0 then names[#names + 1] = "AEAD_IP" end
	if #names > 0 then ft:append_text(" (" .. table.concat(names, ", ") .. ")") end
	tree:add(f.path_id, tvb(3, 1))
	tree:add(f.dst_qpn, tvb(4, 4))
	tree:add(f.src_qpn, tvb(8, 4))
	tree:add(f.ts, tvb(12, 4))
	return names
end

-- The data header; returns the Info text or nil, why for a malformed packet.
local function dissect_data(tvb, pinfo, tree, op, reported)
	local t = tree:add(mroc, tvb(HDR_LEN, DATA_HDR_LEN), "Data header")
	local b = HDR_LEN
	local psn, floor = u32(tvb, b), u32(tvb, b + 4)
	t:add(f.psn, tvb(b, 4))
	t:add(f.psn_floor, tvb(b + 4, 4))
	local span = seq_diff(psn, floor)
	if span >= 0 then
		t:add(f.in_flight, span + 1):set_generated()
	end
	if span < 0 or span >= SACK_BITS then
		t:add_proto_expert_info(ex.window, "psn - psn_floor = " .. span .. " (must be 0..255)")
	end
	t:add(f.dsn, tvb(b + 8, 4))
	t:add(f.msn, tvb(b + 12, 4))
	local ssn = t:add(f.ssn, tvb(b + 16, 4))
	if not uses_recv(op) and u32(tvb, b + 16) ~= 0 then ssn:add_proto_expert_info(ex.reserved) end
	t:add(f.offset, tvb(b + 20, 4))
	t:add(f.msg_len, tvb(b + 24, 4))
	if has_rkey(op) then
		t:add(f.rkey, tvb(b + 28, 4))
	elseif op == 0x06 then
		t:add(f.read_msn, tvb(b + 28, 4))
	else
		local k = t:add(f.key, tvb(b + 28, 4))
		if u32(tvb, b + 28) ~= 0 then k:add_proto_expert_info(ex.reserved) end
	end
	local imm = t:add(f.imm, tvb(b + 32, 4))
	if not has_imm(op) then
		imm:append_text(" (unused)")
		if u32(tvb, b + 32) ~= 0 then imm:add_proto_expert_info(ex.reserved) end
	end
	t:add(f.raddr, tvb(b + 36, 8))

	local offset, msg_len = u32(tvb, b + 20), u32(tvb, b + 24)
	local plen = reported - HDR_LEN - DATA_HDR_LEN
	t:add(f.payload_len, plen):set_generated()
	local captured = tvb:len() - HDR_LEN - DATA_HDR_LEN
	if captured > 0 then
		tree:add(f.payload, tvb(HDR_LEN + DATA_HDR_LEN, captured))
	end
	-- wire.c parse_data(): the lengths must agree.
	if op == 0x05 and (plen ~= 0 or offset ~= 0) then
		return nil, "READ_REQ with payload or offset"
	end
	if op ~= 0x05 and offset + plen > msg_len then
		return nil, "offset + payload beyond msg_len"
	end
	if op ~= 0x05 and plen == 0 and msg_len ~= 0 then
		return nil, "empty segment of a non-empty message"
	end
	local info = string.format(" path %d psn %d dsn %d msn %d", tvb(3, 1):uint(), psn, u32(tvb, b + 8),
		u32(tvb, b + 12))
	if op == 0x05 then
		return info .. string.format(" read %d bytes", msg_len)
	end
	return info .. string.format(" off %d/%d len %d", offset, msg_len, plen)
end

-- SACK bit i = PSN cum_psn + 1 + i; bit i % 8 of byte i / 8, LSB first.
local function sack_ranges(tvb, off, cum_psn)
	local ranges, start, count, highest = {}, nil, 0, -1
	for i = 0, SACK_BITS do
		local set = false
		if i < SACK_BITS then
			set = bit32.btest(tvb(off + math.floor(i / 8), 1):uint(), bit32.lshift(1, i % 8))
		end
		if set then
			count = count + 1
			highest = i
			start = start or i
		elseif start then
			ranges[#ranges + 1] = { start, i - 1 }
			start = nil
		end
	end
	-- Missing: every PSN from cum_psn (missing by definition) up to the highest received.
	local holes = highest >= 0 and highest + 1 - count + 1 or 0
	local function psn(i) return (cum_psn + 1 + i) % 4294967296 end
	for _, r in ipairs(ranges) do r[1], r[2] = psn(r[1]), psn(r[2]) end
	return ranges, count, holes
end

local function dissect_ack(tvb, pinfo, tree)
	local t = tree:add(mroc, tvb(HDR_LEN, ACK_HDR_LEN), "ACK header")
	local b = HDR_LEN
	local cum_psn = u32(tvb, b)
	t:add(f.cum_psn, tvb(b, 4))
	t:add(f.cum_dsn, tvb(b + 4, 4))
	t:add(f.ts_echo, tvb(b + 8, 4))
	t:add(f.rcv_pkts, tvb(b + 12, 4))
	t:add(f.ce_pkts, tvb(b + 16, 4))
	local hint = u32(tvb, b + 20)
	local ht = t:add(f.rate_hint, tvb(b + 20, 4))
	if hint > 0 then ht:append_text(string.format(" (%.3f Gbit/s)", hint / 1000)) end
	t:add(f.nak_dsn, tvb(b + 24, 4))
	t:add(f.nak_seq, tvb(b + 28, 2))
	local code = tvb(b + 30, 1):uint()
	local nt = t:add(f.nak_code, tvb(b + 30, 1))
	-- PROTOCOL 3.3: 4c us below 128, 512 + 16 (c - 128) us to 254, 255 more
	local hd = tvb(b + 31, 1):uint()
	local ht = t:add(f.host_delay, tvb(b + 31, 1))
	if hd == 255 then ht:append_text(" (over 2544 us)")
	elseif hd < 128 then ht:append_text(string.format(" (%d us)", hd * 4))
	else ht:append_text(string.format(" (%d us)", 512 + (hd - 128) * 16)) end

	local st = t:add(f.sack, tvb(b + 32, 32))
	local ranges, count, holes = sack_ranges(tvb, b + 32, cum_psn)
	local texts = {}
	for _, r in ipairs(ranges) do
		local txt = r[1] == r[2] and tostring(r[1]) or (r[1] .. "-" .. r[2])
		texts[#texts + 1] = txt
		local rt = st:add(f.sack_range, tvb(b + 32, 32), txt)
		rt:set_generated()
		rt:add(f.sack_left, r[1]):set_generated()
		rt:add(f.sack_right, r[2]):set_generated()
	end
	st:add(f.sack_count, count):set_generated()
	st:add(f.sack_holes, holes):set_generated()
	if #texts > 0 then st:append_text(" [" .. table.concat(texts, ", ") .. "]") end

	local info = string.format(" path %d cum_psn %d cum_dsn %d", tvb(3, 1):uint(), cum_psn, u32(tvb, b + 4))
	if #texts > 0 then info = info .. " sack " .. table.concat(texts, ",") end
	if hint > 0 then info = info .. " hint " .. hint .. "Mb/s" end
	if code ~= 0 then
		local name = nak_codes[code] or ("code " .. code)
		nt:add_proto_expert_info(ex.nak, "NAK " .. name .. " at DSN " .. u32(tvb, b + 24))
		info = info .. " NAK " .. name
		if not nak_codes[code] then
			nt:add_proto_expert_info(ex.range, "undefined NAK code")
		end
	end
	return info
end

local function dissect_cm(tvb, pinfo, tree, op)
	local t = tree:add(mroc, tvb(HDR_LEN, CM_HDR_LEN), "CM header")
	local b = HDR_LEN
	t:add(f.service_id, tvb(b, 8))
	t:add(f.isn_dsn, tvb(b + 8, 4))
	t:add(f.isn_psn, tvb(b + 12, 4))
	local mtu, npaths, mode, reason = tvb(b + 16, 2):uint(), tvb(b + 18, 1):uint(),
		tvb(b + 19, 1):uint(), tvb(b + 20, 1):uint()
	local mt = t:add(f.mtu, tvb(b + 16, 2))
	local nt = t:add(f.npaths, tvb(b + 18, 1))
	t:add(f.mode, tvb(b + 19, 1))
	t:add(f.reason, tvb(b + 20, 1))
	local sec = tvb(b + 21, 1):uint()
	t:add(f.sec, tvb(b + 21, 1))
	local ext = tvb(b + 22, 1):uint()
	local et = t:add(f.cm_ext_flags, tvb(b + 22, 1))
	et:add(f.cm_ext_present, tvb(b + 22, 1))
	et:add(f.cm_bound, tvb(b + 22, 1))
	et:add(f.cm_has_ports, tvb(b + 22, 1))
	if bit32.band(ext, 0x04) ~= 0 then
		et:add(f.cm_ports, tvb(b + 22, 1), bit32.rshift(ext, 4) + 1)
	end
	t:add(f.cm_split, tvb(b + 23, 1))
	local off = b + CM_HDR_LEN
	if sec == 1 and (op == 0x20 or op == 0x21) then
		if tvb:len() < off + CM_KEY_LEN then return nil, "no key extension (mode token)" end
		t:add(f.cm_key, tvb(off, CM_KEY_LEN))
		off = off + CM_KEY_LEN
	end
	-- The extension (flag 0x01): a length, then mrocd's port addresses (PROTOCOL.md 3.4).
	if ext % 2 == 1 and (op == 0x20 or op == 0x21) then
		if tvb:len() < off + 2 or tvb:len() < off + 2 + tvb(off, 2):uint() then
			return nil, "CM extension truncated"
		end
		local len = tvb(off, 2):uint()
		t:add(f.cm_ext_len, tvb(off, 2))
		if len >= 1 and len == 1 + 18 * tvb(off + 2, 1):uint() then
			local pt = t:add(f.cm_nports, tvb(off + 2, 1))
			for e = off + 3, off + 2 + len - 18, 18 do
				pt:add(f.cm_port, tvb(e, 1))
				if tvb(e + 1, 1):uint() == 4 then pt:add(f.cm_port_ip, tvb(e + 2, 4))
				else pt:add(f.cm_port_ip6, tvb(e + 2, 16)) end
			end
		end
	end
	local info = " service " .. tvb(b, 8):uint64():tonumber()
	if op == 0x20 or op == 0x21 then
		if mtu < 64 or mtu > 8192 then mt:add_proto_expert_info(ex.range, "MTU outside 64..8192") end
		if npaths < 1 or npaths > MAX_PATHS then nt:add_proto_expert_info(ex.range, "npaths outside 1..16") end
		info = info .. string.format(" %s paths %d mtu %d", modes[mode] or ("mode " .. mode), npaths, mtu)
	end
	info = info .. " security " .. (sec_modes[sec] or tostring(sec))
	if op == 0x22 or op == 0x23 then
		info = info .. " reason " .. (cm_reasons[reason] or tostring(reason))
	end
	return info
end

-- CRC32C (reflected 0x82f63b78), a byte at a time from a table built once.
local crc_table
local function crc32c(crc, tvb, off, len)
	if not crc_table then
		crc_table = {}
		for i = 0, 255 do
			local c = i
			for _ = 1, 8 do
				c = bit32.band(c, 1) ~= 0 and bit32.bxor(bit32.rshift(c, 1), 0x82f63b78)
					or bit32.rshift(c, 1)
			end
			crc_table[i] = c
		end
	end
	local bytes = tvb:bytes(off, len)
	for i = 0, len - 1 do
		crc = bit32.bxor(crc_table[bit32.band(bit32.bxor(crc, bytes:get_index(i)), 0xff)],
			bit32.rshift(crc, 8))
	end
	return crc
end

-- The ICRC of a packet of len bytes (trailer excluded): its field and status;
-- false when it was captured and does not match.
local function dissect_icrc(tvb, pinfo, tree, len)
	if tvb:len() < len + ICRC_LEN then
		tree:add(f.icrc_status, "unchecked (not captured)"):set_generated()
		return
	end
	tree:add(f.icrc, tvb(len, ICRC_LEN))
	local ports = ByteArray.new(string.format("%04x%04x", pinfo.src_port, pinfo.dst_port))
	local crc = crc32c(0xffffffff, ports:tvb("ports"), 0, 4)
	crc = bit32.bnot(crc32c(crc, tvb, 0, len))
	local good = crc == tvb(len, ICRC_LEN):uint()
	tree:add(f.icrc_status, good and "good" or "bad"):set_generated()
	if not good then
		malformed(pinfo, tree, string.format("bad ICRC (0x%08x expected)", crc))
	end
	return good
end

-- The security modes' trailers (PROTOCOL.md 1.2), shown unchecked: the keys are not here.
local sec_trailers = {
	{ flag = F_AEAD, len = AEAD_LEN, name = "AEAD trailer", show = function(tvb, off, root, pinfo)
		local at = root:add(mroc, tvb(off, AEAD_LEN), "AEAD trailer (AES-256-GCM)")
		at:add(f.aead_key_id, tvb(off, 4))
		at:add(f.aead_sender, tvb(off + 4, 8))
		at:add(f.aead_seq, tvb(off + 12, 8))
		at:add(f.aead_tag, tvb(off + 20, 16))
		pinfo.cols.info:append(" key " .. tvb(off, 4):uint())
	end },
	{ flag = F_TAG, len = TAG_LEN, name = "tag", show = function(tvb, off, root)
		root:add(f.tag, tvb(off, TAG_LEN))
	end },
}

-- Returns the number of bytes consumed (0: not ours, for the heuristic).
local function dissect(tvb, pinfo, tree)
	local reported = tvb:reported_length_remaining()
	pinfo.cols.protocol = "MROC"
	local root = tree:add(mroc, tvb())
	if reported < HDR_LEN then
		pinfo.cols.info = "MetaRoCE"
		malformed(pinfo, root, "shorter than the 16-byte common header")
		return tvb:len()
	end
	if tvb:len() < HDR_LEN then
		root:add_proto_expert_info(ex.truncated)
		return tvb:len()
	end
	local op = tvb(1, 1):uint()
	local name = opcodes[op] or string.format("opcode 0x%02x", op)
	pinfo.cols.info = name
	root:append_text(", " .. name)
	local flag_names = dissect_common(tvb, root)
	if #flag_names > 0 then pinfo.cols.info:append(" [" .. table.concat(flag_names, ",") .. "]") end

	-- The order of wire_parse(): version, flags, path id, opcode, length.
	if tvb(0, 1):uint() ~= WIRE_VERSION then
		malformed(pinfo, root, "version " .. tvb(0, 1):uint() .. " (not 1)")
		return tvb:len()
	end
	if bit32.band(tvb(2, 1):uint(), F_UNDEF) ~= 0 then
		malformed(pinfo, root, "undefined flag bits set")
		return tvb:len()
	end
	if bit32.band(tvb(2, 1):uint(), F_ICRC) ~= 0 then
		-- The rest of this function sees the packet without its trailer, as the engine does.
		if reported < HDR_LEN + ICRC_LEN then
			malformed(pinfo, root, "too short for its ICRC")
			return tvb:len()
		end
		reported = reported - ICRC_LEN
		if dissect_icrc(tvb, pinfo, root, reported) == false then return tvb:len() end
		tvb = tvb(0, math.min(tvb:len(), reported)):tvb()
	end
	-- Security trailers, outside in: AEAD (added last by the frame layer), then TAG.
	for _, t in ipairs(sec_trailers) do
		if bit32.band(tvb(2, 1):uint(), t.flag) ~= 0 then
			if reported < HDR_LEN + t.len then
				malformed(pinfo, root, "too short for its " .. t.name)
				return tvb:len()
			end
			reported = reported - t.len
			if tvb:len() >= reported + t.len then t.show(tvb, reported, root, pinfo) end
			tvb = tvb(0, math.min(tvb:len(), reported)):tvb()
		end
	end
	if tvb(3, 1):uint() >= MAX_PATHS then
		malformed(pinfo, root, "path id " .. tvb(3, 1):uint() .. " >= 16")
		return tvb:len()
	end
	local need = needed_len(op)
	if not need then
		malformed(pinfo, root, "undefined opcode")
		return tvb:len()
	end
	if reported < need then
		malformed(pinfo, root, string.format("%d bytes, %s needs %d", reported, name, need))
		return tvb:len()
	end
	if tvb:len() < need then
		root:add_proto_expert_info(ex.truncated)
		return tvb:len()
	end

	local info, why
	if is_data(op) then
		info, why = dissect_data(tvb, pinfo, root, op, reported)
	elseif is_ack(op) then
		info = dissect_ack(tvb, pinfo, root)
	elseif is_cm(op) then
		info, why = dissect_cm(tvb, pinfo, root, op)
		if tvb(3, 1):uint() ~= 0 then
			root:add_proto_expert_info(ex.reserved, "path_id is 0 in CM packets")
		end
	else
		-- KEEPALIVE: its number (PROTOCOL.md 3.4a); a peer from before it sends none.
		info = string.format(" path %d", tvb(3, 1):uint())
		if reported > HDR_LEN and reported < HDR_LEN + KA_LEN then
			why = string.format("%d bytes, a KEEPALIVE's number needs %d", reported, HDR_LEN + KA_LEN)
		elseif reported >= HDR_LEN + KA_LEN and tvb:len() >= HDR_LEN + KA_LEN then
			root:add(f.ka_seq, tvb(HDR_LEN, KA_LEN))
			info = info .. " #" .. tostring(tvb(HDR_LEN, KA_LEN):uint64())
		end
	end
	pinfo.cols.info:append(string.format(" %d->%d", tvb(8, 4):uint(), tvb(4, 4):uint()))
	if info then pinfo.cols.info:append(info) end
	if why then malformed(pinfo, root, why) end
	return tvb:len()
end

function mroc.dissector(tvb, pinfo, tree)
	return dissect(tvb, pinfo, tree)
end

-- UDP on another port: claim only what wire_parse() would accept.
local function heuristic(tvb, pinfo, tree)
	if tvb:len() < HDR_LEN then return false end
	local op = tvb(1, 1):uint()
	local need = needed_len(op)
	if tvb(0, 1):uint() ~= WIRE_VERSION or not need or tvb:reported_length_remaining() < need
	   or bit32.band(tvb(2, 1):uint(), F_UNDEF) ~= 0 or tvb(3, 1):uint() >= MAX_PATHS then
		return false
	end
	dissect(tvb, pinfo, tree)
	return true
end
mroc:register_heuristic("udp", heuristic)

local registered_port
local function register_port()
	local udp = DissectorTable.get("udp.port")
	if registered_port then udp:remove(registered_port, mroc) end
	registered_port = mroc.prefs.udp_port
	udp:add(registered_port, mroc)
end
mroc.prefs_changed = register_port
register_port()
