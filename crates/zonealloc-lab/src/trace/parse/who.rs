//! Who ran an event, from its line's prefix: the task (`comm-pid`) and ftrace's latency
//! column (`d..2.`), which tell the vmstat worker's `decay_pcp_high` (a `kworker/N:M` of the
//! line's CPU, irqs off, preempt depth 2) from a free path's drain (depth 3 and up) and from
//! `drain_all_pages` (another task). Read once per distinct prefix: the fast path keeps it
//! with the opening it caches.
//!
//! The column, as `trace_print_lat_fmt` (`kernel/trace/trace_output.c`) prints it: irqs-off
//! (`d`, `D` with BH off too, `b` BH off only, `.`), need-resched (`BNLbnlp.`), hardirq /
//! softirq (`Z`, `z` NMI, `H` hardirq in softirq, `h`, `s`, `.`), the preempt depth's low
//! digit in hex (`.` for 0), then (5.15 on) migrate-disable (hex, `.`).

/// What kind of task a line's `comm` names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Task {
    /// No task column (or one not read).
    #[default]
    Unknown,
    /// `<idle>` (pid 0): an interrupt or softirq on an idle CPU.
    Idle,
    /// `kworker/N:M` (or `kworker/N:MH`) with `N` the line's CPU: a worker of the CPU's
    /// bound pool, which runs per-CPU work such as `vmstat_update` (`mm_percpu_wq`).
    CpuWorker,
    /// `mm_percpu_wq`: the workqueue's rescuer thread, which runs its work when no worker
    /// can be created (memory pressure).
    Rescuer,
    /// Another kworker (unbound `kworker/uN:M`, or a bound one of another CPU).
    Kworker,
    /// Any other task.
    Other,
}

impl Task {
    /// The kinds in declaration order (the packed form's index).
    const ALL: [Task; 6] = [
        Task::Unknown,
        Task::Idle,
        Task::CpuWorker,
        Task::Rescuer,
        Task::Kworker,
        Task::Other,
    ];

    /// The index of this kind (its place in the declaration).
    pub fn index(self) -> u8 {
        self as u8
    }

    /// The kind of index `i` ([`Task::Unknown`] for none).
    pub fn from_index(i: u8) -> Task {
        Task::ALL
            .get(usize::from(i))
            .copied()
            .unwrap_or(Task::Unknown)
    }

    /// The kind of task `comm` on CPU `cpu`.
    pub fn of(comm: &[u8], cpu: Option<u32>) -> Task {
        let Some(rest) = comm.strip_prefix(b"kworker/") else {
            return match comm {
                b"<idle>" => Task::Idle,
                b"mm_percpu_wq" => Task::Rescuer,
                _ => Task::Other,
            };
        };
        let mut n: u64 = 0;
        let mut digits = 0;
        for &b in rest.iter().take(10) {
            if !b.is_ascii_digit() {
                break;
            }
            n = n * 10 + u64::from(b - b'0');
            digits += 1;
        }
        match (rest.get(digits), cpu) {
            (Some(b':'), Some(c)) if digits > 0 && n == u64::from(c) => Task::CpuWorker,
            _ => Task::Kworker,
        }
    }
}

/// The latency column: irqs off, in softirq or hardirq, and the preempt depth; packed in
/// a byte ([`Ctx::NONE`] where the line has no such column).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ctx(u8);

const PRESENT: u8 = 0x80;
const IRQS_OFF: u8 = 0x40;
const SOFTIRQ: u8 = 0x20;
const HARDIRQ: u8 = 0x10;

impl Ctx {
    /// No latency column.
    pub const NONE: Ctx = Ctx(0);

    /// The column from its packed byte ([`Ctx::bits`]).
    pub fn from_bits(b: u8) -> Ctx {
        Ctx(b)
    }

    /// The packed byte.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// A column read from `irqs_off`, `softirq`, `hardirq` and a preempt depth (0..=15).
    pub fn new(irqs_off: bool, softirq: bool, hardirq: bool, depth: u8) -> Ctx {
        let f = |b: bool, v: u8| if b { v } else { 0 };
        Ctx(PRESENT
            | f(irqs_off, IRQS_OFF)
            | f(softirq, SOFTIRQ)
            | f(hardirq, HARDIRQ)
            | depth & 15)
    }

    /// `token` read as the latency column (4 or 5 characters, each one the column allows),
    /// or [`Ctx::NONE`].
    pub fn parse(token: &[u8]) -> Ctx {
        let (a, b, c, d) = match *token {
            [a, b, c, d] | [a, b, c, d, _] => (a, b, c, d),
            _ => return Ctx::NONE,
        };
        let ok = matches!(a, b'd' | b'D' | b'b' | b'X' | b'.')
            && matches!(b, b'B' | b'N' | b'L' | b'b' | b'n' | b'l' | b'p' | b'.')
            && matches!(c, b'Z' | b'z' | b'H' | b'h' | b's' | b'.');
        let depth = match d {
            b'.' => 0,
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => return Ctx::NONE,
        };
        if !ok {
            return Ctx::NONE;
        }
        Ctx::new(
            matches!(a, b'd' | b'D'),
            matches!(c, b's' | b'H'),
            matches!(c, b'H' | b'h' | b'Z' | b'z'),
            depth,
        )
    }

    /// The line has the column.
    pub fn present(self) -> bool {
        self.0 & PRESENT != 0
    }

    /// Interrupts were off (`d`, `D`).
    pub fn irqs_off(self) -> bool {
        self.0 & IRQS_OFF != 0
    }

    /// In softirq (`s`, `H`).
    pub fn softirq(self) -> bool {
        self.0 & SOFTIRQ != 0
    }

    /// In hardirq or NMI (`h`, `H`, `z`, `Z`).
    pub fn hardirq(self) -> bool {
        self.0 & HARDIRQ != 0
    }

    /// The preempt depth's low digit, where the line has the column.
    pub fn preempt_depth(self) -> Option<u8> {
        self.present().then_some(self.0 & 15)
    }
}

/// Who ran an event: the task's kind and pid, and the latency column; eight bytes (a pid
/// and a word of bits), copied with every event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Who {
    pid: u32,
    /// [`Ctx::bits`] in the low byte, [`Task::index`] in bits 8..11, [`HAS_PID`].
    bits: u16,
}

/// [`Who`]'s bit: the line named a pid.
const HAS_PID: u16 = 1 << 11;

impl Who {
    /// Nothing known (a line without a task, or an event made here).
    pub const UNKNOWN: Who = Who { pid: 0, bits: 0 };

    /// A task of kind `task`, pid `pid`, with the latency column `ctx`.
    pub fn new(task: Task, pid: Option<u32>, ctx: Ctx) -> Who {
        let has = if pid.is_some() { HAS_PID } else { 0 };
        Who {
            pid: pid.unwrap_or(0),
            bits: u16::from(ctx.bits()) | u16::from(task.index()) << 8 | has,
        }
    }

    /// The task's kind.
    pub fn task(self) -> Task {
        Task::from_index(((self.bits >> 8) & 7) as u8)
    }

    /// Whether the task is the idle task (`<idle>`): [`Who::task`] is [`Task::Idle`], one
    /// test of the packed bits.
    #[inline(always)]
    pub fn is_idle(self) -> bool {
        (self.bits >> 8) & 7 == u16::from(Task::Idle.index())
    }

    /// The task's pid, where the line names one.
    pub fn pid(self) -> Option<u32> {
        (self.bits & HAS_PID != 0).then_some(self.pid)
    }

    /// The latency column.
    pub fn ctx(self) -> Ctx {
        Ctx::from_bits(self.bits as u8)
    }

    /// The packed form: the pid and the bits ([`Who::from_parts`] gives it back).
    pub fn to_parts(self) -> (u32, u16) {
        (self.pid, self.bits)
    }

    /// A [`Who`] from [`Who::to_parts`] (bits it never sets are dropped).
    pub fn from_parts(pid: u32, bits: u16) -> Who {
        Who {
            pid,
            bits: bits & (HAS_PID | 0x7ff),
        }
    }

    /// From ftrace's task token `comm-pid` (the pid after the last `-`), on CPU `cpu`, with
    /// the latency column `ctx`.
    pub fn of_token(token: &[u8], cpu: Option<u32>, ctx: Ctx) -> Who {
        // The pid: the digits after the last `-`, read from the end.
        let mut pid: u64 = 0;
        let mut scale: u64 = 1;
        let mut i = token.len();
        while i > 0 && token[i - 1].is_ascii_digit() && scale <= 1_000_000_000 {
            pid += u64::from(token[i - 1] - b'0') * scale;
            scale *= 10;
            i -= 1;
        }
        let digits = token.len() - i;
        match (i.checked_sub(1).map(|d| token[d]), u32::try_from(pid)) {
            (Some(b'-'), Ok(pid)) if digits > 0 && i > 1 => {
                Who::new(Task::of(&token[..i - 1], cpu), Some(pid), ctx)
            }
            // No pid: not a task token we know the shape of.
            _ => Who::new(Task::Unknown, None, ctx),
        }
    }

    /// From perf's separate `comm` and `pid` tokens.
    pub fn of_comm_pid(comm: &[u8], pid: &[u8], cpu: Option<u32>) -> Who {
        match parse_pid(pid) {
            Some(pid) => Who::new(Task::of(comm, cpu), Some(pid), Ctx::NONE),
            None => Who::UNKNOWN,
        }
    }

    /// The vmstat worker's own context: a kworker of the line's CPU (or the rescuer), in
    /// task context with interrupts off at preempt depth 2 (`decay_pcp_high` →
    /// `pcp_spin_lock_nopin` + `free_pcppages_bulk`'s `spin_lock_irqsave` of the zone lock;
    /// the free path pins first, depth 3 and up).
    pub fn is_worker_drain(self) -> bool {
        let ctx = self.ctx();
        matches!(self.task(), Task::CpuWorker | Task::Rescuer)
            && ctx.irqs_off()
            && !ctx.softirq()
            && !ctx.hardirq()
            && ctx.preempt_depth() == Some(2)
    }
}

/// A pid: 1 to 10 decimal digits that fit a `u32`.
fn parse_pid(s: &[u8]) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latency_column_reads_as_the_kernel_prints_it() {
        let c = Ctx::parse(b"d..2.");
        assert!(c.present() && c.irqs_off() && !c.softirq() && !c.hardirq());
        assert_eq!(c.preempt_depth(), Some(2));
        let c = Ctx::parse(b"dNs4.");
        assert!(c.irqs_off() && c.softirq() && !c.hardirq());
        assert_eq!(c.preempt_depth(), Some(4));
        let c = Ctx::parse(b"....");
        assert!(c.present() && !c.irqs_off());
        assert_eq!(c.preempt_depth(), Some(0));
        assert_eq!(Ctx::parse(b"D.Hb1").preempt_depth(), Some(11));
        assert!(Ctx::parse(b"D.Hb1").hardirq() && Ctx::parse(b"D.Hb1").softirq());
        // Not the column: a word, a number, too short or too long.
        for t in [&b"abc.."[..], b"12.5", b"d.", b"d..2..", b"d..g."] {
            assert_eq!(Ctx::parse(t), Ctx::NONE, "{:?}", std::str::from_utf8(t));
        }
        assert_eq!(Ctx::parse(b"d..2.").preempt_depth(), Some(2));
        assert_eq!(Ctx::NONE.preempt_depth(), None);
    }

    #[test]
    fn kworkers_of_the_lines_cpu_are_told_from_others() {
        let who = |t: &[u8], cpu| Who::of_token(t, Some(cpu), Ctx::parse(b"d..2."));
        assert_eq!(who(b"kworker/2:0-32", 2).task(), Task::CpuWorker);
        assert_eq!(who(b"kworker/2:0-32", 2).pid(), Some(32));
        assert_eq!(who(b"kworker/2:1H-210", 2).task(), Task::CpuWorker);
        assert_eq!(who(b"kworker/2:0-32", 1).task(), Task::Kworker);
        assert_eq!(who(b"kworker/u8:3-77", 1).task(), Task::Kworker);
        assert_eq!(who(b"mm_percpu_wq-9", 1).task(), Task::Rescuer);
        assert_eq!(who(b"<idle>-0", 3).task(), Task::Idle);
        assert_eq!(who(b"realtrue-611", 2).task(), Task::Other);
        assert_eq!(who(b"my-task-17", 2).task(), Task::Other);
        assert_eq!(who(b"nopid", 2).task(), Task::Unknown);
        assert!(who(b"kworker/2:0-32", 2).is_worker_drain());
        assert!(!who(b"kworker/2:0-32", 1).is_worker_drain());
        assert!(!Who::of_token(b"kworker/2:0-32", Some(2), Ctx::parse(b"d..3.")).is_worker_drain());
        assert!(!Who::of_token(b"kworker/2:0-32", Some(2), Ctx::parse(b"d.s2.")).is_worker_drain());
        assert!(!Who::of_token(b"kworker/2:0-32", Some(2), Ctx::NONE).is_worker_drain());
        assert_eq!(Who::of_comm_pid(b"cat", b"611", Some(0)).pid(), Some(611));
        for t in Task::ALL {
            assert_eq!(Task::from_index(t.index()), t);
        }
    }
}
