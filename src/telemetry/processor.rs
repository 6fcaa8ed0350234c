//! A span processor whose queue is bounded and never waits: a finished span is handed to a
//! queue of at most `OTEL_BSP_MAX_QUEUE_SIZE` spans, or dropped and counted when the queue is
//! full (a collector that is down or slow never slows a request). One thread of its own sends
//! the queue in batches of `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, at least every
//! `OTEL_BSP_SCHEDULE_DELAY` milliseconds, on a runtime of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

/// What the processor did with the spans it was given, for `/metrics`.
#[derive(Debug, Default)]
pub struct Tally {
    pub exported: AtomicU64,
    /// Dropped because the queue was full.
    pub dropped: AtomicU64,
    /// In batches the collector did not take (an error or a timeout).
    pub failed: AtomicU64,
}

/// The queue's and the batches' sizes.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub queue: usize,
    pub batch: usize,
    pub delay: Duration,
}

/// `after` from now (far in the future rather than past the clock's range).
fn later(after: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(after)
        .unwrap_or_else(|| now.checked_add(Duration::from_secs(86_400)).unwrap_or(now))
}

enum Msg {
    Span(Box<SpanData>),
    Flush(SyncSender<()>),
    Shutdown(SyncSender<()>),
}

#[derive(Debug)]
pub struct Bounded {
    queue: SyncSender<Msg>,
    tally: &'static Tally,
    sender: Mutex<Option<JoinHandle<()>>>,
}

impl Bounded {
    pub fn start<E: SpanExporter + 'static>(
        exporter: E,
        sizes: Sizes,
        tally: &'static Tally,
    ) -> std::io::Result<Bounded> {
        let (queue, rx) = mpsc::sync_channel(sizes.queue.max(1));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let sender = std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || {
                Sender {
                    exporter,
                    runtime,
                    sizes,
                    tally,
                    batch: Vec::new(),
                    warned: None,
                }
                .run(rx)
            })?;
        Ok(Bounded {
            queue,
            tally,
            sender: Mutex::new(Some(sender)),
        })
    }

    /// Sends `msg` (a flush or the shutdown) and waits up to `timeout` for it to be done.
    fn ask(&self, msg: impl FnOnce(SyncSender<()>) -> Msg, timeout: Duration) -> OTelSdkResult {
        let deadline = later(timeout);
        let (done, wait) = mpsc::sync_channel(1);
        let mut msg = msg(done);
        // The queue may be full behind an export that hangs: wait for room only until the
        // deadline, never past it.
        loop {
            match self.queue.try_send(msg) {
                Ok(()) => break,
                Err(TrySendError::Disconnected(_)) => return Err(OTelSdkError::AlreadyShutdown),
                Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                    msg = back;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(TrySendError::Full(_)) => return Err(OTelSdkError::Timeout(timeout)),
            }
        }
        wait.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .map_err(|_| OTelSdkError::Timeout(timeout))
    }
}

impl SpanProcessor for Bounded {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if let Err(TrySendError::Full(_)) = self.queue.try_send(Msg::Span(Box::new(span))) {
            self.tally.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.ask(Msg::Flush, Duration::from_secs(10))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let asked = self.ask(Msg::Shutdown, timeout);
        if let Some(sender) = self.sender.lock().ok().and_then(|mut s| s.take()) {
            if asked.is_ok() {
                let _ = sender.join();
            }
        }
        asked
    }
}

/// The thread that sends the queue.
struct Sender<E> {
    exporter: E,
    runtime: tokio::runtime::Runtime,
    sizes: Sizes,
    tally: &'static Tally,
    batch: Vec<SpanData>,
    /// When a failed export was last logged: at most one line a minute.
    warned: Option<Instant>,
}

/// How often a collector that keeps failing is logged.
const WARN_EVERY: Duration = Duration::from_secs(60);

impl<E: SpanExporter> Sender<E> {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        let mut due = later(self.sizes.delay);
        loop {
            match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(Msg::Span(span)) => {
                    self.batch.push(*span);
                    if self.batch.len() >= self.sizes.batch {
                        self.export();
                        due = later(self.sizes.delay);
                    }
                }
                Ok(Msg::Flush(done)) => {
                    self.export();
                    let _ = done.send(());
                }
                Ok(Msg::Shutdown(done)) => {
                    self.export();
                    let _ = self.exporter.shutdown();
                    let _ = done.send(());
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.export();
                    due = later(self.sizes.delay);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.export();
                    return;
                }
            }
        }
    }

    fn export(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.batch);
        let n = batch.len() as u64;
        match self.runtime.block_on(self.exporter.export(batch)) {
            Ok(()) => self.tally.exported.fetch_add(n, Ordering::Relaxed),
            Err(e) => {
                if self.warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                    self.warned = Some(Instant::now());
                    tracing::warn!(
                        error = %e,
                        "trace export to the collector failed; its spans are lost (counted in \
                         a2a_otel_spans_total{{outcome=\"failed\"}}; logged at most once a minute)"
                    );
                }
                self.tally.failed.fetch_add(n, Ordering::Relaxed)
            }
        };
    }
}
