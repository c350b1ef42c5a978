//! Points that each run in a process of their own (see [`crate::bench::child`]): the parent
//! starts the child with what the point adds to its environment, and the child measures the point
//! in-process.

use super::{Point, Selection};
use crate::bench::child;
use crate::bench::harness::{Measurement, Trial};
use std::sync::Arc;

/// What a point adds to its child's environment (variable, value); an error fails the point.
pub type ChildEnv = Result<Vec<(&'static str, String)>, String>;

/// One point per selected lock of `locks` and per selected thread count, each run in a child
/// process of `workload`: the parent adds `env(lock)` to the child's environment, and the child
/// measures with `here(lock, trial)`. Each point's time estimate counts [`child::START`]; `each`
/// sets the workload's own parameters on every point (and may replace that estimate).
///
/// ```ignore
/// child_points("large-alloc", sel, &ALLOCATORS, |name| Ok(vec![(ENV, name.into())]), run_here, |p| p)
/// ```
pub fn child_points(
    workload: &'static str,
    sel: &Selection,
    locks: &[&'static str],
    env: impl Fn(&str) -> ChildEnv + Send + Sync + 'static,
    here: fn(&str, &Trial) -> Result<Measurement, String>,
    each: impl Fn(Point) -> Point,
) -> Vec<Point> {
    let env = Arc::new(env);
    let selected = locks.iter().filter(|l| sel.wants(l));
    selected
        .flat_map(|&lock| sel.threads.iter().map(move |&threads| (lock, threads)))
        .map(|(lock, threads)| {
            let env = Arc::clone(&env);
            let point = Point::new(lock, threads, move |t| {
                if child::in_child() {
                    return here(lock, t);
                }
                let vars = env(lock)?;
                let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
                child::run_point(workload, lock, None, None, t, &vars)
            });
            each(point.overhead(child::START).own_process())
        })
        .collect()
}
