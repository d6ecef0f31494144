# SPDX-License-Identifier: MIT
# demo-lines.sh - sourced by scripts/demo.sh: the scene's lines as a person
# reads them (pretty), and the judge of what it printed (demo_lines_bad),
# which tests/e2e/demo-check.sh and demo-lines-check.sh run too. pretty
# wants say (a line with the scene's clock) and rate (the filler's MiB/s).

# The ETA of an event to the critical level, from umm.ko's eta_ms (its fill
# rate, an average of the last samples), the bytes free (or of room) and
# the filler's rate in MiB/s. An ETA is given only where the node fills at
# a quarter of the filler's rate or more: free / eta is above the fill
# umm.ko measured, so a slower one means the node is not filling now (libum
# moved copies off, or the filler paused) and the ETA is noise ("critical in
# ~1803579666 ms", three weeks, was shown while the node filled).
eta_text() {
	local eta=$1 free=$2 rate_mib=$3
	if [ "$eta" = 4294967295 ] ||
	   [ $((free * 1000 / eta)) -lt $((rate_mib * 1048576 / 4)) ]; then
		echo "not approaching critical"
		return
	fi
	awk -v ms="$eta" 'BEGIN { printf "critical in ~%.1f s\n", ms / 1000 }'
}

# Turns the scene's output into readable lines: the program's own "demo:"
# lines as they are, libum's log lines about events and shedding reworded,
# the rest (TAP, per-eviction debug lines, the kernel log) left out.
pretty() {
	local line lv=(invalid normal low medium critical) mib=1048576
	local -a f
	while IFS= read -r line; do
		line=${line%$'\r'}
		case "$line" in
		demo:*)
			# the guest's clock is the program's; ours is the one shown
			line=${line#demo: }
			line=$(sed 's/^ *[0-9.]* s  //' <<<"$line")
			say "$line" ;;
		*"pressure: umm "*" seq "*)
			# pressure: umm TYPE seq S tier T/I level L ask A free F dest D eta E ms
			read -r -a f <<<"${line#*pressure: umm }"
			local type=${f[0]} seq=${f[2]} tier=${f[4]} level=${f[6]}
			local ask=${f[8]} free=${f[10]} dest=${f[12]} eta=${f[14]}
			local where=$tier has="node has" room="free"
			case "$tier" in
			1/*) where="node ${tier#1/}" ;;
			2/*) where="gpu${tier#2/}" ;;
			3/*) where="cgroup" has="cgroup has" room="of room" ;;
			0/*) where="-" ;;
			esac
			local msg="event #$seq ${type^^} $where level ${lv[$level]:-$level}"
			[ "$ask" != 0 ] && msg+=": free $((ask / mib)) MiB ($has $((free / mib)) MiB $room)"
			if [ "$type" = pressure ]; then
				[ "$dest" -ge 0 ] 2>/dev/null && msg+=", room on node $dest"
				[ "$eta" != 0 ] &&
					msg+=", $(eta_text "$eta" "$free" "$rate")"
			fi
			say "libum <- umm.ko  $msg" ;;
		*"pressure: freed "*" of "*" asked in "*)
			# pressure: freed SIZE of SIZE asked in T ms (sizes in units)
			local freed=${line#*pressure: freed } asked
			asked=${freed#* of }
			freed=${freed%% of *}
			say "libum -> umm.ko  shed $freed of $asked; ACK $freed"
			;;
		"# umpressure: "*|*"expect-dmesg:"*) ;;
		*"pressure: "*|*"numa: "*|*"spill: "*)
			case "$line" in *"numa: host copies on node"*) continue ;; esac
			say "libum: ${line#*] L? }" ;;
		"# trainer DIED"*|*"Killed process"*|*"invoked oom-killer"*)
			say "KERNEL: ${line#\# }" ;;
		esac
	done
}

# Prints the lines of the demo's output (stdin) that a person cannot read:
# an ETA past the scene's longest run (600 s) or in bare milliseconds, a
# region by its raw handle, a tier in hex. Status 0 when there are any.
demo_lines_bad() {
	awk '
	/critical in ~[0-9]+ ms/ { print; bad = 1; next }
	match($0, /critical in ~[0-9.]+ s/) {
		eta = substr($0, RSTART + 13, RLENGTH - 15)
		if (eta + 0 > 600) { print; bad = 1; next }
	}
	/region [0-9][0-9][0-9][0-9][0-9]/ || /tier 0x/ { print; bad = 1 }
	END { exit !bad }'
}
