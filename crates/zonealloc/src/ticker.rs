//! [`Ticker`]: a background thread that drives [`Zone::tick`] (feature `std`), the way the
//! kernel's vmstat worker runs `decay_pcp_high` about once a second on every CPU.
//!
//! Deterministic users (simulations, the lab) call `tick` themselves instead.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::sync::{AtomicBool, Ordering};
use crate::Zone;

/// Calls [`Zone::tick`] every `period` until stopped or dropped.
#[derive(Debug)]
pub struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
}

impl Ticker {
    /// Starts ticking `zone` every `period` (the kernel's `sysctl_stat_interval` is 1 s).
    pub fn spawn(zone: Arc<Zone>, period: Duration) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("zonealloc-ticker".into())
            .spawn(move || {
                let mut ticks = 0u64;
                while !flag.load(Ordering::Acquire) {
                    std::thread::park_timeout(period);
                    if flag.load(Ordering::Acquire) {
                        break;
                    }
                    zone.tick();
                    ticks += 1;
                }
                ticks
            })
            .ok();
        Ticker { stop, thread }
    }

    /// Stops the thread and returns how many ticks it ran.
    pub fn stop(mut self) -> u64 {
        self.halt()
    }

    fn halt(&mut self) -> u64 {
        self.stop.store(true, Ordering::Release);
        match self.thread.take() {
            Some(t) => {
                t.thread().unpark();
                t.join().unwrap_or(0)
            }
            None => 0,
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CpuId, MigrateType, Order, PcpConfig, Pfn, ZoneConfig, ZoneType};

    #[test]
    fn ticker_decays_high_in_the_background_and_stops() {
        let cfg = ZoneConfig {
            pcp: PcpConfig {
                batch: Some(63),
                high_min: Some(1000),
                high_max: Some(62_500),
                cpus: 1,
                ..PcpConfig::default()
            },
            ..ZoneConfig::without_watermarks()
        };
        let z = Arc::new(Zone::new(ZoneType::Normal, Pfn(0), Pfn(1 << 16), cfg).unwrap());
        z.add_free_range(Pfn(0), Pfn(1 << 16)).unwrap();
        let o = Order::ZERO;
        let req = crate::AllocRequest::new(MigrateType::Movable).on_cpu(CpuId(0));
        let pages: std::vec::Vec<_> = (0..1500).map(|_| z.alloc_with(o, req).unwrap()).collect();
        for p in pages {
            z.free_on(CpuId(0), p, o).unwrap();
        }
        assert!(z.pcp_info(CpuId(0)).high > 1000);
        let t = Ticker::spawn(Arc::clone(&z), Duration::from_millis(1));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while z.pcp_info(CpuId(0)).high > 1000 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let ticks = t.stop();
        assert!(ticks > 0);
        assert_eq!(z.pcp_info(CpuId(0)).high, 1000);
        z.check().unwrap();
    }
}
