//! Capturing this test binary's log output (one global subscriber per binary).

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use tracing_subscriber::fmt::MakeWriter;

/// A log writer appending to a shared buffer.
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }

    /// How many times `needle` was written so far.
    pub fn count(&self, needle: &str) -> usize {
        self.text().matches(needle).count()
    }

    /// Waits until `needle` was written more than `before` times.
    pub async fn wait_for_more(&self, needle: &str, before: usize) {
        ghost_testkit::testing::eventually(std::time::Duration::from_secs(30), needle, || async {
            (self.count(needle) > before).then_some(())
        })
        .await;
    }
}

impl Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Every JSON log line (INFO and above) of this test binary, from the first call on: the
/// binary's global subscriber writes into it.
pub fn capture() -> &'static LogCapture {
    static CAP: OnceLock<LogCapture> = OnceLock::new();
    CAP.get_or_init(|| {
        let cap = LogCapture::default();
        let sub = tracing_subscriber::fmt()
            .json()
            .with_writer(cap.clone())
            .with_max_level(tracing::Level::INFO)
            .finish();
        let _ = tracing::subscriber::set_global_default(sub);
        cap
    })
}
