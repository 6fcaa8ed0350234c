//! Tokens this process has verified, kept until they expire, in memory taken once.
//!
//! Checking a token's signature and claims is the largest cost of a request the mailbox answers
//! with one batched statement (BENCHMARKS.md). An agent sends the same token with every request,
//! and the key that verified it never changes while the process runs, so a token that passed
//! every check stays valid until its `exp`. Only such tokens are kept, under their exact text,
//! and a kept token is refused again from its `exp` on (with the full check's leeway).
//!
//! Everything kept lives in two blocks allocated when the verifier is made and never grown: a
//! table of slots and an arena holding each token's text and its caller, encoded. Entries made
//! during a burst of parked requests would otherwise be scattered among the burst's own heap
//! pages and keep them from being handed back when it ends (`trim.rs`). When either block is
//! full, the set is emptied and filled again by the next requests' full checks.

use std::collections::hash_map::RandomState;
use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::sync::Mutex;

use super::capabilities::{Caller, CapEntry};
use crate::domain::AgentId;

/// Slots in the table (a power of two); the set is emptied when three quarters are taken.
const SLOTS: usize = 4_096;
/// Slots looked at for a token before it is checked in full (or not kept).
const PROBES: usize = 8;
/// Bytes for the kept tokens' texts and callers.
const ARENA: usize = 1 << 20;
/// A token and its caller taking more than this are not kept.
const LARGEST: usize = 8 << 10;

/// A kept token: its hash, its `exp`, and where its text and caller are in the arena.
#[derive(Clone, Copy, Default)]
struct Slot {
    hash: u64,
    exp: u64,
    at: u32,
    token: u32,
    caller: u32,
}

impl Slot {
    fn taken(&self) -> bool {
        self.token > 0
    }
}

struct TokenTable {
    slots: Box<[Slot]>,
    arena: Box<[u8]>,
    used: usize,
    kept: usize,
    /// The key generation the kept tokens were verified under (`Keys::generation`).
    generation: u64,
}

pub(super) struct Verified {
    hasher: RandomState,
    table: Mutex<TokenTable>,
}

impl Default for Verified {
    fn default() -> Self {
        Verified {
            hasher: RandomState::new(),
            table: Mutex::new(TokenTable {
                slots: vec![Slot::default(); SLOTS].into_boxed_slice(),
                arena: vec![0; ARENA].into_boxed_slice(),
                used: 0,
                kept: 0,
                generation: 0,
            }),
        }
    }
}

impl Verified {
    /// The caller of `token` and its `exp`, if it was kept under the keys of `generation` and
    /// is still valid at `now` (epoch seconds) with `leeway` seconds of grace. A new generation
    /// (a key was withdrawn) empties the set.
    pub(super) fn get(
        &self,
        token: &str,
        now: u64,
        leeway: u64,
        generation: u64,
    ) -> Option<(Caller, u64)> {
        let hash = self.hasher.hash_one(token.as_bytes());
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        table.enter(generation);
        let slot = table.find(hash, token.as_bytes()).ok()?;
        if slot.exp.saturating_add(leeway) < now {
            return None;
        }
        let (_, caller) = table.entry(&slot)?;
        let mut caller = decode(caller)?;
        caller.exp = Some(slot.exp);
        Some((caller, slot.exp))
    }

    /// Keeps a token that passed every check with the keys of `generation`.
    pub(super) fn keep(&self, token: &str, caller: &Caller, exp: u64, generation: u64) {
        let mut encoded = Vec::with_capacity(256);
        encode(caller, &mut encoded);
        if token.is_empty() || token.len().saturating_add(encoded.len()) > LARGEST {
            return;
        }
        let hash = self.hasher.hash_one(token.as_bytes());
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if table.generation == generation {
            table.keep(hash, token.as_bytes(), &encoded, exp);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.lock().unwrap().kept
    }
}

impl TokenTable {
    /// Empties the table when the keys changed since its tokens were kept.
    fn enter(&mut self, generation: u64) {
        if self.generation != generation {
            self.empty();
            self.generation = generation;
        }
    }

    fn empty(&mut self) {
        self.slots.fill(Slot::default());
        self.used = 0;
        self.kept = 0;
    }

    /// The slot keeping `token`, or else the index of the first free slot it may take (if any).
    fn find(&self, hash: u64, token: &[u8]) -> Result<Slot, Option<usize>> {
        for probe in 0..PROBES {
            let i = (hash as usize).wrapping_add(probe) & (SLOTS - 1);
            let Some(&slot) = self.slots.get(i) else {
                break; // never: the mask keeps i below SLOTS
            };
            if !slot.taken() {
                return Err(Some(i));
            }
            if slot.hash == hash && self.entry(&slot).is_some_and(|(text, _)| text == token) {
                return Ok(slot);
            }
        }
        Err(None)
    }

    /// A kept token's text and its caller, encoded.
    fn entry(&self, slot: &Slot) -> Option<(&[u8], &[u8])> {
        let (text, rest) = self
            .arena
            .get(slot.at as usize..)?
            .split_at_checked(slot.token as usize)?;
        Some((text, rest.get(..slot.caller as usize)?))
    }

    /// Keeps a token (not empty) and its caller, encoded, of at most [`LARGEST`] bytes together.
    fn keep(&mut self, hash: u64, token: &[u8], caller: &[u8], exp: u64) -> Option<()> {
        let size = token.len().checked_add(caller.len())?;
        if self.used.saturating_add(size) > ARENA || self.kept >= SLOTS / 4 * 3 {
            self.empty();
        }
        // `None` if kept already, or if every slot it may take is taken.
        let free = self.find(hash, token).err()??;
        let at = self.used;
        let end = at.checked_add(size)?;
        let slot = self.slots.get_mut(free)?;
        let (text, encoded) = self
            .arena
            .get_mut(at..end)?
            .split_at_mut_checked(token.len())?;
        text.copy_from_slice(token);
        encoded.copy_from_slice(caller);
        *slot = Slot {
            hash,
            exp,
            at: at as u32,
            token: token.len() as u32,
            caller: caller.len() as u32,
        };
        self.used = end;
        self.kept = self.kept.saturating_add(1);
        Some(())
    }
}

// A caller, encoded: its subject, then its grants, each a tag (0 an action, 1 an action with no
// scope, 2 an action and its scope's pairs). Strings and counts are prefixed by a u32 length.

fn encode(caller: &Caller, out: &mut Vec<u8>) {
    put(out, caller.sub.as_str().as_bytes());
    out.extend_from_slice(&(caller.caps.len() as u32).to_le_bytes());
    for cap in &caller.caps {
        match cap {
            CapEntry::Action(action) => {
                out.push(0);
                put(out, action.as_bytes());
            }
            CapEntry::Scoped { action, scope } => {
                out.push(if scope.is_some() { 2 } else { 1 });
                put(out, action.as_bytes());
                if let Some(scope) = scope {
                    out.extend_from_slice(&(scope.len() as u32).to_le_bytes());
                    for (k, v) in scope {
                        put(out, k.as_bytes());
                        put(out, v.as_bytes());
                    }
                }
            }
        }
    }
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn decode(mut bytes: &[u8]) -> Option<Caller> {
    let input = &mut bytes;
    let sub = AgentId::parse(text(input)?).ok()?;
    let n = count(input)?;
    let mut caps = Vec::with_capacity(n);
    for _ in 0..n {
        let (&tag, rest) = input.split_first()?;
        *input = rest;
        let action = text(input)?.to_owned();
        caps.push(match tag {
            0 => CapEntry::Action(action),
            1 => CapEntry::Scoped {
                action,
                scope: None,
            },
            _ => {
                let mut scope = BTreeMap::new();
                for _ in 0..count(input)? {
                    let k = text(input)?.to_owned();
                    scope.insert(k, text(input)?.to_owned());
                }
                CapEntry::Scoped {
                    action,
                    scope: Some(scope),
                }
            }
        });
    }
    Some(Caller {
        sub,
        caps,
        exp: None,
    })
}

fn count(input: &mut &[u8]) -> Option<usize> {
    let (n, rest) = input.split_first_chunk::<4>()?;
    *input = rest;
    Some(u32::from_le_bytes(*n) as usize)
}

fn text<'a>(input: &mut &'a [u8]) -> Option<&'a str> {
    let n = count(input)?;
    let (s, rest) = input.split_at_checked(n)?;
    *input = rest;
    std::str::from_utf8(s).ok()
}

#[cfg(test)]
mod tests;
