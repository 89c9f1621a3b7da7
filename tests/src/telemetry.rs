//! What the code logged and the metrics it recorded, captured for assertions.

use std::sync::{Arc, Mutex};

use serde_json::Value;

/// Captured log lines, for tests that assert an event was logged.
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut g) = self.0.lock() {
            g.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;
    fn make_writer(&'a self) -> LogCapture {
        self.clone()
    }
}

/// Captures JSON log lines for the current thread until the guard drops (use with a
/// current-thread runtime).
pub fn capture_logs() -> (LogCapture, tracing::subscriber::DefaultGuard) {
    let capture = LogCapture::default();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer(capture.clone())
        .finish();
    (capture, tracing::subscriber::set_default(subscriber))
}

/// The EMF metric documents this process recorded since the last call (the recorder is
/// installed on first use, as the functions install it in Lambda, under `function`). The
/// recorder is process-wide: a test file that reads it runs one test that records metrics.
pub fn flushed_metrics(function: &str) -> Vec<Value> {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    INSTALLED.get_or_init(|| {
        atelier_shared::adapters::metrics::install(function).unwrap_or_else(|e| panic!("{e}"));
    });
    let mut out = Vec::new();
    atelier_shared::adapters::metrics::flush_to(&mut out).unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8_lossy(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}
