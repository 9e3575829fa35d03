//! Memtable keys: internal keys stored inline in the skiplist node when short (so comparisons
//! do not chase a pointer), and an unsized borrowed form for allocation-free lookups.

use crate::format::ikey;
use std::borrow::Borrow;
use std::cmp::Ordering;

/// Internal keys up to this many bytes live inside the node (a 16-byte user key + trailer fits).
const INLINE: usize = 38;

/// An owned internal key, inline when short.
#[derive(Clone)]
pub enum MemKey {
    /// `len` bytes in `buf`.
    Inline(u8, [u8; INLINE]),
    /// Longer keys.
    Heap(Box<[u8]>),
}

impl MemKey {
    /// Builds `user_key ‖ trailer` directly in place.
    pub fn from_parts(user_key: &[u8], trailer: u64) -> Self {
        let n = user_key.len() + ikey::TRAILER_LEN;
        if n <= INLINE {
            let mut buf = [0u8; INLINE];
            buf[..user_key.len()].copy_from_slice(user_key);
            buf[user_key.len()..n].copy_from_slice(&trailer.to_le_bytes());
            MemKey::Inline(n as u8, buf)
        } else {
            let mut v = Vec::with_capacity(n);
            v.extend_from_slice(user_key);
            v.extend_from_slice(&trailer.to_le_bytes());
            MemKey::Heap(v.into_boxed_slice())
        }
    }

    /// The encoded internal key.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match self {
            MemKey::Inline(n, buf) => &buf[..usize::from(*n)],
            MemKey::Heap(b) => b,
        }
    }
}

impl std::fmt::Debug for MemKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", ikey::InternalKey::from_encoded(self.bytes().to_vec()))
    }
}

/// A borrowed encoded internal key ordered as an internal key.
#[repr(transparent)]
#[derive(Debug)]
pub struct IKey([u8]);

impl IKey {
    /// Views `bytes` as an internal key.
    #[inline]
    pub fn new(bytes: &[u8]) -> &IKey {
        // SAFETY: IKey is repr(transparent) over [u8], so the pointer cast keeps layout and
        // metadata (length); the lifetime is carried over unchanged.
        unsafe { &*(bytes as *const [u8] as *const IKey) }
    }
}

impl Borrow<IKey> for MemKey {
    #[inline]
    fn borrow(&self) -> &IKey {
        IKey::new(self.bytes())
    }
}

impl PartialEq for IKey {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl Eq for IKey {}
impl PartialOrd for IKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for IKey {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        ikey::compare(&self.0, &o.0)
    }
}

impl PartialEq for MemKey {
    fn eq(&self, o: &Self) -> bool {
        self.bytes() == o.bytes()
    }
}
impl Eq for MemKey {}
impl PartialOrd for MemKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for MemKey {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        ikey::compare(self.bytes(), o.bytes())
    }
}
