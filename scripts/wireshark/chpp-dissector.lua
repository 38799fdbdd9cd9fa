-- Wireshark dissector of the cHPP link (docs/capture.md): the link records
-- of include/hw/chpp/chpp-wire.h as Ethernet frames of EtherType
-- CHPP_ETH_TYPE, as the netdev link sends them and as a chardev link's
-- capture (device property capture) writes them.
--
-- This is the dissector's source, not a plugin: scripts/wireshark/
-- chpp-lua.py puts the table W in front of it (names, values, flag bits,
-- offsets and sizes of every structure, read from chpp-wire.h and checked
-- by the C compiler), so that nothing here restates the header.  Only the
-- bit layout of the figure 6 header is written here, as docs/wire-format.md
-- gives it (chpp-wire.h has no constants for it); the dissector recomputes
-- that header from the extension, as the device does, so a disagreement of
-- this layout with the device's shows as an error on every frame.
--
--   scripts/wireshark/chpp-lua.py --install     # ~/.local/lib/wireshark/plugins
--   tshark -X lua_script:build/wireshark/chpp.lua -r link.pcap
--
-- SPDX-License-Identifier: GPL-2.0-or-later

if not W then
    error("chpp: load the plugin scripts/wireshark/chpp-lua.py builds, " ..
          "not its source")
end

local bit = bit32 or bit
local C = W.const
local chpp = Proto("chpp", "cHPP link")
local pf = {}           -- ProtoFields by abbreviation
local EXT = "chpp_wire_ext"
local EXT_SIZE = W.structs[EXT].size

-- The value of flag NAME of set PREFIX (from chpp-wire.h).
local function flag(prefix, name)
    for _, f in ipairs(W.flags[prefix]) do
        if f[2] == name then
            return f[1]
        end
    end
    error("chpp: no flag " .. prefix .. name)
end

local HEX_FIELDS = { magic = true, rkey = true, imm = true, va = true,
                     qkey = true, atomic0 = true, atomic1 = true,
                     reserved0 = true, reserved1 = true }
local UINT = { [1] = ProtoField.uint8, [2] = ProtoField.uint16,
               [4] = ProtoField.uint32, [8] = ProtoField.uint64 }

-- One ProtoField per field of struct SNAME, named chpp.<prefix>.<field>.
local function struct_fields(sname, prefix)
    for _, f in ipairs(W.structs[sname].fields) do
        local abbr = "chpp." .. prefix .. "." .. f.name
        if f.text then
            pf[abbr] = ProtoField.string(abbr, f.name)
        elseif f.flags then
            pf[abbr] = UINT[f.elem](abbr, f.name, base.HEX)
            for _, fl in ipairs(W.flags[f.flags]) do
                local sub = abbr .. "." .. fl[2]:lower()
                pf[sub] = ProtoField.bool(sub, fl[2], f.elem * 8, nil, fl[1])
            end
        else
            pf[abbr] = UINT[f.elem](abbr, f.name,
                                    HEX_FIELDS[f.name] and base.HEX or base.DEC,
                                    f.enum and W.enums[f.enum] or nil)
        end
    end
end

struct_fields("chpp_link_rec", "rec")
struct_fields("chpp_link_hello", "hello")
struct_fields("chpp_link_credit", "credit")
struct_fields("chpp_link_refuse", "refuse")
struct_fields("chpp_link_shm", "shm")
struct_fields(EXT, "ext")
pf["chpp.hello.extra"] = ProtoField.bytes("chpp.hello.extra", "extra fields")
pf["chpp.payload"] = ProtoField.bytes("chpp.payload", "payload")
pf["chpp.padding"] = ProtoField.bytes("chpp.padding", "Ethernet padding")

-- Figure 6 (docs/wire-format.md): four big-endian dwords.
local HDR = {
    { "fmt", 0, 0x60000000, "Fmt" },
    { "tc", 0, 0x00700000, "TC (virtual channel)" },
    { "pkt_type", 0, 0x0000fc00, "PKT Type", W.enums.chpp_pkt_type },
    { "length", 0, 0x000003ff, "Length (DW)" },
    { "requester_id", 1, 0xffff0000, "Requester ID" },
    { "qp_magic", 1, 0x0000ff00, "QP Magic" },
    { "last_be", 1, 0x000000f0, "Last DW BE" },
    { "first_be", 1, 0x0000000f, "1st DW BE" },
    { "src_cpu", 2, 0xf0000000, "SRC-CPU" },
    { "src_vf", 2, 0x0e000000, "SRC-VF" },
    { "src_qp", 2, 0x01c00000, "SRC-QP" },
    { "dst_cpu", 2, 0x003c0000, "DST-CPU" },
    { "dst_vf", 2, 0x00038000, "DST-VF" },
    { "dst_qp", 2, 0x00007000, "DST-QP" },
    { "sflag", 2, 0x00000f00, "S-Flag" },
    { "addr_hi", 2, 0x000000ff, "Address[39:32]" },
    { "addr_lo", 3, 0xfffffffc, "Address[31:2]" },
}
for _, h in ipairs(HDR) do
    local abbr = "chpp.hdr." .. h[1]
    pf[abbr] = ProtoField.uint32(abbr, h[4], base.HEX, h[5], h[3])
end

local pf_list = {}
for _, f in pairs(pf) do
    pf_list[#pf_list + 1] = f
end
chpp.fields = pf_list

local ex = {
    bad_magic = ProtoExpert.new("chpp.expert.bad_magic",
                                "Record magic is not CHPP_LINK_MAGIC",
                                expert.group.MALFORMED, expert.severity.ERROR),
    truncated = ProtoExpert.new("chpp.expert.truncated",
                                "Record len runs beyond the packet",
                                expert.group.MALFORMED, expert.severity.ERROR),
    short = ProtoExpert.new("chpp.expert.short",
                            "Record body empty or ending inside a field",
                            expert.group.MALFORMED, expert.severity.ERROR),
    unknown = ProtoExpert.new("chpp.expert.unknown",
                              "Unknown record type, opcode, flags or version",
                              expert.group.PROTOCOL, expert.severity.ERROR),
    payload_len = ProtoExpert.new("chpp.expert.payload_len",
                                  "payload_len does not match the frame",
                                  expert.group.MALFORMED,
                                  expert.severity.ERROR),
    mismatch = ProtoExpert.new("chpp.expert.hdr_mismatch",
                               "Figure 6 header disagrees with the extension",
                               expert.group.PROTOCOL, expert.severity.ERROR),
    vc = ProtoExpert.new("chpp.expert.vc",
                         "Virtual channel out of range or not the header's TC",
                         expert.group.PROTOCOL, expert.severity.ERROR),
    refused = ProtoExpert.new("chpp.expert.refused", "Link refused",
                              expert.group.RESPONSE_CODE,
                              expert.severity.WARN),
    nak = ProtoExpert.new("chpp.expert.nak", "NAK",
                          expert.group.RESPONSE_CODE, expert.severity.NOTE),
}
chpp.experts = { ex.bad_magic, ex.truncated, ex.short, ex.unknown,
                 ex.payload_len, ex.mismatch, ex.vc, ex.refused, ex.nak }

-- Add the fields of struct SNAME found in TVB at OFF; returns the values
-- by field name (numbers, UInt64 for 8-byte fields, a list for arrays)
-- and whether the bytes end inside a field.  A record of an earlier
-- version may lack the last fields (1.0's CREDIT has no total): those that
-- are missing are left out.
local function add_struct(tree, tvb, off, sname, prefix)
    local v = {}
    local cut = false
    for _, f in ipairs(W.structs[sname].fields) do
        local p = pf["chpp." .. prefix .. "." .. f.name]
        if off + f.off + f.size > tvb:len() then
            cut = cut or off + f.off < tvb:len()
        elseif f.text then
            local r = tvb(off + f.off, f.size)
            tree:add(p, r)
            v[f.name] = r:stringz()
        else
            local list = {}
            for i = 0, f.size / f.elem - 1 do
                local r = tvb(off + f.off + i * f.elem, f.elem)
                local item = tree:add_le(p, r)
                if f.size > f.elem then
                    item:prepend_text("[" .. i .. "] ")
                end
                if f.elem == 8 then
                    list[i + 1] = r:le_uint64()
                elseif f.elem == 1 then
                    list[i + 1] = r:uint()
                else
                    list[i + 1] = r:le_uint()
                end
                if f.flags then
                    for _, fl in ipairs(W.flags[f.flags]) do
                        item:add_le(pf["chpp." .. prefix .. "." .. f.name ..
                                       "." .. fl[2]:lower()], r)
                    end
                end
            end
            v[f.name] = f.size > f.elem and list or list[1]
        end
    end
    return v, cut
end

local function flag_names(prefix, value)
    local names = {}
    for _, fl in ipairs(W.flags[prefix]) do
        if bit.band(value, fl[1]) ~= 0 then
            names[#names + 1] = fl[2]
        end
    end
    return table.concat(names, ",")
end

local function known_flags(prefix, value)
    local all = 0
    for _, fl in ipairs(W.flags[prefix]) do
        all = bit.bor(all, fl[1])
    end
    return bit.band(value, bit.bnot(all)) == 0
end

-- Figure 6 as the device encodes it from the extension (chpp_hdr_encode).
local function expected_header(e, tc, pkt_type)
    local len = e.payload_len
    local dws = math.ceil(len / 4)
    local first_be, last_be = len > 0 and 0xf or 0, 0
    local F = "CHPP_WIRE_F_"
    local sflag = 0

    if len > 4 then
        last_be = len % 4 ~= 0 and bit.lshift(1, len % 4) - 1 or 0xf
    elseif len > 0 then
        first_be = bit.lshift(1, len) - 1
    end
    if bit.band(e.flags, flag(F, "SOLICITED")) ~= 0 then sflag = sflag + 1 end
    if bit.band(e.flags, flag(F, "IMM")) ~= 0 then sflag = sflag + 2 end
    if bit.band(e.flags, flag(F, "ACK_REQ")) ~= 0 then sflag = sflag + 4 end
    if bit.band(e.flags, flag(F, "LAST")) ~= 0 then sflag = sflag + 8 end
    local dw0 = bit.bor(bit.lshift(len > 0 and 3 or 1, 29),
                        bit.lshift(bit.band(tc, 7), 20),
                        bit.lshift(bit.band(pkt_type, 0x3f), 10),
                        bit.band(dws, 0x3ff))
    local dw1 = bit.bor(bit.lshift(bit.band(e.src_vf, 0xffff), 16),
                        bit.lshift(e.magic, 8), bit.lshift(last_be, 4),
                        first_be)
    local dw2 = bit.bor(bit.lshift(bit.band(e.src_node, 0xf), 28),
                        bit.lshift(bit.band(e.src_vf, 7), 25),
                        bit.lshift(bit.band(e.src_qpn, 7), 22),
                        bit.lshift(bit.band(e.dst_node, 0xf), 18),
                        bit.lshift(bit.band(e.dst_vf, 7), 15),
                        bit.lshift(bit.band(e.dst_qpn, 7), 12),
                        bit.lshift(sflag, 8),
                        bit.band(e.va:higher(), 0xff))
    local dw3 = bit.band(e.va:lower(), 0xfffffffc)
    -- BitOp (no bit32) gives signed results: compare as unsigned.
    return { dw0 % 2^32, dw1 % 2^32, dw2 % 2^32, dw3 % 2^32 }
end

local function name_of(enum, value)
    return W.enums[enum][value] or ("?" .. value)
end

-- One FRAME record's body: header, extension, payload.  Returns the Info.
local function dissect_frame(tvb, tree, vc)
    local hs = C.WIRE_HDR_SIZE
    if tvb:len() < hs + EXT_SIZE then
        tree:add_proto_expert_info(ex.short)
        return "FRAME (short)"
    end
    local ht = tree:add(chpp, tvb(0, hs), "cHPP header (figure 6)")
    for _, h in ipairs(HDR) do
        ht:add(pf["chpp.hdr." .. h[1]], tvb(h[2] * 4, 4))
    end
    local et = tree:add(chpp, tvb(hs, EXT_SIZE), "Extension")
    local e = add_struct(et, tvb, hs, EXT, "ext")
    local plen = tvb:len() - hs - EXT_SIZE
    if plen > 0 then
        tree:add(pf["chpp.payload"], tvb(hs + EXT_SIZE, plen))
    end

    local tc = bit.band(bit.rshift(tvb(1, 1):uint(), 4), 7)
    local pkt_type = bit.rshift(tvb(2, 1):uint(), 2)
    if e.version ~= C.WIRE_EXT_VERSION or not W.enums.chpp_wire_op[e.op] or
       not known_flags("CHPP_WIRE_F_", e.flags) then
        et:add_proto_expert_info(ex.unknown)
    end
    if e.payload_len ~= plen or e.payload_len > C.WIRE_MAX_PAYLOAD then
        et:add_proto_expert_info(ex.payload_len)
    end
    if tc >= C.NUM_VCS or tc ~= vc then
        ht:add_proto_expert_info(ex.vc)
    end
    local want = expected_header(e, tc, pkt_type)
    for i = 1, 4 do
        if tvb((i - 1) * 4, 4):uint() ~= want[i] then
            ht:add_proto_expert_info(ex.mismatch)
            break
        end
    end
    local op = name_of("chpp_wire_op", e.op)
    local info = string.format("%s %s psn %d QP %d->%d node %d->%d len %d",
                               name_of("chpp_pkt_type", pkt_type), op, e.psn,
                               e.src_qpn, e.dst_qpn, e.src_node, e.dst_node,
                               e.payload_len)
    if bit.band(e.flags, flag("CHPP_WIRE_F_", "IMM")) ~= 0 then
        info = info .. string.format(" imm 0x%x", e.imm)
    end
    if op == "NAK" then
        info = info .. " " .. name_of("chpp_wire_syndrome", e.syndrome)
        et:add_proto_expert_info(ex.nak)
    end
    return info .. " [" .. flag_names("CHPP_WIRE_F_", e.flags) .. "]"
end

local function dissect_body(tvb, tree, rtype, vc)
    local name = W.enums.chpp_link_rec_type[rtype]
    local sname = name and "chpp_link_" .. name:lower()
    if name == "FRAME" then
        return dissect_frame(tvb, tree, vc)
    end
    if not name then
        tree:add_proto_expert_info(ex.unknown)
        return "record type " .. rtype
    end
    if not W.structs[sname] then        -- a type with no body structure
        tree:add(pf["chpp.payload"], tvb())
        return name .. " vc " .. vc
    end
    local size = W.structs[sname].size
    local v, cut = add_struct(tree, tvb, 0, sname, name:lower())
    if cut then
        tree:add_proto_expert_info(ex.short)
    end
    if name == "HELLO" then
        if tvb:len() > size then
            tree:add(pf["chpp.hello.extra"], tvb(size))
        end
        return string.format("HELLO node %s v%s.%s credits %s caps %s",
                             tostring(v.node_id), tostring(v.version_major),
                             tostring(v.version_minor),
                             table.concat(v.credits or {}, "/"),
                             flag_names("CHPP_LINK_CAP_", v.caps or 0))
    elseif name == "CREDIT" then
        return string.format("CREDIT vc %d +%s", vc, tostring(v.count))
    elseif name == "SHM" then
        -- The sender's later records travel in memory, not in this capture's
        -- stream; the device still captures them as it parses them.
        return string.format("SHM ring of %s bytes", tostring(v.ring_size))
    elseif name == "REFUSE" then
        tree:add_proto_expert_info(ex.refused)
        return string.format("REFUSE %s: %s",
                             name_of("chpp_link_refusal", v.reason or 0),
                             v.text or "")
    end
    return name .. " vc " .. vc
end

function chpp.dissector(tvb, pinfo, tree)
    local rs = W.structs.chpp_link_rec.size
    pinfo.cols.protocol = "cHPP"
    local t = tree:add(chpp, tvb())
    if tvb:len() < rs then
        t:add_proto_expert_info(ex.short)
        pinfo.cols.info = "record header cut short"
        return tvb:len()
    end
    local rt = t:add(chpp, tvb(0, rs), "Link record")
    local r = add_struct(rt, tvb, 0, "chpp_link_rec", "rec")
    if r.magic ~= C.LINK_MAGIC then
        rt:add_proto_expert_info(ex.bad_magic)
        pinfo.cols.info = string.format("bad record magic 0x%08x", r.magic)
        return tvb:len()
    end
    if r.vc >= C.NUM_VCS then
        rt:add_proto_expert_info(ex.vc)
    end
    local avail = tvb:len() - rs
    local len = r.len
    if len > avail then
        rt:add_proto_expert_info(ex.truncated)
        len = avail
    end
    local name = W.enums.chpp_link_rec_type[r.type]
    local info
    if len > 0 then
        local bt = t:add(chpp, tvb(rs, len), name or "Record")
        info = dissect_body(tvb(rs, len):tvb(), bt, r.type, r.vc)
    elseif not name then
        t:add_proto_expert_info(ex.unknown)
        info = "record type " .. r.type
    elseif name == "FRAME" or W.structs["chpp_link_" .. name:lower()] then
        t:add_proto_expert_info(ex.short)
        info = name .. " (empty)"
    else
        info = name .. " vc " .. r.vc
    end
    if rs + len < tvb:len() then
        t:add(pf["chpp.padding"], tvb(rs + len))
    end
    t:append_text(": " .. info)
    pinfo.cols.info = info
    return tvb:len()
end

DissectorTable.get("ethertype"):add(C.ETH_TYPE, chpp)
