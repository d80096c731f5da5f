//! A bare-metal riscv64 kernel whose page allocator is zonealloc.
//!
//! It boots on QEMU's virt machine under OpenSBI, reads the memory map and the harts from the
//! device tree, builds one zone over all RAM with its metadata table carved out of that RAM,
//! starts the other harts, and has every hart allocate, write, check and free pages
//! concurrently on its own per-CPU lists: zonealloc asks the platform (`platform::Hart`, the
//! CPU index in `tp`) which CPU calls. Then the boot hart drains
//! every per-CPU list, runs `Zone::check`, prints `/proc/buddyinfo` and the per-CPU counters on
//! the serial port and ends QEMU with status 0, or non-zero on any failure (a panic included).
//!
//! Run it with `kernel/run.sh` (see `kernel/README.md`).

#![no_std]
#![no_main]

mod boot;
mod fdt;
mod memory;
mod numa;
mod platform;
mod sbi;
mod serial;
mod workload;

use core::sync::atomic::{AtomicUsize, Ordering};

use zonealloc::platform::StaticStorage;
use zonealloc::{stats, CpuId, Machine, PcpSlot, Zone, ZoneConfig};

use crate::fdt::Range;
use crate::platform::Hart;
use crate::workload::{CpuCounters, Pages};

/// Most CPUs the kernel runs on (stacks and per-CPU slots are static).
pub const MAX_CPUS: usize = fdt::MAX_HARTS;

/// The per-CPU list slots (in `.bss`), handed to the zone once.
static PCPS: StaticStorage<PcpSlot, MAX_CPUS> = StaticStorage::new();
/// The zone, on this kernel's platform, set once by the boot hart before it starts the others.
static ZONE: spin::Once<Zone<Hart>> = spin::Once::new();
/// Or, where the device tree names several NUMA nodes, the machine of them.
static MACHINE: spin::Once<Machine<Hart>> = spin::Once::new();
/// Per-CPU results of the workload.
static COUNTERS: [CpuCounters; MAX_CPUS] = [const { CpuCounters::new() }; MAX_CPUS];
/// CPUs that will run, set before the others start.
static CPUS: AtomicUsize = AtomicUsize::new(0);
/// CPUs at the start line; the workload starts when all are there.
static ARRIVED: AtomicUsize = AtomicUsize::new(0);
/// CPUs that have stopped handing blocks to other CPUs.
static POSTED: AtomicUsize = AtomicUsize::new(0);
/// CPUs done with the workload.
static FINISHED: AtomicUsize = AtomicUsize::new(0);

fn wait_for(counter: &AtomicUsize, n: usize) {
    while counter.load(Ordering::Acquire) < n {
        core::hint::spin_loop();
    }
}

/// Every CPU's part: wait for all, run the workload, report done.
fn run_workload(zone: &impl Pages, cpu: usize) {
    let n = CPUS.load(Ordering::Acquire);
    ARRIVED.fetch_add(1, Ordering::AcqRel);
    wait_for(&ARRIVED, n);
    workload::run(zone, cpu as u32, n, &COUNTERS[cpu], || {
        POSTED.fetch_add(1, Ordering::AcqRel);
        wait_for(&POSTED, n);
    });
    FINISHED.fetch_add(1, Ordering::AcqRel);
}

/// The boot hart, from `_start` (CPU 0).
extern "C" fn boot_main(hartid: usize, dtb: usize, cpu: usize) -> ! {
    println!("zonealloc-kernel: riscv64 bare metal, boot hart {hartid}");
    match boot(hartid, dtb, cpu) {
        Ok(()) => {
            println!("PASS");
            serial::exit(0)
        }
        Err(e) => {
            println!("FAIL: {e}");
            serial::exit(2)
        }
    }
}

/// A secondary hart, from `sbi_hart_start` (its CPU index is the `opaque` argument).
extern "C" fn secondary_main(_hartid: usize, _zero: usize, cpu: usize) -> ! {
    assert_eq!(cpu, sbi::cpu_index(), "tp holds the CPU index");
    if let Some(machine) = MACHINE.get() {
        run_workload(machine, cpu);
    } else {
        let zone = ZONE
            .get()
            .expect("the boot hart sets the zone before starting others");
        run_workload(zone, cpu);
    }
    loop {
        core::hint::spin_loop();
    }
}

fn boot(hartid: usize, dtb: usize, cpu: usize) -> Result<(), &'static str> {
    // SAFETY: OpenSBI passes the device tree's physical address in a1; the header's first
    // 8 bytes (magic, total size) are readable RAM and nothing writes them.
    let header = unsafe { &*(dtb as *const [u8; 8]) };
    let size = fdt::total_size(header)?;
    // SAFETY: the header says the blob is `size` bytes; it stays untouched: it is reserved
    // below before any page is handed to the zone.
    let blob = unsafe { core::slice::from_raw_parts(dtb as *const u8, size) };
    let mut info = fdt::parse(blob)?;
    let (k0, k1) = boot::kernel_extent();
    info.reserve(Range { start: k0, end: k1 })?;
    info.reserve(Range {
        start: dtb as u64,
        end: (dtb + size) as u64,
    })?;

    // Dense CPU indices: the boot hart is 0, the others follow in device tree order.
    let mut harts = [0u32; MAX_CPUS];
    harts[0] = hartid as u32;
    let mut n = 1;
    for &h in &info.harts[..info.harts_len] {
        if h as usize != hartid && n < MAX_CPUS {
            harts[n] = h;
            n += 1;
        }
    }
    for (c, &h) in harts[..n].iter().enumerate() {
        COUNTERS[c].hart.store(u64::from(h), Ordering::Relaxed);
    }
    println!(
        "cpus: {n} (harts {:?}), timebase {} Hz",
        &harts[..n],
        info.timebase_hz
    );
    for r in &info.ram[..info.ram_len] {
        println!(
            "ram: {:#x}..{:#x} ({} MiB)",
            r.start,
            r.end,
            (r.end - r.start) >> 20
        );
    }
    for r in &info.reserved[..info.reserved_len] {
        println!("reserved: {:#x}..{:#x}", r.start, r.end);
    }

    platform::set_timebase(info.timebase_hz);
    if info.numa && numa::node_count(&info) > 1 {
        return boot_numa(&info, &harts[..n], cpu);
    }
    let pcps = PCPS.take().ok_or("per-CPU slots taken twice")?;
    let (zone, layout) = memory::build_zone(&info, ZoneConfig::default(), &mut pcps[..n])?;
    println!(
        "zone: pfn {:#x}..{:#x}, metadata table at {:#x}..{:#x} ({} entries, {} KiB, carved from RAM, reserved by the zone)",
        layout.span.0 .0,
        layout.span.1 .0,
        layout.table.start,
        layout.table.end,
        layout.table_entries,
        (layout.table.end - layout.table.start) >> 10
    );
    println!(
        "pages managed: {} ({} MiB in {} free ranges), per-CPU lists: {}",
        zone.managed_pages(),
        (layout.free_pages * memory::PAGE_SIZE) >> 20,
        layout.free_ranges,
        zone.cpus()
    );
    if zone.managed_pages() != layout.free_pages {
        return Err("managed pages differ from the pages added");
    }
    let zone = ZONE.call_once(|| zone);

    println!(
        "workload: {} steps per cpu, orders 0..=3 and 9, every page written and checked",
        workload::STEPS
    );
    run_all(zone, &harts[..n], cpu)?;
    report(zone, n, info.timebase_hz)
}

/// Starts the other harts on `pages`, runs the boot hart's part, waits for all.
fn run_all(pages: &impl Pages, harts: &[u32], cpu: usize) -> Result<(), &'static str> {
    let n = harts.len();
    CPUS.store(n, Ordering::Release);
    for (c, &h) in harts.iter().enumerate().skip(1) {
        if sbi::hart_start(h as usize, boot::secondary_entry(), c) != 0 {
            return Err("sbi_hart_start failed");
        }
    }
    run_workload(pages, cpu);
    wait_for(&FINISHED, n);
    Ok(())
}

/// The machine of several nodes: built from the device tree's NUMA layout, the workload
/// with node-local allocation (`MPOL_LOCAL`) and each CPU's vmstat worker, then the
/// per-node report.
fn boot_numa(info: &fdt::MachineInfo, harts: &[u32], cpu: usize) -> Result<(), &'static str> {
    let n = harts.len();
    let mut cpu_node = [0u32; MAX_CPUS];
    for (c, &h) in harts.iter().enumerate() {
        let at = info.harts[..info.harts_len].iter().position(|&x| x == h);
        cpu_node[c] = at.map_or(0, |i| info.hart_node[i]);
    }
    let (machine, layouts) = numa::build(info, &cpu_node[..n])?;
    let machine = MACHINE.call_once(|| machine);
    numa::print_layout(machine, info, &layouts);
    println!(
        "workload: {} steps per cpu, orders 0..=3 and 9, every page written and checked, node-local (MPOL_LOCAL), vmstat worker every {} steps",
        workload::STEPS,
        workload::VMSTAT_EVERY
    );
    run_all(machine, harts, cpu)?;
    let (allocs, local) = cpu_totals(n, info.timebase_hz, |c| {
        machine.cpu_to_node(CpuId(c as u32)).unwrap_or(0)
    })?;
    numa::report(machine, allocs, local)
}

/// Prints each CPU's counters (with its node where `node_of` is given) and checks them;
/// returns the allocations and the node-local ones.
fn cpu_totals(
    n: usize,
    timebase_hz: u64,
    node_of: impl Fn(usize) -> u32,
) -> Result<(u64, u64), &'static str> {
    let (mut allocs, mut frees, mut local) = (0, 0, 0);
    for (c, k) in COUNTERS[..n].iter().enumerate() {
        let get = |a: &core::sync::atomic::AtomicU64| a.load(Ordering::Acquire);
        let ms = get(&k.ticks) * 1000 / timebase_hz.max(1);
        println!(
            "cpu {c} (hart {}, node {}): {} allocs ({} on its node), {} frees ({} from another cpu), {} refused, {} pages written and checked, vmstat changes {}, {} ms",
            get(&k.hart),
            node_of(c),
            get(&k.allocs),
            get(&k.local_allocs),
            get(&k.frees),
            get(&k.remote_frees),
            get(&k.failed),
            get(&k.pages),
            get(&k.vmstat_changes),
            ms
        );
        if get(&k.allocs) == 0 || (n > 1 && get(&k.remote_frees) == 0) {
            return Err("a CPU allocated nothing, or freed nothing another CPU allocated");
        }
        allocs += get(&k.allocs);
        frees += get(&k.frees);
        local += get(&k.local_allocs);
    }
    println!("total: {allocs} allocs ({local} node-local), {frees} frees");
    if allocs != frees {
        return Err("allocs and frees differ");
    }
    Ok((allocs, local))
}

fn report(zone: &Zone<Hart>, n: usize, timebase_hz: u64) -> Result<(), &'static str> {
    cpu_totals(n, timebase_hz, |_| 0)?;
    println!("per-CPU lists before drain: {} pages", zone.pcp_pages());
    zone.drain_all();
    for c in 0..n {
        let i = zone.pcp_info(CpuId(c as u32));
        let s = i.stats;
        println!(
            "pcp cpu {c}: count {} high {} batch {} | alloc hits {} misses {} refill pages {} | frees {} | drained: high {} free_high {} local {} remote {} | trylock failures {}",
            i.count,
            i.high,
            i.batch,
            s.alloc_hits,
            s.alloc_misses,
            s.refill_pages,
            s.frees,
            s.drain_high_pages,
            s.drain_free_high_pages,
            s.drain_local_pages,
            s.drain_remote_pages,
            s.trylock_failures
        );
    }

    println!("buddyinfo:");
    let mut text = Text::new();
    stats::write_buddyinfo(&mut text, &[zone.snapshot(0)]).map_err(|_| "buddyinfo too long")?;
    serial::print(format_args!("{}", text.as_str()));

    let facts = zone.check().map_err(|e| {
        println!("check: FAILED: {e}");
        "check() failed"
    })?;
    println!(
        "check: ok (free {} + allocated {} + on per-CPU lists {} = managed {})",
        facts.free_pages,
        facts.allocated_pages,
        facts.pcp_pages,
        zone.managed_pages()
    );
    if facts.allocated_pages != 0
        || facts.pcp_pages != 0
        || zone.free_pages() != zone.managed_pages()
    {
        return Err("pages missing after every block was freed and the lists drained");
    }
    Ok(())
}

/// A fixed buffer implementing `fmt::Write` (no heap here).
pub(crate) struct Text {
    buf: [u8; 512],
    len: usize,
}

impl Text {
    pub(crate) fn new() -> Self {
        Text {
            buf: [0; 512],
            len: 0,
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl core::fmt::Write for Text {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let dst = self
            .buf
            .get_mut(self.len..self.len + s.len())
            .ok_or(core::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len += s.len();
        Ok(())
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    serial::print_unlocked(format_args!(
        "\npanic on cpu {}: {info}\nFAIL\n",
        sbi::cpu_index()
    ));
    serial::exit(1)
}
