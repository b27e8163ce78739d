//! The bridge between the program's thread and the thread that called
//! [`ScriptEngine::run`](toolcat::code_mode::ScriptEngine::run), which answers for the host.
//!
//! Every function handed to QuickJS must be `'static`, and the host is a borrowed
//! `&dyn ScriptHost`: with `#![forbid(unsafe_code)]` the program's functions cannot hold it. So
//! the program runs on a thread of its own and reaches the host through two channels, one
//! request at a time; the calling thread serves them ([`serve`]) and, while the program runs,
//! asks [`ScriptHost::interrupted`] every [`POLL_INTERVAL`] and raises [`Shared::interrupted`],
//! which the interrupt handler reads.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolcat::code_mode::{ScriptHost, ScriptLimits};

/// How often the calling thread asks [`ScriptHost::interrupted`] while the program runs.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(2);

/// Console lines that may wait in the channel before `console.log` blocks the program.
pub(crate) const LOG_BACKLOG: usize = 64;

/// What the program's thread asks the calling thread.
pub(crate) enum Request {
    /// Run a tool (the reply comes on the reply channel).
    Call { tool: String, arguments: Value },
    /// One console line (no reply).
    Log(String),
}

/// The host's answer to a [`Request::Call`].
pub(crate) enum Reply {
    /// The tool's JSON result.
    Value(Value),
    /// A refused or failed call the program may catch: the host's text.
    Error(String),
    /// A fatal one: the program ends; the reason is [`ScriptHost::interrupted`]'s (or the
    /// host's text when it has none).
    Fatal(String),
}

/// Written by the calling thread, read by the program's interrupt handler.
#[derive(Default)]
pub(crate) struct Shared {
    interrupted: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl Shared {
    fn interrupt(&self, reason: String) {
        let mut slot = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(reason);
        }
        self.interrupted.store(true, Ordering::Release);
    }

    /// The reason the host gave, once it asked the program to stop.
    pub(crate) fn interrupted(&self) -> Option<String> {
        if !self.interrupted.load(Ordering::Acquire) {
            return None;
        }
        self.reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Serves the program's requests on the calling thread until the program's thread drops its
/// sender (it ended).
pub(crate) fn serve(
    host: &dyn ScriptHost,
    requests: &Receiver<Request>,
    replies: &SyncSender<Reply>,
    shared: &Shared,
) {
    let mut last_poll = Instant::now();
    loop {
        match requests.recv_timeout(POLL_INTERVAL) {
            Ok(Request::Call { tool, arguments }) => {
                let reply = match host.call(&tool, arguments) {
                    Ok(value) => Reply::Value(value),
                    Err(error) if error.fatal => {
                        let reason = host.interrupted().unwrap_or(error.message);
                        // Raised before the reply, so the program cannot run past it.
                        shared.interrupt(reason.clone());
                        Reply::Fatal(reason)
                    }
                    Err(error) => Reply::Error(error.message),
                };
                // The program's thread waits for this reply; it cannot be gone before it.
                let _ = replies.send(reply);
                // A call's own time is not the program's: poll afresh from here.
                last_poll = Instant::now();
                continue;
            }
            Ok(Request::Log(line)) => host.log(&line),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if last_poll.elapsed() >= POLL_INTERVAL {
            if let Some(reason) = host.interrupted() {
                shared.interrupt(reason);
            }
            last_poll = Instant::now();
        }
    }
}

/// Why the program is being stopped (the first reason wins).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// [`ScriptLimits::cpu_time`](toolcat::code_mode::ScriptLimits::cpu_time) is spent.
    TimeLimit,
    /// The host asked (its reason), or a call failed fatally.
    Interrupted(String),
    /// The calling thread stopped answering (it can only have panicked).
    HostGone,
}

/// The program's side of the bridge: the channels, the running-time clock and the stop reason.
pub(crate) struct Bridge {
    requests: SyncSender<Request>,
    replies: Receiver<Reply>,
    shared: Arc<Shared>,
    budget: Duration,
    console_bytes: usize,
    /// What the console lines handed to the host so far count for ([`json::console_cost`]).
    ///
    /// [`json::console_cost`]: crate::json::console_cost
    console_used: Cell<usize>,
    /// Running time before [`Bridge::since`].
    spent: Cell<Duration>,
    /// When the program last started running (`None` while a call is out).
    since: Cell<Option<Instant>>,
    stop: RefCell<Option<Stop>>,
}

impl Bridge {
    pub(crate) fn new(
        requests: SyncSender<Request>,
        replies: Receiver<Reply>,
        shared: Arc<Shared>,
        limits: &ScriptLimits,
    ) -> Bridge {
        Bridge {
            requests,
            replies,
            shared,
            budget: limits.cpu_time,
            console_bytes: limits.console_bytes,
            console_used: Cell::new(0),
            spent: Cell::new(Duration::ZERO),
            since: Cell::new(None),
            stop: RefCell::new(None),
        }
    }

    /// The longest console line worth handing over: the host keeps no more than this in all.
    pub(crate) fn console_bytes(&self) -> usize {
        self.console_bytes
    }

    /// Starts (or resumes) the running-time clock.
    pub(crate) fn resume(&self) {
        if self.since.get().is_none() {
            self.since.set(Some(Instant::now()));
        }
    }

    /// Stops the running-time clock (a call is out).
    fn pause(&self) {
        if let Some(since) = self.since.take() {
            self.spent.set(self.spent.get() + since.elapsed());
        }
    }

    fn running_time(&self) -> Duration {
        self.spent.get()
            + self
                .since
                .get()
                .map_or(Duration::ZERO, |since| since.elapsed())
    }

    fn set_stop(&self, stop: Stop) {
        if let Ok(mut slot) = self.stop.try_borrow_mut() {
            if slot.is_none() {
                *slot = Some(stop);
            }
        }
    }

    /// The reason the program is being stopped, if it is.
    pub(crate) fn stopped(&self) -> Option<Stop> {
        self.stop.try_borrow().ok().and_then(|slot| slot.clone())
    }

    /// Whether the program must stop now; records why. The interrupt handler, and the job loop
    /// between jobs, ask this.
    pub(crate) fn should_stop(&self) -> bool {
        if self.stopped().is_some() {
            return true;
        }
        if let Some(reason) = self.shared.interrupted() {
            self.set_stop(Stop::Interrupted(reason));
            return true;
        }
        if self.running_time() > self.budget {
            self.set_stop(Stop::TimeLimit);
            return true;
        }
        false
    }

    /// Runs one tool call on the host; the clock stands still meanwhile. A program being
    /// stopped makes no more calls.
    pub(crate) fn call(&self, tool: &str, arguments: Value) -> Reply {
        if self.should_stop() {
            return Reply::Fatal(String::new());
        }
        self.pause();
        let request = Request::Call {
            tool: tool.to_owned(),
            arguments,
        };
        let reply = match self.requests.send(request) {
            Ok(()) => self.replies.recv().ok(),
            Err(_) => None,
        };
        self.resume();
        match reply {
            Some(Reply::Fatal(reason)) => {
                self.set_stop(Stop::Interrupted(reason.clone()));
                Reply::Fatal(reason)
            }
            Some(reply) => reply,
            None => {
                self.set_stop(Stop::HostGone);
                Reply::Fatal(String::new())
            }
        }
    }

    /// Whether the console lines handed over have used up
    /// [`ScriptLimits::console_bytes`](toolcat::code_mode::ScriptLimits::console_bytes): no
    /// more go to the host.
    pub(crate) fn console_spent(&self) -> bool {
        self.console_used.get() > self.console_bytes
    }

    /// Hands one console line to the host (in order with the calls), unless the console limit
    /// is spent.
    pub(crate) fn log(&self, line: String) {
        if self.console_spent() {
            return;
        }
        let cost = crate::json::console_cost(&line);
        self.console_used
            .set(self.console_used.get().saturating_add(cost));
        if self.requests.send(Request::Log(line)).is_err() {
            self.set_stop(Stop::HostGone);
        }
    }
}
