//! Whether an error means the database could not be reached: the same request may
//! succeed later, so HTTP answers it 503 with `Retry-After`, not 500.

use super::StoreError;
use crate::event_log::{EventLogError, GroupAppendError};

/// An error that can tell a database out of reach from one that answered.
pub trait Unreachable {
    /// Whether the database could not be reached: a connection lost or refused, no
    /// pooled connection to be had in time, or a server shutting down or full.
    fn database_unreachable(&self) -> bool;
}

impl Unreachable for sqlx::Error {
    fn database_unreachable(&self) -> bool {
        match self {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed => true,
            // SQLSTATE class 08 (connection exception), 53300 (too many connections),
            // 57P01-57P03 (shutting down, starting up).
            sqlx::Error::Database(e) => e
                .code()
                .is_some_and(|c| c.starts_with("08") || c == "53300" || c.starts_with("57P")),
            _ => false,
        }
    }
}

impl Unreachable for StoreError {
    fn database_unreachable(&self) -> bool {
        matches!(self, StoreError::Database(e) if e.database_unreachable())
    }
}

impl Unreachable for EventLogError {
    fn database_unreachable(&self) -> bool {
        let EventLogError::Store(e) = self;
        e.database_unreachable()
    }
}

impl Unreachable for GroupAppendError {
    fn database_unreachable(&self) -> bool {
        matches!(self, GroupAppendError::Store(e) if e.database_unreachable())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_connection_is_unreachable_and_a_refused_statement_is_not() {
        let lost = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "eof");
        assert!(StoreError::Database(sqlx::Error::Io(lost)).database_unreachable());
        assert!(StoreError::Database(sqlx::Error::PoolTimedOut).database_unreachable());
        assert!(!StoreError::Database(sqlx::Error::RowNotFound).database_unreachable());
        assert!(!StoreError::Empty.database_unreachable());
        assert!(!GroupAppendError::Stopped.database_unreachable());
    }
}
