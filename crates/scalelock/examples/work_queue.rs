//! A bounded work queue: producers push jobs, a pool of workers takes them, with a `Mutex` and
//! two `Condvar`s (not full, not empty). Closing the queue wakes every worker so they can exit.
//!
//! Run: `cargo run -p scalelock --example work_queue`

use scalelock::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::Arc;

struct State<T> {
    jobs: VecDeque<T>,
    closed: bool,
}

/// A queue of at most `capacity` jobs.
struct WorkQueue<T> {
    state: Mutex<State<T>>,
    not_empty: Condvar,
    not_full: Condvar,
    capacity: usize,
}

impl<T> WorkQueue<T> {
    fn new(capacity: usize) -> Self {
        WorkQueue {
            state: Mutex::with_name(
                "work_queue",
                State {
                    jobs: VecDeque::new(),
                    closed: false,
                },
            ),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            capacity,
        }
    }

    /// Waits for room, then queues `job`.
    fn push(&self, job: T) {
        let mut s = self.state.lock();
        self.not_full
            .wait_while(&mut s, |s| s.jobs.len() >= self.capacity);
        s.jobs.push_back(job);
        drop(s);
        self.not_empty.notify_one();
    }

    /// The next job, or `None` once the queue is closed and drained.
    fn pop(&self) -> Option<T> {
        let mut s = self.state.lock();
        self.not_empty
            .wait_while(&mut s, |s| s.jobs.is_empty() && !s.closed);
        let job = s.jobs.pop_front();
        drop(s);
        if job.is_some() {
            self.not_full.notify_one();
        }
        job
    }

    /// No more jobs: wakes every waiting worker. Returns how many were waiting.
    fn close(&self) -> usize {
        self.state.lock().closed = true;
        self.not_empty.notify_all()
    }
}

fn main() {
    let queue = Arc::new(WorkQueue::new(8));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let q = Arc::clone(&queue);
            std::thread::spawn(move || {
                let mut sum = 0u64;
                while let Some(n) = q.pop() {
                    sum += n;
                }
                sum
            })
        })
        .collect();
    for n in 1..=1000u64 {
        queue.push(n);
    }
    let woken = queue.close();
    let total: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(total, 1000 * 1001 / 2);
    println!("4 workers summed {total}; closing woke {woken} idle worker(s)");
}
