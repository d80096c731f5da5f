#!/usr/bin/env bash
# shellcheck shell=bash
# Shared by scripts/test-capture-qemu.sh and scripts/qemu-phases (sourced, bash): fetch a Debian
# kernel package, build a busybox initramfs, boot it under QEMU (TCG), and bring back what the
# guest sends on its second serial port (base64 of a tar.gz between BEGIN-CAPTURE and
# END-CAPTURE lines, with its md5; the guest side is scripts/qemu-send-back).

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

# need TOOL...: fail unless each is on PATH.
need() {
    for tool in "$@"; do
        command -v "$tool" >/dev/null 2>&1 ||
            fail "'$tool' not found (qemu-system-x86_64: apt-get install qemu-system-x86)"
    done
}

# newest_pkg REGEX: the newest package name apt knows matching REGEX (apt-cache search
# --names-only), or nothing.
newest_pkg() {
    apt-cache search --names-only "$1" | awk '{ print $1 }' | sort -V | tail -n 1
}

# fetch_deb PKG DL: DL/PKG_*.deb, downloaded with apt-get download unless already there; prints
# its path.
fetch_deb() {
    if ! compgen -G "$2/${1}_*.deb" >/dev/null; then
        # apt-get download writes into the current folder.
        (cd "$2" && run apt-get download -q "$1" >&2) || fail "apt-get download $1"
    fi
    compgen -G "$2/${1}_*.deb" | head -n 1
}

# kernel_vmlinuz PKG DL DEST: extracts kernel package PKG (downloaded into DL) into DEST and
# prints the path of its vmlinuz. Newer Debian kernels (7.x) split linux-image-V into a
# metapackage and linux-binary-V, which holds the kernel as usr/lib/modules/V/vmlinuz: then the
# package named in its Depends is fetched and extracted too.
kernel_vmlinuz() {
    local deb dep vmlinuz
    deb=$(fetch_deb "$1" "$2")
    rm -rf "$3"
    run dpkg-deb -x "$deb" "$3" >&2
    vmlinuz=$(compgen -G "$3/boot/vmlinuz-*" | head -n 1 || true)
    if [ -z "$vmlinuz" ]; then
        dep=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | awk '$1 ~ /^linux-binary-/ { print $1; exit }')
        [ -n "$dep" ] || fail "no vmlinuz in $1 and no linux-binary-* in its Depends"
        run dpkg-deb -x "$(fetch_deb "$dep" "$2")" "$3" >&2
        vmlinuz=$(compgen -G "$3/usr/lib/modules/*/vmlinuz" | head -n 1 || true)
    fi
    [ -n "$vmlinuz" ] || fail "no vmlinuz in $1"
    printf '%s\n' "$vmlinuz"
}

# busybox_root ROOT DL: a root folder with busybox (from busybox-static, fetched into DL), /bin/sh,
# the mount points, capture-kmem and the guest's sender /send-back.
busybox_root() {
    local here
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    rm -rf "$1" "$1.bb"
    run dpkg-deb -x "$(fetch_deb busybox-static "$2")" "$1.bb"
    mkdir -p "$1/bin" "$1/dev" "$1/proc" "$1/sys" "$1/tmp"
    cp "$1.bb/bin/busybox" "$1/bin/busybox"
    rm -rf "$1.bb"
    ln -s busybox "$1/bin/sh"
    cp "$here/capture-kmem" "$1/capture-kmem"
    cp "$here/qemu-send-back" "$1/send-back"
    chmod +x "$1/send-back"
}

# make_initramfs ROOT OUT: ROOT as a gzip'd newc cpio archive.
make_initramfs() {
    (cd "$1" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -9) > "$2"
    ls -l "$2"
}

# boot TIMEOUT WORK QEMU-ARGS...: runs qemu-system-x86_64 with QEMU-ARGS, the console on
# stdout and in WORK/console.log, the second serial port into WORK/ttyS1.out.
# no_timer_check: on a loaded host TCG is too slow for the kernel's IO-APIC timer check, which
# then panics ("IO-APIC + timer doesn't work!") before the initramfs runs.
boot() {
    local timeout=$1 work=$2
    shift 2
    rm -f "$work/ttyS1.out"
    local qemu=(qemu-system-x86_64 -accel tcg -nographic -no-reboot -nic none "$@"
        -serial mon:stdio -serial "file:$work/ttyS1.out")
    printf '+ timeout %s' "$timeout"
    printf ' %q' "${qemu[@]}"
    printf ' </dev/null | tee %q\n' "$work/console.log"
    timeout "$timeout" "${qemu[@]}" </dev/null | tee "$work/console.log" ||
        fail "qemu failed or timed out (console: $work/console.log)"
}

# receive WORK: decodes what the guest sent on ttyS1 into WORK/capture.tgz, checks its md5, and
# prints the END-CAPTURE line (the guest's words after it: rc=..., and the md5).
receive() {
    local end want got
    [ -s "$1/ttyS1.out" ] || fail "nothing came back on ttyS1"
    tr -d '\r' < "$1/ttyS1.out" > "$1/ttyS1.txt"
    end=$(grep '^END-CAPTURE ' "$1/ttyS1.txt") || fail "no END-CAPTURE line: the transfer was cut"
    sed -n '/^BEGIN-CAPTURE$/,/^END-CAPTURE /p' "$1/ttyS1.txt" | sed '1d;$d' |
        base64 -d > "$1/capture.tgz"
    want=${end##*md5=}
    got=$(md5sum "$1/capture.tgz" | cut -d' ' -f1)
    [ "$want" = "$got" ] || fail "capture.tgz md5 $got, the guest sent $want"
    printf '%s\n' "$end"
}

# end_word END NAME: the value of NAME=VALUE in an END-CAPTURE line.
end_word() {
    local v=${1#* "$2"=}
    printf '%s\n' "${v%% *}"
}
