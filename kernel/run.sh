#!/usr/bin/env bash
# Builds the bare-metal kernel and boots it under QEMU: the riscv64 virt machine with OpenSBI
# (`-bios default`), 4 harts and 256 MiB by default, TCG (no KVM needed). The kernel's serial
# output goes to stdout; the exit status is the kernel's (0 = pass, 1 = panic, 2 = a failed
# check, 3 = an unexpected trap, 124 = timed out).
#
#   kernel/run.sh                      # 4 CPUs, 256 MiB
#   KERNEL_CPUS=2 KERNEL_MEM=128M kernel/run.sh
#   KERNEL_NODES=2 kernel/run.sh       # two NUMA nodes: half the RAM and the CPUs each
#
# With KERNEL_NODES=N (N > 1; the memory in MiB and the CPUs divisible by N) each node gets a
# RAM backend of its share (`-object memory-backend-ram`), its CPUs (`-numa node`), and every
# pair of nodes distance KERNEL_NODE_DISTANCE (default 20, `-numa dist`): QEMU writes them to
# the device tree as `numa-node-id` properties and a `distance-map`.
#
# Needs: qemu-system-riscv64 (Debian/Ubuntu: qemu-system-misc) and
# `rustup target add riscv64gc-unknown-none-elf`.
set -euo pipefail

cd "$(dirname "$0")"

cpus="${KERNEL_CPUS:-4}"
mem="${KERNEL_MEM:-256M}"
limit_s="${KERNEL_TIMEOUT_S:-120}"
nodes="${KERNEL_NODES:-1}"
distance="${KERNEL_NODE_DISTANCE:-20}"

numa=()
if [ "$nodes" -gt 1 ]; then
    mib="${mem%M}"
    if [ "$mib" = "$mem" ] || [ $((mib % nodes)) -ne 0 ] || [ $((cpus % nodes)) -ne 0 ]; then
        echo "run.sh: KERNEL_NODES=$nodes needs KERNEL_MEM in M and KERNEL_CPUS divisible by it" >&2
        exit 2
    fi
    per_cpus=$((cpus / nodes))
    for ((i = 0; i < nodes; i++)); do
        numa+=(-object "memory-backend-ram,id=ram$i,size=$((mib / nodes))M"
            -numa "node,nodeid=$i,cpus=$((i * per_cpus))-$(((i + 1) * per_cpus - 1)),memdev=ram$i")
    done
    for ((i = 0; i < nodes; i++)); do
        for ((j = i + 1; j < nodes; j++)); do
            numa+=(-numa "dist,src=$i,dst=$j,val=$distance")
        done
    done
fi

# The kernel is its own workspace with its own target directory; flags meant for a host
# build (RUSTFLAGS from the environment) do not apply to it.
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
export CARGO_TARGET_DIR="$PWD/target"

if ! command -v qemu-system-riscv64 >/dev/null 2>&1; then
    echo "run.sh: qemu-system-riscv64 not found (apt-get install qemu-system-misc)" >&2
    exit 127
fi
"${CARGO:-cargo}" build --release --quiet

exec timeout --foreground "$limit_s" qemu-system-riscv64 \
    -machine virt -smp "$cpus" -m "$mem" "${numa[@]}" \
    -bios default -nographic -no-reboot \
    -kernel target/riscv64gc-unknown-none-elf/release/zonealloc-kernel
