#!/usr/bin/env bash
# The real test of scripts/capture-kmem: boot an unmodified Debian kernel under QEMU (TCG, no
# KVM) with a busybox initramfs, run capture-kmem there around a 16 MiB tmpfs write, bring the
# capture folder back over a second serial port, and check it.
#
#   scripts/test-capture-qemu.sh [WORKDIR]        (default WORKDIR: /tmp/capture-kmem-qemu)
#
# Needs: apt-get (a Debian/Ubuntu host whose apt sources carry the kernel), dpkg-deb, cpio,
# gzip, base64, qemu-system-x86_64 (apt-get install qemu-system-x86). Downloads about 72 MB
# (linux-image-6.1.0-N-amd64 and busybox-static; kept in WORKDIR/dl for the next run) and takes
# a few minutes. Not part of CI. Environment: KERNEL_PKG=linux-image-... to pick the kernel
# package (default: the newest linux-image-6.1.0-N-amd64 apt knows), QEMU_TIMEOUT seconds for
# the boot (default 900).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
work=${1:-${TMPDIR:-/tmp}/capture-kmem-qemu}
qemu_timeout=${QEMU_TIMEOUT:-900}

SECONDS=0
step_start=0
section() {
    printf '\n==== [%4ds] %s\n' "$SECONDS" "$*"
    step_start=$SECONDS
}
took() { printf '     (%ds)\n' $((SECONDS - step_start)); }
run() {
    printf '+'
    printf ' %q' "$@"
    printf '\n'
    "$@"
}
fail() {
    printf 'FAIL: %s\n' "$*" >&2
    exit 1
}

for tool in apt-get apt-cache dpkg-deb cpio gzip base64 tar md5sum timeout qemu-system-x86_64; do
    command -v "$tool" >/dev/null 2>&1 ||
        fail "'$tool' not found (qemu-system-x86_64: apt-get install qemu-system-x86)"
done

section "packages"
mkdir -p "$work/dl"
kernel_pkg=${KERNEL_PKG:-$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' |
    awk '{ print $1 }' | sort -V | tail -n 1)}
[ -n "$kernel_pkg" ] || fail "apt knows no linux-image-6.1.0-N-amd64 (apt-get update? bookworm sources?)"
echo "kernel package: $kernel_pkg"
for pkg in "$kernel_pkg" busybox-static; do
    if ! compgen -G "$work/dl/${pkg}_*.deb" >/dev/null; then
        # apt-get download writes into the current folder.
        (cd "$work/dl" && run apt-get download -q "$pkg")
    fi
done
took

section "initramfs"
rm -rf "$work/k" "$work/bb" "$work/root" "$work/capture" "$work/ttyS1.out"
run dpkg-deb -x "$(compgen -G "$work/dl/${kernel_pkg}_*.deb" | head -n 1)" "$work/k"
run dpkg-deb -x "$(compgen -G "$work/dl/busybox-static_*.deb" | head -n 1)" "$work/bb"
vmlinuz=$(compgen -G "$work/k/boot/vmlinuz-*" | head -n 1)
[ -n "$vmlinuz" ] || fail "no vmlinuz in $kernel_pkg"
root=$work/root
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp"
cp "$work/bb/bin/busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$here/capture-kmem" "$root/capture-kmem"
# /init: mount the pseudo filesystems (tracefs is left to capture-kmem, which mounts it), run
# the capture (and one with too small a buffer), send it as base64 of a tar.gz over ttyS1 (a file on the host), power off.
cat > "$root/init" <<'EOF'
#!/bin/sh
/bin/busybox --install -s /bin
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /tmp
echo "guest: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo)"
/capture-kmem --out /capture --buffer-kb 8192 --label dd16 -- \
    sh -c 'dd if=/dev/zero of=/tmp/f bs=1M count=16; rm /tmp/f'
rc=$?
echo "guest: capture-kmem exit $rc"
grep -q ' /sys/kernel/tracing ' /proc/mounts && echo "guest: tracefs still mounted after exit"
ls /sys/kernel/tracing/instances 2>/dev/null | sed 's/^/guest: instance left behind: /'
# The loss check, for real: a 64 KiB buffer cannot hold the same run; want exit 2.
/capture-kmem --out /capture-small --buffer-kb 64 --compress none -- \
    sh -c 'dd if=/dev/zero of=/tmp/f bs=1M count=16; rm /tmp/f' >/dev/null 2>&1
rc_small=$?
echo "guest: capture-kmem --buffer-kb 64 exit $rc_small, $(head -n 1 /capture-small/stats/lost)"
tar -czf /capture.tgz capture
stty -F /dev/ttyS1 raw -echo
{
    echo BEGIN-CAPTURE
    base64 /capture.tgz
    echo "END-CAPTURE rc=$rc rc_small=$rc_small md5=$(md5sum /capture.tgz | cut -d' ' -f1)"
} > /dev/ttyS1
sync
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -9) > "$work/initramfs.cpio.gz"
ls -l "$vmlinuz" "$work/initramfs.cpio.gz"
took

section "boot (TCG, 2 CPUs, 512 MiB)"
# no_timer_check: on a loaded host TCG is too slow for the kernel's IO-APIC timer check, which
# then panics ("IO-APIC + timer doesn't work!") before the initramfs runs.
qemu=(qemu-system-x86_64 -accel tcg -m 512 -smp 2 -nographic -no-reboot -nic none
    -kernel "$vmlinuz" -initrd "$work/initramfs.cpio.gz"
    -append "console=ttyS0 panic=-1 quiet no_timer_check"
    -serial mon:stdio -serial "file:$work/ttyS1.out")
printf '+ timeout %s' "$qemu_timeout"
printf ' %q' "${qemu[@]}"
printf ' </dev/null | tee %q\n' "$work/console.log"
timeout "$qemu_timeout" "${qemu[@]}" </dev/null | tee "$work/console.log" ||
    fail "qemu failed or timed out (console: $work/console.log)"
took

section "extract"
[ -s "$work/ttyS1.out" ] || fail "nothing came back on ttyS1"
tr -d '\r' < "$work/ttyS1.out" > "$work/ttyS1.txt"
end=$(grep '^END-CAPTURE ' "$work/ttyS1.txt") || fail "no END-CAPTURE line: the transfer was cut"
sed -n '/^BEGIN-CAPTURE$/,/^END-CAPTURE /p' "$work/ttyS1.txt" | sed '1d;$d' |
    base64 -d > "$work/capture.tgz"
want_md5=${end##*md5=}
got_md5=$(md5sum "$work/capture.tgz" | cut -d' ' -f1)
[ "$want_md5" = "$got_md5" ] || fail "capture.tgz md5 $got_md5, the guest sent $want_md5"
run tar -xzf "$work/capture.tgz" -C "$work"
cap=$work/capture
echo "capture folder: $cap"
(cd "$cap" && find . -type f | LC_ALL=C sort | xargs ls -l | awk '{ printf "  %8d  %s\n", $5, $9 }')
took

section "check"
guest_rc=${end#*rc=}
guest_rc=${guest_rc%% *}
[ "$guest_rc" = 0 ] || fail "capture-kmem exited $guest_rc in the guest"
small_rc=${end#*rc_small=}
small_rc=${small_rc%% *}
[ "$small_rc" = 2 ] || fail "capture-kmem --buffer-kb 64 exited $small_rc, want 2 (events lost)"
! grep -q '^guest: tracefs still mounted\|^guest: instance left behind' "$work/console.log" ||
    fail "capture-kmem did not clean up (see $work/console.log)"
for f in README trace.txt.gz stats/lost stats/per_cpu/cpu0/stats stats/per_cpu/cpu1/stats \
    info/uname info/cmdline info/cpuinfo info/sysctl_vm info/set_event \
    info/formats/mm_page_alloc.format; do
    [ -s "$cap/$f" ] || fail "missing or empty: $f"
done
for phase in before after; do
    for f in zoneinfo buddyinfo pagetypeinfo vmstat meminfo; do
        [ -s "$cap/$phase/$f" ] || fail "missing or empty: $phase/$f"
    done
done
grep -q 'Node 0, zone' "$cap/before/buddyinfo" || fail "before/buddyinfo is not buddyinfo"
# The pfn layout (scripts/README.md): whole, and in DMA (which nothing touches) the greedy
# split of its free runs into aligned blocks is buddyinfo's DMA row; the NUMA files of node 0.
for phase in before after; do
    for f in layout mapcount nodes/node0/cpulist nodes/node0/numastat; do
        [ -s "$cap/$phase/$f" ] || fail "missing or empty: $phase/$f"
    done
    for f in layout mapcount; do
        tail -n 1 "$cap/$phase/$f" | grep -Eq '^end [0-9]+$' || fail "$phase/$f has no end line"
    done
done
dma_split=$(awk '
    NR == 1 { max = $NF }
    $3 == "B" && $1 < 4096 {
        a = $1; b = $1 + $2; if (b > 4096) b = 4096
        while (a < b) { k = 0; while (k < max && a % 2^(k+1) == 0 && a + 2^(k+1) <= b) k++; n[k]++; a += 2^k }
    }
    END { for (k = 0; k <= max; k++) printf "%s%d", (k ? " " : ""), n[k]; print "" }' "$cap/before/layout")
dma_buddy=$(awk '$4 == "DMA" { for (i = 5; i <= NF; i++) printf "%s%s", (i > 5 ? " " : ""), $i; print "" }' "$cap/before/buddyinfo")
echo "DMA free blocks per order: layout $dma_split, buddyinfo $dma_buddy"
[ "$dma_split" = "$dma_buddy" ] || fail "before/layout's DMA free blocks ($dma_split) are not buddyinfo's ($dma_buddy)"
grep -q '^Free pages count per migrate type' "$cap/after/pagetypeinfo" || fail "after/pagetypeinfo is not pagetypeinfo"
grep -q '6\.1\.0' "$cap/info/uname" || fail "info/uname is not the 6.1 kernel"
grep -qx 'lost_total: 0' "$cap/stats/lost" || fail "events were lost: $(cat "$cap/stats/lost")"
for f in "$cap"/stats/per_cpu/cpu*/stats; do
    grep -qx 'overrun: 0' "$f" || fail "overrun in $f"
    grep -qx 'dropped events: 0' "$f" || fail "dropped events in $f"
done
# Per event, all lines and those inside the workload window; 16 MiB of tmpfs page cache is at
# least 4096 order-0 allocations between the markers.
counts=$(gzip -dc "$cap/trace.txt.gz" | awk '
    / tracing_mark_write: KT_WORKLOAD_BEGIN dd16$/ { w = 1; b++ }
    / tracing_mark_write: KT_WORKLOAD_END dd16$/ { w = 0; e++ }
    / mm_page_alloc: / { a++; if (w) aw++ }
    / mm_page_free: / { f++; if (w) fw++ }
    / mm_page_free_batched: / { fb++ }
    / mm_page_alloc_zone_locked: / { zl++ }
    / mm_page_pcpu_drain: / { dr++ }
    END { printf "%d %d %d %d %d %d %d %d %d\n", b, e, a, aw, f, fw, fb, zl, dr }')
read -r begins ends allocs allocs_w frees frees_w batched locked drains <<<"$counts"
printf 'mm_page_alloc: %d (%d in the workload)  mm_page_free: %d (%d in the workload)\n' \
    "$allocs" "$allocs_w" "$frees" "$frees_w"
printf 'mm_page_free_batched: %d  mm_page_alloc_zone_locked: %d  mm_page_pcpu_drain: %d\n' \
    "$batched" "$locked" "$drains"
[ "$begins.$ends" = 1.1 ] || fail "KT_WORKLOAD_BEGIN/END markers: $begins/$ends, want 1/1"
[ "$allocs_w" -ge 4096 ] || fail "only $allocs_w mm_page_alloc in the workload window, want >= 4096"
[ "$frees" -gt 0 ] || fail "no mm_page_free"
# If the lab binary is built, its trace parser reads the capture too.
for bin in "$repo/target/release/zonealloc" "$repo/target/debug/zonealloc"; do
    if [ -x "$bin" ]; then
        run "$bin" trace stats "$cap/trace.txt.gz" | head -n 30
        break
    fi
done
echo
echo "README of the capture:"
sed 's/^/  /' "$cap/README"
took
printf '\nPASS: capture-kmem on %s under QEMU, in %ds (folder: %s)\n' "$kernel_pkg" "$SECONDS" "$cap"
