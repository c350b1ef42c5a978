//! `synchronize` frees what was retired before it. Alone in its own test binary (process) on
//! purpose: no other thread may be pinning and collecting meanwhile, so the only thing that can
//! free the retired versions here is `synchronize` itself.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use scalelock::rcu::{synchronize_timeout, Rcu};

struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn counted(live: &Arc<AtomicUsize>) -> Counted {
    live.fetch_add(1, Ordering::SeqCst);
    Counted(live.clone())
}

#[test]
fn synchronize_frees_versions_retired_before_it_by_any_thread() {
    let live = Arc::new(AtomicUsize::new(0));
    let cell = Arc::new(Rcu::new(counted(&live)));
    let (wrote_tx, wrote_rx) = mpsc::channel();
    let (exit_tx, exit_rx) = mpsc::channel::<()>();
    // The versions are retired by another thread that stays alive (a thread that exits hands its
    // leftovers to the collector anyway; a live one must not keep them to itself).
    let writer = {
        let (cell, live) = (cell.clone(), live.clone());
        thread::spawn(move || {
            for _ in 0..10 {
                cell.store(counted(&live));
            }
            wrote_tx.send(()).unwrap();
            let _ = exit_rx.recv_timeout(Duration::from_secs(30));
        })
    };
    wrote_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("writer did not finish");
    assert!(
        synchronize_timeout(Duration::from_secs(20)),
        "synchronize with no reader inside timed out"
    );
    // The destructors were started before the grace-period marker ran; let them finish.
    let start = Instant::now();
    while live.load(Ordering::SeqCst) != 1 {
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{} versions alive after synchronize, expected only the current one",
            live.load(Ordering::SeqCst)
        );
        thread::yield_now();
    }
    exit_tx.send(()).unwrap();
    writer.join().unwrap();
    drop(Arc::try_unwrap(cell).ok().expect("no other owner left"));
    assert_eq!(live.load(Ordering::SeqCst), 0);
}
