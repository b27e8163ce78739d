//! Fork-join for one forward pass: the calling thread and helper threads share the steps of the
//! pass (column chunks of a matrix product, attention heads, row chunks of a LayerNorm).
//!
//! A pass runs ~70 such steps of 5–200 µs each, so waking pool threads for every step (a rayon
//! scope costs a futex wake-up, tens of µs when the worker sleeps) would eat much of the gain.
//! Instead [`with_team`] starts the helpers once per [`super::Encoder::encode`] call; between
//! steps they spin on one atomic word. Work is claimed index by index (compare-and-swap on that
//! word), so the calling thread never waits for a helper that has not started or was descheduled:
//! it runs every index nobody claimed, and waits only for indices a helper is running.

use std::cell::{Cell, UnsafeCell};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Bits of the state word for the next index to claim and for the index count; the generation
/// (which step is published) takes the bits above.
const INDEX_BITS: u32 = 20;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;

/// Set while a team with helpers runs: a second encoder call at the same time runs alone rather
/// than putting more spinning threads on the cores.
static TEAM_BUSY: AtomicBool = AtomicBool::new(false);

/// Spins (`pause`, tens of ns each) a waiting thread makes before it yields its core between
/// looks: a few tens of µs, longer than a step's usual wait, short enough that on a busy machine
/// a waiting thread soon lets a descheduled team mate (or another process) run.
const SPINS_BEFORE_YIELD: u32 = 1 << 11;

/// Waits until `ready()`: spins, then yields the core between looks.
fn wait_until(ready: impl Fn() -> bool) {
    let mut spins = 0u32;
    while !ready() {
        if spins < SPINS_BEFORE_YIELD {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// The shared word and the published step.
struct Slot {
    /// `generation << 40 | count << 20 | next`: the step published last, its index count and
    /// the next index nobody has claimed.
    state: AtomicU64,
    /// Indices of the current step finished (or abandoned after a panic).
    done: AtomicUsize,
    /// The current step's body. Written by the calling thread only while no index of the
    /// previous step is claimed but unfinished; read by a helper only between a successful claim
    /// and the `done` increment that follows it.
    job: UnsafeCell<Option<*const (dyn Fn(usize) + Sync)>>,
    /// Set when the pass ends: helpers return.
    quit: AtomicBool,
    /// Set when a step's body panicked on a helper.
    poisoned: AtomicBool,
}

// SAFETY: `job` is the only non-`Sync` field; the protocol on its docs (writes only while no
// helper may read it, reads ordered after the write by the release store / acquire CAS of
// `state`) keeps accesses from racing, and the closure it points to is `Sync`.
unsafe impl Sync for Slot {}

impl Slot {
    /// Claims the next index of the published step, if one is left.
    fn claim(&self) -> Option<usize> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let (count, next) = ((s >> INDEX_BITS) & INDEX_MASK, s & INDEX_MASK);
            if next >= count {
                return None;
            }
            match self
                .state
                .compare_exchange_weak(s, s + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(next as usize),
                Err(now) => s = now,
            }
        }
    }

    /// Runs claimed index `i` of the published step on a helper.
    fn run_claimed(&self, i: usize) {
        // SAFETY: a successful claim of an index of the published step happened after the
        // calling thread wrote `job` for that step (release store of `state`, acquire CAS), and
        // the calling thread neither rewrites `job` nor drops the closure before this index is
        // counted in `done`, below.
        let job = unsafe { (*self.job.get()).expect("a claimed step has a body") };
        // SAFETY: as above, the closure outlives this call.
        let job = unsafe { &*job };
        if catch_unwind(AssertUnwindSafe(|| job(i))).is_err() {
            self.poisoned.store(true, Ordering::Release);
        }
        self.done.fetch_add(1, Ordering::Release);
    }

    /// A helper: runs claimed indices until the pass ends.
    fn help(&self) {
        let mut idle = 0u32;
        while !self.quit.load(Ordering::Acquire) {
            if let Some(i) = self.claim() {
                self.run_claimed(i);
                idle = 0;
            } else if idle < SPINS_BEFORE_YIELD {
                idle += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// The threads of one forward pass (see the module docs); [`Team::run`] splits a step between
/// them.
pub(crate) struct Team<'t> {
    slot: Option<&'t Slot>,
    generation: Cell<u64>,
    /// The calling thread and its helpers.
    threads: usize,
}

impl Team<'_> {
    /// A team of the calling thread alone.
    pub fn alone() -> Team<'static> {
        Team {
            slot: None,
            generation: Cell::new(0),
            threads: 1,
        }
    }

    /// The threads that share a step: the calling thread and its helpers.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `f(0)`, …, `f(count - 1)`, each exactly once, spread over the team's threads, and
    /// returns when all have returned (their writes are then visible to the caller). Indices run
    /// in any order and at the same time, so `f(i)` for different `i` must not touch the same
    /// memory mutably.
    ///
    /// # Panics
    /// When `f` panics (on any thread), after every index claimed by a helper has finished.
    pub fn run<F: Fn(usize) + Sync>(&self, count: usize, f: F) {
        let Some(slot) = self.slot.filter(|_| count > 1) else {
            (0..count).for_each(f);
            return;
        };
        assert!(count as u64 <= INDEX_MASK, "{count} indices in one step");
        let body: &(dyn Fn(usize) + Sync) = &f;
        // SAFETY: the lifetime is erased only for the pointer stored in `job`, which helpers
        // dereference only for indices of this step, all of which have finished (`done` reaches
        // `count` below, also when `f` panics) before this function returns and `f` is dropped.
        let body: *const (dyn Fn(usize) + Sync + 'static) = unsafe { std::mem::transmute(body) };
        // SAFETY: every index of the previous step is finished (the previous `run` waited for
        // `done == count`) and all of them were claimed, so no helper reads `job` now.
        unsafe { *slot.job.get() = Some(body) };
        slot.done.store(0, Ordering::Relaxed);
        let generation = self.generation.get() + 1;
        self.generation.set(generation);
        slot.state.store(
            (generation << (2 * INDEX_BITS)) | ((count as u64) << INDEX_BITS),
            Ordering::Release,
        );
        let running = Cell::new(false);
        let mine = catch_unwind(AssertUnwindSafe(|| {
            while let Some(i) = slot.claim() {
                running.set(true);
                f(i);
                running.set(false);
                slot.done.fetch_add(1, Ordering::Release);
            }
        }));
        if mine.is_err() {
            // abandon the index that panicked and every unclaimed one, so the wait ends
            let abandoned =
                usize::from(running.get()) + std::iter::from_fn(|| slot.claim()).count();
            slot.done.fetch_add(abandoned, Ordering::Release);
        }
        wait_until(|| slot.done.load(Ordering::Acquire) >= count);
        if let Err(panic) = mine {
            resume_unwind(panic);
        }
        assert!(
            !slot.poisoned.load(Ordering::Acquire),
            "a step of the forward pass panicked on a helper thread"
        );
    }
}

/// Runs `f` with a team of `threads` threads: the calling thread and `threads - 1` helpers
/// started for the call and joined before it returns. The calling thread alone runs it when
/// `threads` is 1, when called from a rayon pool thread (a batch already spread over the pool),
/// when another team is running (one at a time, so concurrent calls do not put spinning threads
/// on busy cores), or when no helper thread can be started.
pub(crate) fn with_team<R>(threads: usize, f: impl FnOnce(&Team<'_>) -> R) -> R {
    if threads <= 1
        || rayon::current_thread_index().is_some()
        || TEAM_BUSY.swap(true, Ordering::Acquire)
    {
        return f(&Team::alone());
    }
    struct Release;
    impl Drop for Release {
        fn drop(&mut self) {
            TEAM_BUSY.store(false, Ordering::Release);
        }
    }
    let _release = Release;
    let slot = Slot {
        state: AtomicU64::new(0),
        done: AtomicUsize::new(0),
        job: UnsafeCell::new(None),
        quit: AtomicBool::new(false),
        poisoned: AtomicBool::new(false),
    };
    /// Ends the helpers' loops when the pass ends, also by a panic.
    struct Quit<'a>(&'a Slot);
    impl Drop for Quit<'_> {
        fn drop(&mut self) {
            self.0.quit.store(true, Ordering::Release);
        }
    }
    std::thread::scope(|s| {
        let quit = Quit(&slot);
        let mut helpers = 0;
        for _ in 1..threads {
            let started = std::thread::Builder::new()
                .name("toolcat-encoder".to_string())
                .spawn_scoped(s, || slot.help());
            if started.is_ok() {
                helpers += 1;
            }
        }
        let team = Team {
            slot: (helpers > 0).then_some(&slot),
            generation: Cell::new(0),
            threads: 1 + helpers,
        };
        let out = f(&team);
        drop(quit);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_runs_once_on_a_team() {
        let hits: Vec<AtomicUsize> = (0..1000).map(|_| AtomicUsize::new(0)).collect();
        with_team(2, |team| {
            for step in 0..50 {
                let count = step * 20 % 1000 + 1;
                team.run(count, |i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                });
            }
        });
        let want: Vec<usize> = (0..1000)
            .map(|i| (0..50).filter(|s| s * 20 % 1000 + 1 > i).count())
            .collect();
        let got: Vec<usize> = hits.iter().map(|h| h.load(Ordering::Relaxed)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_panicking_step_reaches_the_caller() {
        let r = catch_unwind(|| {
            with_team(2, |team| {
                team.run(64, |i| assert!(i != 40, "index 40"));
            })
        });
        assert!(r.is_err());
        // the team is released: the next call gets helpers again and works
        let sum = AtomicUsize::new(0);
        with_team(2, |team| {
            team.run(10, |i| {
                sum.fetch_add(i, Ordering::Relaxed);
            })
        });
        assert_eq!(sum.load(Ordering::Relaxed), 45);
    }
}
