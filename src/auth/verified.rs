//! Tokens this process has verified, kept until they expire.
//!
//! Checking a token's signature and claims is the largest cost of a request the mailbox answers
//! from memory or with one batched statement (BENCHMARKS.md). An agent sends the same token with
//! every request until it expires, and the key that verified it never changes while the process
//! runs, so a token verified once stays valid until its `exp`. Only tokens that passed every check
//! are kept, under their exact text, and a kept token is refused again from its `exp` on (the same
//! leeway as the full check), when it is dropped and checked in full. The set is bounded: when it
//! is full it is emptied, and the next requests check their tokens in full again.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Caller;

/// At most this many tokens are kept.
const CAPACITY: usize = 4_096;

struct Kept {
    caller: Caller,
    exp: u64,
}

#[derive(Default)]
pub(super) struct Verified {
    tokens: Mutex<HashMap<Box<str>, Kept>>,
}

impl Verified {
    /// The caller of `token` and its `exp`, if it was verified and is still valid at `now`
    /// (epoch seconds) with `leeway` seconds of grace.
    pub(super) fn get(&self, token: &str, now: u64, leeway: u64) -> Option<(Caller, u64)> {
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        let kept = tokens.get(token)?;
        if kept.exp.saturating_add(leeway) < now {
            tokens.remove(token);
            return None;
        }
        Some((kept.caller.clone(), kept.exp))
    }

    /// Keeps a token that passed every check.
    pub(super) fn keep(&self, token: &str, caller: &Caller, exp: u64) {
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if tokens.len() >= CAPACITY {
            tokens.clear();
        }
        let kept = Kept {
            caller: caller.clone(),
            exp,
        };
        tokens.insert(token.into(), kept);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.tokens.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::AgentId;

    fn caller(sub: &str) -> Caller {
        Caller {
            sub: AgentId::parse(sub).unwrap(),
            caps: Vec::new(),
        }
    }

    #[test]
    fn a_kept_token_is_answered_until_its_expiry_and_its_leeway_then_dropped() {
        let v = Verified::default();
        v.keep("t.o.k", &caller("alice"), 1_000);
        let (c, exp) = v.get("t.o.k", 1_000, 30).unwrap();
        assert_eq!((c.sub.as_str(), exp), ("alice", 1_000));
        assert!(v.get("t.o.k", 1_030, 30).is_some());
        assert!(v.get("t.o.k", 1_031, 30).is_none());
        assert_eq!(v.len(), 0, "an expired token is dropped");
        assert!(v.get("t.o.k", 1_000, 30).is_none());
    }

    #[test]
    fn only_the_exact_text_is_answered() {
        let v = Verified::default();
        v.keep("t.o.k", &caller("alice"), 1_000);
        for other in ["t.o.K", "t.o.k ", "t.o.", ""] {
            assert!(v.get(other, 0, 30).is_none(), "{other:?}");
        }
    }

    #[test]
    fn a_full_set_is_emptied_before_the_next_token() {
        let v = Verified::default();
        for i in 0..CAPACITY {
            v.keep(&format!("t{i}"), &caller("alice"), 1_000);
        }
        assert_eq!(v.len(), CAPACITY);
        v.keep("newest", &caller("bob"), 1_000);
        assert_eq!(v.len(), 1);
        assert_eq!(v.get("newest", 0, 30).unwrap().0.sub.as_str(), "bob");
    }
}
