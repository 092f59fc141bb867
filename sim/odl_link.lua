-- SPDX-License-Identifier: MIT
--
-- Wireshark / tshark dissector for OdinLink cable captures
-- (sim/cable --capture FILE; docs/capture.md, docs/link-protocol.md section 8).
--
--   tshark -X lua_script:sim/odl_link.lua -r capture.pcapng
--   tshark -X lua_script:sim/odl_link.lua -r capture.pcapng -V -Y 'odl.ctrl.pdf == 6'
--   wireshark -X lua_script:sim/odl_link.lua capture.pcapng
--
-- The capture's interface has LINKTYPE_USER0 (147). Every packet is a
-- 4-byte pseudo-header (from, to, capture flags, 0) followed by one link
-- message exactly as on the cable's socket: an 8-byte little-endian header
-- (len, type, flags) and the body. CTRL bodies carry a USB4 control packet
-- in wire order (big-endian dwords, big-endian CRC-32C).
--
-- Works with Lua 5.1 (bit), 5.2/5.3 (bit32) and 5.4 (native operators).

local odl = Proto("odl", "OdinLink cable")

---------------------------------------------------------------------------
-- bit operations on 32-bit values, whatever the Lua version

local band, bor, bxor, rshift, lshift
if bit32 then
	band, bor, bxor, rshift, lshift = bit32.band, bit32.bor, bit32.bxor, bit32.rshift, bit32.lshift
elseif bit then
	local m = function(x) return x % 4294967296 end
	band = function(a, b) return m(bit.band(a, b)) end
	bor = function(a, b) return m(bit.bor(a, b)) end
	bxor = function(a, b) return m(bit.bxor(a, b)) end
	rshift = function(a, n) return m(bit.rshift(a, n)) end
	lshift = function(a, n) return m(bit.lshift(a, n)) end
else
	-- Lua 5.3+: native operators, compiled at run time so that older
	-- parsers never see them
	band, bor, bxor, rshift, lshift = load([[
		return function(a, b) return (a & b) & 0xffffffff end,
		       function(a, b) return (a | b) & 0xffffffff end,
		       function(a, b) return (a ~ b) & 0xffffffff end,
		       function(a, n) return (a & 0xffffffff) >> n end,
		       function(a, n) return (a << n) & 0xffffffff end
	]])()
end

local function bits(v, hi, lo)
	return band(rshift(v, lo), lshift(1, hi - lo + 1) - 1)
end

-- CRC-32C (Castagnoli, reflected, init/xorout 0xffffffff) as USB4 control
-- packets use it; the value is stored big-endian after the packet.
local crc_table = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if band(c, 1) == 1 then
			c = bxor(rshift(c, 1), 0x82f63b78)
		else
			c = rshift(c, 1)
		end
	end
	crc_table[i] = c
end

local function crc32c(tvb, off, len)
	local c = 0xffffffff
	for i = off, off + len - 1 do
		c = bxor(crc_table[band(bxor(c, tvb(i, 1):uint()), 0xff)], rshift(c, 8))
	end
	return bxor(c, 0xffffffff)
end

---------------------------------------------------------------------------
-- value names (sim/decode.c has the same tables)

local ep_names = { [0] = "a", [1] = "b", [2] = "cable" }
local type_names = { [1] = "HELLO", [2] = "STATE", [3] = "CTRL", [4] = "DATA",
	[5] = "CREDIT", [6] = "LANE" }
local pdf_names = { [1] = "READ", [2] = "WRITE", [3] = "ERROR", [4] = "NOTIFY_ACK",
	[5] = "EVENT", [6] = "XDOMAIN_REQ", [7] = "XDOMAIN_RESP", [8] = "OVERRIDE",
	[9] = "RESET", [10] = "ICM_EVENT", [11] = "ICM_CMD", [12] = "ICM_RESP",
	[13] = "PREPARE_TO_SLEEP" }
local space_names = { [0] = "path", [1] = "adapter", [2] = "router", [3] = "counters" }
local err_names = { [0] = "PORT_NOT_CONNECTED", [1] = "LINK_ERROR",
	[2] = "INVALID_CONFIG_SPACE", [4] = "NO_SUCH_PORT", [7] = "ACK_PLUG_EVENT",
	[8] = "LOOP", [12] = "HEC_ERROR_DETECTED", [13] = "FLOW_CONTROL_ERROR",
	[15] = "LOCK", [32] = "DP_BW", [33] = "ROP_CMPLT", [34] = "POP_CMPLT",
	[35] = "PCIE_WAKE", [36] = "DP_CON_CHANGE", [37] = "DPTX_DISCOVERY",
	[38] = "LINK_RECOVERY", [39] = "ASYM_LINK" }
local xdp_names = { [1] = "UUID_REQUEST_OLD", [2] = "UUID_RESPONSE",
	[3] = "PROPERTIES_REQUEST", [4] = "PROPERTIES_RESPONSE",
	[5] = "PROPERTIES_CHANGED_REQUEST", [6] = "PROPERTIES_CHANGED_RESPONSE",
	[7] = "ERROR_RESPONSE", [12] = "UUID_REQUEST",
	[15] = "LINK_STATE_STATUS_REQUEST", [16] = "LINK_STATE_STATUS_RESPONSE",
	[17] = "LINK_STATE_CHANGE_REQUEST", [18] = "LINK_STATE_CHANGE_RESPONSE" }
local tbip_names = { [0] = "LOGIN", [1] = "LOGIN_RESPONSE", [2] = "LOGOUT", [3] = "STATUS" }
local UUID_XDP = "b638d70e-42ff-40bb-97c2-90e2c0b2ff07"
local UUID_TBIP = "c66189ca-1cce-4195-bdb8-49592e5f5a4f"

-- capture flags (byte 2 of the pseudo-header) and their trace notes
local CF = { DROP_DOWN = 0x1, DROP_FULL = 0x2, DROP_FLIGHT = 0x4,
	DROP_FAULT = 0x8, CORRUPT = 0x10, DELAY = 0x20, TAMPER = 0x40 }

local function note_of(flags)
	if band(flags, CF.DROP_DOWN) ~= 0 then return "DROP(link-down)" end
	if band(flags, CF.DROP_FULL) ~= 0 then return "DROP(queue-full)" end
	if band(flags, CF.DROP_FLIGHT) ~= 0 then return "DROP(in-flight)" end
	if band(flags, CF.DROP_FAULT) ~= 0 then return "DROP(fault)" end
	local c, d = band(flags, CF.CORRUPT) ~= 0, band(flags, CF.DELAY) ~= 0
	if c and d then return "FAULT(corrupt+delay)" end
	if c then return "FAULT(corrupt)" end
	local t = band(flags, CF.TAMPER) ~= 0
	if t and d then return "FAULT(tamper+delay)" end
	if t then return "FAULT(tamper)" end
	if d then return "FAULT(delay)" end
	return nil
end

---------------------------------------------------------------------------
-- fields

local f = {}
local function F(key, pf) f[key] = pf; return pf end

-- pseudo-header
F("from", ProtoField.uint8("odl.from", "From", base.DEC, ep_names))
F("to", ProtoField.uint8("odl.to", "To", base.DEC, ep_names))
F("cflags", ProtoField.uint8("odl.cap_flags", "Capture flags", base.HEX))
F("cf_down", ProtoField.bool("odl.cap_flags.drop_link_down", "Dropped: link down", 8, nil, CF.DROP_DOWN))
F("cf_full", ProtoField.bool("odl.cap_flags.drop_queue_full", "Dropped: queue full", 8, nil, CF.DROP_FULL))
F("cf_flight", ProtoField.bool("odl.cap_flags.drop_in_flight", "Dropped: in flight at unplug", 8, nil, CF.DROP_FLIGHT))
F("cf_fault", ProtoField.bool("odl.cap_flags.drop_fault", "Dropped: fault injection", 8, nil, CF.DROP_FAULT))
F("cf_corrupt", ProtoField.bool("odl.cap_flags.corrupted", "Corrupted by fault injection", 8, nil, CF.CORRUPT))
F("cf_delay", ProtoField.bool("odl.cap_flags.delayed", "Delayed by fault injection", 8, nil, CF.DELAY))
F("cf_tamper", ProtoField.bool("odl.cap_flags.tampered", "Tampered with by fault injection (no CRC error)", 8, nil, CF.TAMPER))
F("dropped", ProtoField.bool("odl.dropped", "Dropped (not delivered)"))
F("note", ProtoField.string("odl.note", "Note"))
F("pad", ProtoField.uint8("odl.cap_reserved", "Reserved", base.HEX))
-- link header
F("len", ProtoField.uint32("odl.len", "Body length", base.DEC))
F("type", ProtoField.uint16("odl.type", "Type", base.DEC, type_names))
F("hflags", ProtoField.uint16("odl.hflags", "Header flags", base.HEX))
-- HELLO
F("magic", ProtoField.uint32("odl.hello.magic", "Magic", base.HEX))
F("version", ProtoField.uint16("odl.hello.version", "Version", base.DEC))
F("h_lanes", ProtoField.uint16("odl.hello.lanes", "Lanes", base.DEC))
F("uid", ProtoField.uint64("odl.hello.uid", "Router UID", base.HEX))
F("h_gbps", ProtoField.uint32("odl.hello.lane_gbps", "Lane rate (Gb/s)", base.DEC))
F("h_res", ProtoField.uint32("odl.hello.reserved", "Reserved", base.HEX))
F("profile", ProtoField.stringz("odl.hello.profile", "Profile"))
-- STATE
F("up", ProtoField.uint8("odl.state.up", "Up", base.DEC))
F("s_lanes", ProtoField.uint8("odl.state.lanes", "Lanes", base.DEC))
F("s_res", ProtoField.uint16("odl.state.reserved", "Reserved", base.HEX))
F("s_gbps", ProtoField.uint32("odl.state.lane_gbps", "Lane rate (Gb/s)", base.DEC))
F("peer_uid", ProtoField.uint64("odl.state.peer_uid", "Peer UID", base.HEX))
-- CTRL
F("pdf", ProtoField.uint8("odl.ctrl.pdf", "PDF", base.DEC, pdf_names))
F("c_res", ProtoField.bytes("odl.ctrl.reserved", "Reserved"))
F("pkt", ProtoField.bytes("odl.ctrl.packet", "Control packet"))
F("route_hi", ProtoField.uint32("odl.ctrl.route_hi", "Route high", base.HEX, nil, 0x003fffff))
F("cm", ProtoField.bool("odl.ctrl.cm", "CM", 32, nil, 0x80000000))
F("route_lo", ProtoField.uint32("odl.ctrl.route_lo", "Route low", base.HEX))
F("route", ProtoField.uint64("odl.ctrl.route", "Route", base.HEX))
F("addr", ProtoField.uint32("odl.ctrl.addr", "Address", base.HEX))
F("seq", ProtoField.uint32("odl.ctrl.seq", "Sequence", base.DEC, nil, 0x18000000))
F("space", ProtoField.uint32("odl.ctrl.space", "Space", base.DEC, space_names, 0x06000000))
F("port", ProtoField.uint32("odl.ctrl.port", "Port", base.DEC, nil, 0x01f80000))
F("dwlen", ProtoField.uint32("odl.ctrl.dwords", "Length (dwords)", base.DEC, nil, 0x0007e000))
F("offset", ProtoField.uint32("odl.ctrl.offset", "Offset (dwords)", base.HEX, nil, 0x00001fff))
F("cdata", ProtoField.uint32("odl.ctrl.data", "Data", base.HEX))
F("err", ProtoField.uint32("odl.ctrl.error", "Error / notification", base.HEX))
F("pg", ProtoField.uint32("odl.ctrl.pg", "PG", base.DEC, nil, 0xc0000000))
F("eport", ProtoField.uint32("odl.ctrl.err_port", "Port", base.DEC, nil, 0x00003f00))
F("code", ProtoField.uint32("odl.ctrl.code", "Code", base.DEC, err_names, 0x000000ff))
F("ev", ProtoField.uint32("odl.ctrl.event", "Event", base.HEX))
F("unplug", ProtoField.bool("odl.ctrl.unplug", "Unplug", 32, nil, 0x80000000))
F("evport", ProtoField.uint32("odl.ctrl.event_port", "Port", base.DEC, nil, 0x0000003f))
F("xd", ProtoField.uint32("odl.ctrl.xd.hdr", "XDomain length/sequence", base.HEX))
F("xd_sn", ProtoField.uint32("odl.ctrl.xd.sn", "Sequence", base.DEC, nil, 0x18000000))
F("xd_len", ProtoField.uint32("odl.ctrl.xd.len", "Length (dwords)", base.DEC, nil, 0x0000003f))
F("uuid", ProtoField.string("odl.ctrl.xd.uuid", "Protocol UUID"))
F("xd_proto", ProtoField.string("odl.ctrl.xd.protocol", "Protocol"))
F("xd_type", ProtoField.uint32("odl.ctrl.xd.type", "Type", base.DEC))
F("xd_cmd", ProtoField.uint32("odl.ctrl.xd.cmd", "Command id", base.DEC))
F("dw", ProtoField.uint32("odl.ctrl.dword", "Dword", base.HEX))
F("crc", ProtoField.uint32("odl.ctrl.crc", "CRC-32C", base.HEX))
F("crc_ok", ProtoField.bool("odl.ctrl.crc_ok", "CRC good"))
-- DATA
F("hop", ProtoField.uint16("odl.data.hop", "HopID", base.DEC))
F("sof", ProtoField.uint8("odl.data.sof", "SOF PDF", base.DEC))
F("eof", ProtoField.uint8("odl.data.eof", "EOF PDF", base.DEC))
F("dflags", ProtoField.uint16("odl.data.flags", "Flags", base.HEX))
F("crc_err", ProtoField.bool("odl.data.crc_err", "CRC error", 16, nil, 0x0001))
F("d_res", ProtoField.uint16("odl.data.reserved", "Reserved", base.HEX))
F("plen", ProtoField.uint32("odl.data.len", "Payload length", base.DEC))
F("payload", ProtoField.bytes("odl.data.payload", "Payload"))
-- CREDIT
F("c_hop", ProtoField.uint16("odl.credit.hop", "HopID", base.DEC))
F("credits", ProtoField.uint16("odl.credit.credits", "Credits", base.DEC))
-- LANE
F("tw", ProtoField.uint8("odl.lane.target_width", "Target width", base.DEC))
F("l1", ProtoField.uint8("odl.lane.lane1_enabled", "Lane 1 enabled", base.DEC))
F("bonded", ProtoField.uint8("odl.lane.bonded", "Bonded", base.DEC))
F("l_res", ProtoField.uint8("odl.lane.reserved", "Reserved", base.HEX))
F("raw", ProtoField.bytes("odl.raw", "Body"))

local pf_list = {}
for _, v in pairs(f) do pf_list[#pf_list + 1] = v end
odl.fields = pf_list

local ef_bad_crc = ProtoExpert.new("odl.ctrl.bad_crc", "Control packet CRC-32C is wrong",
	expert.group.CHECKSUM, expert.severity.WARN)
local ef_crc_err = ProtoExpert.new("odl.data.crc_err.expert", "Frame marked as corrupted (CRC error)",
	expert.group.CHECKSUM, expert.severity.WARN)
local ef_dropped = ProtoExpert.new("odl.dropped.expert", "Message dropped by the cable",
	expert.group.SEQUENCE, expert.severity.NOTE)
local ef_malformed = ProtoExpert.new("odl.malformed", "Malformed message",
	expert.group.MALFORMED, expert.severity.ERROR)
odl.experts = { ef_bad_crc, ef_crc_err, ef_dropped, ef_malformed }

---------------------------------------------------------------------------
-- helpers

local function hex(v) return string.format("0x%x", v) end

-- up to max bytes as hex, "..." if there are more (like decode.c's sb_hex)
local function hexbytes(tvb, off, len, max)
	local t = {}
	for i = 0, math.min(len, max) - 1 do
		t[#t + 1] = string.format("%02x", tvb(off + i, 1):uint())
	end
	if len > max then t[#t + 1] = "..." end
	return table.concat(t)
end

local function name(t, v, dflt) return t[v] or dflt or "?" end

local function uid_hex(r)
	-- a UInt64 as 0x + 16 hex digits, like the trace
	local v = r:le_uint64()
	return "0x" .. v:tohex()
end

-- uuid_t from XDomain dwords: byte k of wire dword i is uuid byte 4i+3-k
local function uuid_from_wire(tvb, off)
	local b = {}
	for i = 0, 3 do
		for k = 0, 3 do
			b[4 * i + k + 1] = tvb(off + 4 * i + 3 - k, 1):uint()
		end
	end
	local s = ""
	for i = 1, 16 do
		if i == 5 or i == 7 or i == 9 or i == 11 then s = s .. "-" end
		s = s .. string.format("%02x", b[i])
	end
	return s
end

---------------------------------------------------------------------------
-- CTRL: odl_link_ctrl (pdf, 3 reserved) + control packet

local function dissect_ctrl(tvb, off, blen, tree, pinfo)
	local pdf = tvb(off, 1):uint()
	local info = name(pdf_names, pdf, "PDF?")
	tree:add(f.pdf, tvb(off, 1))
	tree:add(f.c_res, tvb(off + 1, 3))
	local poff, plen = off + 4, blen - 4
	if plen < 12 or plen % 4 ~= 0 then
		local it = tree:add(f.pkt, tvb(poff, math.max(plen, 0)))
		it:add_proto_expert_info(ef_malformed, "control packet of " .. plen .. " bytes")
		return info .. " malformed len=" .. plen .. " raw=" .. hexbytes(tvb, poff, plen, 32)
	end
	local pt = tree:add(f.pkt, tvb(poff, plen))
	pt:set_text(string.format("Control packet (%s, %d bytes)", info, plen))
	local nd = plen / 4
	local function dw(i) return tvb(poff + 4 * i, 4):uint() end
	local function dwr(i) return tvb(poff + 4 * i, 4) end
	local d0, d1 = dw(0), dw(1)
	local rhi = band(d0, 0x3fffff)
	local route = UInt64(d1, rhi)
	pt:add(f.cm, dwr(0))
	pt:add(f.route_hi, dwr(0))
	pt:add(f.route_lo, dwr(1))
	pt:add(f.route, tvb(poff, 8), route)
	if rhi ~= 0 then
		info = info .. " route=0x" .. string.format("%x%08x", rhi, d1)
	else
		info = info .. " route=" .. hex(d1)
	end
	if band(d0, 0x80000000) ~= 0 then info = info .. " cm" end
	local body_dw = nd - 1 -- dwords before the CRC
	if pdf == 1 or pdf == 2 then
		if body_dw >= 3 then
			local a = dw(2)
			local at = pt:add(f.addr, dwr(2))
			at:add(f.seq, dwr(2))
			at:add(f.space, dwr(2))
			at:add(f.port, dwr(2))
			at:add(f.dwlen, dwr(2))
			at:add(f.offset, dwr(2))
			info = info .. string.format(" space=%s port=%d offset=0x%x len=%d seq=%d",
				space_names[bits(a, 26, 25)], bits(a, 24, 19), bits(a, 12, 0),
				bits(a, 18, 13), bits(a, 28, 27))
			if body_dw > 3 then
				local ds = {}
				for i = 3, body_dw - 1 do
					pt:add(f.cdata, dwr(i))
					if i < 7 then ds[#ds + 1] = string.format("%08x", dw(i)) end
				end
				info = info .. " data=" .. table.concat(ds, ",")
				if body_dw > 7 then info = info .. string.format(",...(%d dw)", body_dw - 3) end
			end
		end
	elseif pdf == 3 or pdf == 4 then
		if body_dw >= 3 then
			local e = dw(2)
			local et = pt:add(f.err, dwr(2))
			et:add(f.pg, dwr(2))
			et:add(f.eport, dwr(2))
			et:add(f.code, dwr(2))
			local code = band(e, 0xff)
			info = info .. string.format(" code=%d(%s) port=%d", code,
				name(err_names, code), bits(e, 13, 8))
			if rshift(e, 30) ~= 0 then info = info .. " pg=" .. rshift(e, 30) end
		end
	elseif pdf == 5 then
		if body_dw >= 3 then
			local e = dw(2)
			local et = pt:add(f.ev, dwr(2))
			et:add(f.unplug, dwr(2))
			et:add(f.evport, dwr(2))
			info = info .. string.format(" port=%d unplug=%d", band(e, 0x3f), rshift(e, 31))
		end
	elseif pdf == 6 or pdf == 7 then
		if body_dw >= 3 then
			local x = dw(2)
			local xt = pt:add(f.xd, dwr(2))
			xt:add(f.xd_sn, dwr(2))
			xt:add(f.xd_len, dwr(2))
			info = info .. string.format(" len=%d sn=%d", band(x, 0x3f), bits(x, 28, 27))
		end
		if body_dw >= 8 then
			local u = uuid_from_wire(tvb, poff + 12)
			pt:add(f.uuid, tvb(poff + 12, 16), u)
			info = info .. " uuid=" .. u
			if u == UUID_XDP then
				pt:add(f.xd_proto, tvb(poff + 12, 16), "XDomain discovery (xdp)")
				local t = dw(7)
				pt:add(f.xd_type, dwr(7)):append_text(" (" .. name(xdp_names, t) .. ")")
				info = info .. string.format("(xdp) type=%d(%s)", t, name(xdp_names, t))
			elseif u == UUID_TBIP then
				pt:add(f.xd_proto, tvb(poff + 12, 16), "ThunderboltIP (tbip)")
				pt:add(f.dw, dwr(7))
				info = info .. "(tbip)"
				if body_dw >= 17 then
					local t = dw(15)
					pt:add(f.xd_type, dwr(15)):append_text(" (" .. name(tbip_names, t) .. ")")
					pt:add(f.xd_cmd, dwr(16))
					info = info .. string.format(" type=%d(%s) cmd=%d", t, name(tbip_names, t), dw(16))
				end
			else
				pt:add(f.xd_type, dwr(7))
				info = info .. " type=" .. dw(7)
			end
		end
		for i = 8, body_dw - 1 do
			if not (i >= 15 and i <= 16) then pt:add(f.dw, dwr(i)) end
		end
	else
		local ds = {}
		for i = 2, body_dw - 1 do
			pt:add(f.dw, dwr(i))
			if i < 6 then ds[#ds + 1] = string.format("%08x", dw(i)) end
		end
		if #ds > 0 then
			info = info .. " dw=" .. table.concat(ds, ",")
			if body_dw > 6 then info = info .. ",..." end
		end
	end
	local got = dw(nd - 1)
	local want = crc32c(tvb, poff, plen - 4)
	local ct = pt:add(f.crc, dwr(nd - 1))
	if got == want then
		ct:append_text(" [correct]")
		pt:add(f.crc_ok, dwr(nd - 1), true):set_generated()
		info = info .. " crc=ok"
	else
		ct:append_text(string.format(" [incorrect, should be 0x%08x]", want))
		pt:add(f.crc_ok, dwr(nd - 1), false):set_generated()
		ct:add_proto_expert_info(ef_bad_crc)
		info = info .. string.format(" crc=BAD(%08x!=%08x)", got, want)
	end
	return info
end

---------------------------------------------------------------------------
-- the whole packet

local HDR = 8
local body_min = { [1] = 56, [2] = 16, [3] = 4, [4] = 8, [5] = 4, [6] = 4 }

function odl.dissector(tvb, pinfo, root)
	if tvb:len() < 4 then return 0 end
	pinfo.cols.protocol = "ODL"
	local from, to, cflags = tvb(0, 1):uint(), tvb(1, 1):uint(), tvb(2, 1):uint()
	local tree = root:add(odl, tvb())
	local ph = tree:add(tvb(0, 4), string.format("Capture: %s -> %s", name(ep_names, from),
		name(ep_names, to)))
	ph:add(f.from, tvb(0, 1))
	ph:add(f.to, tvb(1, 1))
	local ft = ph:add(f.cflags, tvb(2, 1))
	ft:add(f.cf_down, tvb(2, 1))
	ft:add(f.cf_full, tvb(2, 1))
	ft:add(f.cf_flight, tvb(2, 1))
	ft:add(f.cf_fault, tvb(2, 1))
	ft:add(f.cf_corrupt, tvb(2, 1))
	ft:add(f.cf_delay, tvb(2, 1))
	ft:add(f.cf_tamper, tvb(2, 1))
	ph:add(f.pad, tvb(3, 1))
	local note = note_of(cflags)
	local dropped = band(cflags, 0x0f) ~= 0
	if note then
		ph:add(f.note, tvb(2, 1), note):set_generated()
		local dt = ph:add(f.dropped, tvb(2, 1), dropped):set_generated()
		if dropped then dt:add_proto_expert_info(ef_dropped, note) end
	end
	pinfo.cols.src = name(ep_names, from)
	pinfo.cols.dst = name(ep_names, to)

	local prefix = string.format("%s->%s ", name(ep_names, from), name(ep_names, to))
	if note then prefix = prefix .. note .. " " end
	if tvb:len() < 4 + HDR then
		tree:add_proto_expert_info(ef_malformed, "truncated link header")
		pinfo.cols.info = prefix .. "TRUNCATED"
		return tvb:len()
	end
	local len = tvb(4, 4):le_uint()
	local typ = tvb(8, 2):le_uint()
	local hfl = tvb(10, 2):le_uint()
	local ht = tree:add(tvb(4, HDR), "Link header")
	ht:add_le(f.len, tvb(4, 4))
	ht:add_le(f.type, tvb(8, 2))
	ht:add_le(f.hflags, tvb(10, 2))
	local tname = type_names[typ]
	local info = tname or string.format("?(%d)", typ)
	if hfl ~= 0 then info = info .. string.format(" hflags=0x%x", hfl) end
	local off = 4 + HDR
	local have = tvb:len() - off
	local blen = len
	if have ~= len then
		info = info .. string.format(" (hdr len %d, have %d)", len, have)
		ht:add_proto_expert_info(ef_malformed, "body length differs from the header")
		if have < blen then blen = have end
	end
	tree:set_text(string.format("OdinLink cable, %s%s", prefix, tname or "?"))
	if not tname or blen < (body_min[typ] or 0) then
		if blen > 0 then tree:add(f.raw, tvb(off, blen)) end
		pinfo.cols.info = prefix .. info .. " len=" .. blen .. " raw=" .. hexbytes(tvb, off, blen, 32)
		return tvb:len()
	end
	local bt = tree:add(tvb(off, blen), tname)
	local b = function(o, n) return tvb(off + o, n) end
	if typ == 1 then -- HELLO
		bt:add_le(f.magic, b(0, 4))
		bt:add_le(f.version, b(4, 2))
		bt:add_le(f.h_lanes, b(6, 2))
		bt:add_le(f.uid, b(8, 8))
		bt:add_le(f.h_gbps, b(16, 4))
		bt:add_le(f.h_res, b(20, 4))
		bt:add(f.profile, b(24, 32))
		info = info .. string.format(" magic=%s version=%d lanes=%d uid=%s lane_gbps=%d profile=\"%s\"",
			b(0, 4):le_uint() == 0x4b4c444f and "ok" or "BAD", b(4, 2):le_uint(),
			b(6, 2):le_uint(), uid_hex(b(8, 8)), b(16, 4):le_uint(), b(24, 32):stringz())
	elseif typ == 2 then -- STATE
		bt:add(f.up, b(0, 1))
		bt:add(f.s_lanes, b(1, 1))
		bt:add_le(f.s_res, b(2, 2))
		bt:add_le(f.s_gbps, b(4, 4))
		bt:add_le(f.peer_uid, b(8, 8))
		info = info .. string.format(" up=%d lanes=%d lane_gbps=%d peer_uid=%s",
			b(0, 1):uint(), b(1, 1):uint(), b(4, 4):le_uint(), uid_hex(b(8, 8)))
	elseif typ == 3 then -- CTRL
		info = info .. " " .. dissect_ctrl(tvb, off, blen, bt, pinfo)
	elseif typ == 4 then -- DATA
		local fl = b(4, 2):le_uint()
		bt:add_le(f.hop, b(0, 2))
		bt:add(f.sof, b(2, 1))
		bt:add(f.eof, b(3, 1))
		local flt = bt:add_le(f.dflags, b(4, 2))
		flt:add_le(f.crc_err, b(4, 2))
		bt:add_le(f.d_res, b(6, 2))
		local plen = blen - 8
		bt:add(f.plen, b(0, 8), plen):set_generated()
		if plen > 0 then bt:add(f.payload, b(8, plen)) end
		info = info .. string.format(" hop=%d sof=%d eof=%d len=%d", b(0, 2):le_uint(),
			b(2, 1):uint(), b(3, 1):uint(), plen)
		if band(fl, 1) ~= 0 then
			info = info .. " crc_err"
			flt:add_proto_expert_info(ef_crc_err)
		end
		if band(fl, 0xfffe) ~= 0 then info = info .. string.format(" flags=0x%x", fl) end
	elseif typ == 5 then -- CREDIT
		bt:add_le(f.c_hop, b(0, 2))
		bt:add_le(f.credits, b(2, 2))
		info = info .. string.format(" hop=%d credits=%d", b(0, 2):le_uint(), b(2, 2):le_uint())
		if b(2, 2):le_uint() == 0 then
			info = info .. " (sync)"
		end
	elseif typ == 6 then -- LANE
		bt:add(f.tw, b(0, 1))
		bt:add(f.l1, b(1, 1))
		bt:add(f.bonded, b(2, 1))
		bt:add(f.l_res, b(3, 1))
		info = info .. string.format(" target_width=%d lane1_enabled=%d bonded=%d",
			b(0, 1):uint(), b(1, 1):uint(), b(2, 1):uint())
	end
	pinfo.cols.info = prefix .. info
	tree:set_text("OdinLink cable, " .. prefix .. info)
	return tvb:len()
end

-- LINKTYPE_USER0 (147) = WTAP_ENCAP_USER0
local encap = (wtap_encaps and wtap_encaps.USER0) or (wtap and wtap.USER0)
DissectorTable.get("wtap_encap"):add(encap, odl)
