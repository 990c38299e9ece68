//! Work that must not wait: a caller on an async runtime's thread (the HTTP server) runs a
//! short read there instead of handing it to a blocking pool, on the condition that nothing in
//! it waits for a connection or for the writer (issue #20). Inside [`without_waiting`], a read
//! that would wait for a free reader connection, and any write, fail at once instead and mark
//! the attempt as abandoned; the caller then runs the same work where waiting is allowed.
//! Nothing was changed by an abandoned attempt: it could only have read.

use std::cell::Cell;

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting is allowed (the default).
    Off,
    /// Inside `without_waiting`; nothing has had to wait yet.
    On,
    /// Inside `without_waiting`; something would have waited.
    Abandoned,
}

thread_local! {
    static STATE: Cell<State> = const { Cell::new(State::Off) };
}

/// Runs `f` on this thread without waiting for a reader connection or the writer: `None` when
/// `f` would have waited (its result, an error, is dropped).
pub(crate) fn without_waiting<R>(f: impl FnOnce() -> R) -> Option<R> {
    /// Restores the state before the call, even when `f` panics.
    struct Restore(State);
    impl Drop for Restore {
        fn drop(&mut self) {
            STATE.with(|s| s.set(self.0));
        }
    }
    let restore = Restore(STATE.with(|s| s.replace(State::On)));
    let out = f();
    let abandoned = STATE.with(Cell::get) == State::Abandoned;
    drop(restore);
    (!abandoned).then_some(out)
}

/// Whether the current work must not wait.
pub(crate) fn active() -> bool {
    STATE.with(Cell::get) != State::Off
}

/// Marks the current attempt abandoned (see [`without_waiting`]); the error to return.
pub(crate) fn would_wait(what: &str) -> Error {
    STATE.with(|s| s.set(State::Abandoned));
    Error::storage(
        what.to_owned(),
        "it would have had to wait, and the caller asked not to",
    )
}

/// Refuses at once, inside [`without_waiting`], work that may wait (a write).
pub(crate) fn refuse_waiting(what: &str) -> Result<()> {
    if active() {
        return Err(would_wait(what));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_that_did_not_wait_gives_its_result() {
        assert_eq!(without_waiting(|| 7), Some(7));
    }

    #[test]
    fn work_that_would_have_waited_is_abandoned() {
        let out = without_waiting(|| refuse_waiting("writing"));
        assert!(out.is_none(), "{out:?}");
        assert!(!active(), "the thread may wait again afterwards");
    }

    #[test]
    fn outside_it_waiting_is_allowed() {
        assert!(refuse_waiting("writing").is_ok());
    }
}
