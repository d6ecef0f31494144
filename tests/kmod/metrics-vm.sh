#!/bin/sh
# SPDX-License-Identifier: MIT
# Description: umctl metrics against the real umm.ko, served by a real
# node_exporter (Debian's prometheus-node-exporter) through its textfile
# collector, as a monitoring system would see it: node_exporter accepts the
# file (node_textfile_scrape_error 0), a node's figures agree with sysfs, a
# level raised with inject shows in the next scrape, a client that holds
# /dev/umm open appears with its name and slot, its pid in umm_client_info
# (and its ACK latency histogram), and umctl metrics FILE
# replaces the file the collector reads. Runs under busybox sh and restores
# what it changes.
#
# On the host, "metrics-vm.sh --files" prints the rig's --file options that
# carry node_exporter and the shared libraries it needs (the initramfs has
# no libc), or nothing when the package is not installed: then this script
# reports a SKIP in the VM.
NE=/usr/bin/prometheus-node-exporter
if [ "${1:-}" = --files ]; then
	[ -x $NE ] || exit 0
	printf -- '--file %s:/t/node_exporter ' $NE
	for lib in $(ldd $NE | grep -o '/[^ ]*'); do
		printf -- '--file %s:%s ' "$(readlink -f "$lib")" "$lib"
	done
	exit 0
fi

n=0 pass=0 fail=0
t() {	# t NAME CMD...
	n=$((n + 1))
	name=$1
	shift
	if "$@"; then pass=$((pass + 1)); echo "ok $n metrics.$name"
	else fail=$((fail + 1)); echo "not ok $n metrics.$name"; fi
}
U=/sys/kernel/mm/umm
D=/tmp/textfile
URL=http://127.0.0.1:9100/metrics

echo "TAP version 13"
echo "1..5"
if [ ! -x /t/node_exporter ]; then
	for c in scrape_accepted values_agree_with_sysfs level_follows \
		client_listed file_replaced; do
		n=$((n + 1))
		echo "ok $n metrics.$c # SKIP prometheus-node-exporter not installed on the host"
	done
	echo "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:5 error:0"
	exit 0
fi

# scrape: umctl metrics into the collector's directory, then node_exporter's
# page into /tmp/scrape (it reads the directory on every request)
scrape() {
	umctl metrics $D/umm.prom &&
	wget -q -O /tmp/scrape $URL
}

# is SERIES VALUE: the last scrape serves SERIES (labels in node_exporter's
# order, sorted by name) with VALUE; compared as numbers, since Go writes
# large ones as 5.26987264e+08
is() {
	awk -v k="$1" -v want="$2" '$1 == k { found = 1; got = $2 }
		END { if (found && got + 0 == want + 0) exit 0
		      printf "# %s: got \"%s\", want %s\n", k, got, want
		      exit 1 }' /tmp/scrape
}

accepted() {
	scrape && is node_textfile_scrape_error 0 && is umm_up 1 &&
	is umm_client_table_readable 1
}
agree() {
	is 'umm_node_total_bytes{node="0"}' "$(cat $U/nodes/node0/total_bytes)" &&
	is 'umm_gpu_budget_bytes{gpu="0"}' "$(cat $U/gpus/gpu0/budget_bytes)" &&
	is "umm_info{api_version=\"$(cat $U/api_version)\"}" 1
}
level_number() {
	case $1 in
	normal) echo 0 ;; low) echo 1 ;; medium) echo 2 ;; critical) echo 3 ;;
	esac
}
level() {
	umctl inject node 0 critical && scrape &&
	is 'umm_node_level{node="0"}' 3 || { umctl inject clear; return 1; }
	umctl inject clear && scrape &&
	is 'umm_node_level{node="0"}' \
		"$(level_number "$(cat $U/nodes/node0/level)")"
}
# a process that holds /dev/umm open is a client: umm_client_info maps its
# pid to the name and slot that label its series (node_exporter sorts them)
client() {
	sleep 60 3</dev/umm &
	pid=$!
	scrape
	kill $pid
	wait $pid 2>/dev/null
	ns=$(sed -n "s/^umm_client_info{\(name=\"[^\"]*\"\),pid=\"$pid\",\(slot=\"[0-9]*\"\)} 1\$/\1,\2/p" \
		/tmp/scrape)
	[ -n "$ns" ] && grep -q "^umm_client_ready{$ns} 0\$" /tmp/scrape || {
		echo "# no client $pid"
		grep '^umm_client_\(info\|ready\)' /tmp/scrape | sed 's/^/# /'
		return 1
	}
	# its ACK latency histogram, served as one (no ACK yet: all zero)
	grep -q "^umm_client_ack_latency_seconds_bucket{$ns,le=\"+Inf\"} 0\$" \
		/tmp/scrape &&
	grep -q "^umm_client_ack_latency_seconds_count{$ns} 0\$" \
		/tmp/scrape || {
		echo "# no histogram for $pid"
		grep '^umm_client_ack_latency' /tmp/scrape | sed 's/^/# /'
		return 1
	}
}
# umctl metrics FILE renames a new file over the one the collector reads
replaced() {
	ino=$(stat -c %i $D/umm.prom) &&
	umctl metrics $D/umm.prom &&
	[ "$(stat -c %i $D/umm.prom)" != "$ino" ] &&
	[ "$(ls $D | wc -l)" = 1 ]
}

mkdir -p $D
ip link set lo up
umctl metrics $D/umm.prom
node_exporter --collector.disable-defaults --collector.textfile \
	--collector.textfile.directory=$D \
	--web.listen-address=127.0.0.1:9100 >/tmp/ne.log 2>&1 &
ne=$!
# under emulation the Go runtime takes its time to listen
i=0
while [ $i -lt 60 ] && ! wget -q -O /dev/null $URL 2>/dev/null; do
	sleep 1
	i=$((i + 1))
done

t scrape_accepted accepted
t values_agree_with_sysfs agree
t level_follows level
t client_listed client
t file_replaced replaced
kill $ne
wait $ne 2>/dev/null
[ $fail = 0 ] || sed 's/^/# node_exporter: /' /tmp/ne.log
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
[ $fail = 0 ]
