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

# shellcheck source=scripts/qemu-lib.sh
. "$here/qemu-lib.sh"

need apt-get apt-cache dpkg-deb cpio gzip base64 tar md5sum timeout qemu-system-x86_64

section "packages, initramfs"
mkdir -p "$work/dl"
kernel_pkg=${KERNEL_PKG:-$(newest_pkg '^linux-image-6\.1\.0-[0-9]+-amd64$')}
[ -n "$kernel_pkg" ] || fail "apt knows no linux-image-6.1.0-N-amd64 (apt-get update? bookworm sources?)"
echo "kernel package: $kernel_pkg"
rm -rf "$work/capture" "$work/ttyS1.out"
vmlinuz=$(kernel_vmlinuz "$kernel_pkg" "$work/dl" "$work/k")
root=$work/root
busybox_root "$root" "$work/dl"
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
/send-back / capture "rc=$rc rc_small=$rc_small"
poweroff -f
EOF
chmod +x "$root/init"
make_initramfs "$root" "$work/initramfs.cpio.gz"
ls -l "$vmlinuz"
took

section "boot (TCG, 2 CPUs, 512 MiB)"
boot "$qemu_timeout" "$work" -m 512 -smp 2 -kernel "$vmlinuz" -initrd "$work/initramfs.cpio.gz" \
    -append "console=ttyS0 panic=-1 quiet no_timer_check"
took

section "extract"
end=$(receive "$work")
run tar -xzf "$work/capture.tgz" -C "$work"
cap=$work/capture
echo "capture folder: $cap"
(cd "$cap" && find . -type f | LC_ALL=C sort | xargs ls -l | awk '{ printf "  %8d  %s\n", $5, $9 }')
took

section "check"
guest_rc=$(end_word "$end" rc)
[ "$guest_rc" = 0 ] || fail "capture-kmem exited $guest_rc in the guest"
small_rc=$(end_word "$end" rc_small)
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
