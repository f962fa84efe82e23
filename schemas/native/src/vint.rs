//! Cassandra's variable-length integers (VIntCoding): the count of leading 1-bits of the first
//! byte is the count of bytes that follow; the first byte's other bits and those bytes form the
//! value, big-endian.

/// The unsigned vint at `p`, and the position after it; None if the buffer ends inside it.
#[inline]
pub fn read_uvint(buf: &[u8], p: usize) -> Option<(u64, usize)> {
    let first = *buf.get(p)?;
    if first < 0x80 {
        return Some((first as u64, p + 1));
    }
    let extra = first.leading_ones() as usize;
    let end = p + 1 + extra;
    let rest = buf.get(p + 1..end)?;
    let mut value = if extra < 8 { (first & (0xFF >> extra)) as u64 } else { 0 };
    for &b in rest {
        value = value << 8 | b as u64;
    }
    Some((value, end))
}
