# SPDX-License-Identifier: MIT
# The lines of a guest's `dmesg -r` that fail a scenario's dmesg check
# (common.sh tb_problems, which says what is left out and why). Runs on the
# host (mawk, gawk) over the guest's log; -v race=1 when the scenario saw
# thunderbolt-net's login race. Output: the problem lines; none = clean.
{ lvl = substr($0, 2, index($0, ">") - 2) + 0; lvl = lvl % 8 }
# a Call Trace comes with the lines that say why (RCU stall, hung task)
# and the stack after it: the evidence of who was stuck
/Call Trace/ { if (p2 != "") print "  " p2; if (p1 != "") print "  " p1; print; p1 = p2 = ""; frames = 48; next }
frames > 0 && /\+0x|TASK>|IRQ>|EOI>|R[A-Z0-9]+: / { frames--; print; next }
{ frames = 0; p2 = p1; p1 = $0 }
# every line of an RCU stall report, also one without a stack
lvl <= 4 && /rcu: / { print; p1 = p2 = ""; next }
/WARNING:|Oops|BUG:|general protection|Kernel panic/ { print; next }
/DMAR:.*(fault addr|handling fault)/ { print; next }
/suspect GRO implementation/ { next }
/device links to tunneled native ports are missing/ { next }
/host router reset successful/ { next }
race && /thunderbolt0: failed to allocate Rx HopID/ { next }
# a notification attempt that the kernel retries: its debug line comes
# first, then the error line of the same device
/: failed to send properties changed notification, retrying$/ { retried[dev_of($0)] = 1; next }
/: failed to send properties changed notification$/ {
	d = dev_of($0)
	if (retried[d]) { retried[d] = 0; next }
}
# a properties block that changed between the chunks of one read (the peer
# registered or removed a service directory meanwhile): kept until the end,
# not a problem if the peer's notification of that change came within 1 s
# before or 5 s after it
/: failed to parse XDomain properties$/ {
	nbad++; bad[nbad] = $0; badt[nbad] = ts($0); badr[nbad] = route_of(dev_of($0)); next
}
/: received XDomain properties changed request$/ {
	s = substr($0, index($0, "] ") + 2); sub(/: received.*/, "", s); sub(/.*: /, "", s)
	nchg++; chgt[nchg] = ts($0); chgr[nchg] = s
}
lvl <= 4 && /thunderbolt|usb4/ { print }
END {
	for (i = 1; i <= nbad; i++) {
		raced = 0
		for (j = 1; j <= nchg; j++)
			if (chgr[j] == badr[i] && chgt[j] >= badt[i] - 1 && chgt[j] <= badt[i] + 5)
				raced = 1
		if (!raced) print bad[i]
	}
}

# "<3>[   96.17] ..." -> 96.17
function ts(line) {
	return substr(line, index(line, "[") + 1, index(line, "]") - index(line, "[") - 1) + 0
}

# "thunderbolt 0-1" -> "1" (the route, as the core's "%llx: ..." lines print it)
function route_of(dev) {
	sub(/.*-/, "", dev)
	return dev
}

# "<3>[   96.17] thunderbolt 0-1: failed ..." -> "thunderbolt 0-1"
function dev_of(line,    s) {
	s = substr(line, index(line, "] ") + 2)
	return substr(s, 1, index(s, ": failed") - 1)
}
