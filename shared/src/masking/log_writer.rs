//! A log writer that masks every line before it reaches its destination, so that a secret
//! in a logged value (an error message, a field) never reaches a log file.

use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

/// Wraps a [`MakeWriter`]: each write (one formatted event) is masked with the rules in
/// force, then written whole.
#[derive(Debug, Clone)]
pub struct MaskingMakeWriter<M> {
    inner: M,
}

impl<M> MaskingMakeWriter<M> {
    /// Masks what `inner` would write.
    pub fn new(inner: M) -> Self {
        Self { inner }
    }
}

/// The writer for one event.
#[derive(Debug)]
pub struct MaskingWriter<W> {
    inner: W,
}

impl<W: Write> Write for MaskingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let masked = super::mask_secrets(&text);
        self.inner.write_all(masked.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for MaskingMakeWriter<M> {
    type Writer = MaskingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        MaskingWriter {
            inner: self.inner.make_writer(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn logged_secrets_are_masked_in_the_output() {
        let buffer = Buffer::default();
        let sink = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(MaskingMakeWriter::new(move || sink.clone()))
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(
                error = "connect postgres://app:Sup3rS3cret@db/app failed",
                "call failed for ren@example.com with card 4111 1111 1111 1111"
            );
        });
        let bytes = buffer.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let out = String::from_utf8_lossy(&bytes);
        assert!(out.contains("call failed"), "{out}");
        for secret in ["Sup3rS3cret", "ren@example.com", "4111 1111 1111 1111"] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
    }
}
