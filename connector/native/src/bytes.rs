//! Big-endian fixed-width reads that report a short buffer instead of panicking.

#[inline]
pub fn be_u32(buf: &[u8], p: usize) -> Option<u32> {
    buf.get(p..p + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[inline]
pub fn be_i32(buf: &[u8], p: usize) -> Option<i32> {
    be_u32(buf, p).map(|v| v as i32)
}

#[inline]
pub fn be_u16(buf: &[u8], p: usize) -> Option<u16> {
    buf.get(p..p + 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

#[inline]
pub fn be_i64(buf: &[u8], p: usize) -> Option<i64> {
    buf.get(p..p + 8).map(|b| i64::from_be_bytes(b.try_into().expect("8 bytes")))
}
