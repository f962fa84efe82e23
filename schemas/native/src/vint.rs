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

#[cfg(test)]
mod tests {
    use super::read_uvint;

    #[test]
    fn one_byte_values_stand_for_themselves() {
        assert_eq!(read_uvint(&[0x00], 0), Some((0, 1)));
        assert_eq!(read_uvint(&[0x7f, 0xff], 0), Some((127, 1)));
    }

    #[test]
    fn leading_ones_count_the_bytes_that_follow() {
        // VIntCoding.writeUnsignedVInt(128) and (2^56), as Cassandra writes them.
        assert_eq!(read_uvint(&[0x80, 0x80], 0), Some((128, 2)));
        assert_eq!(read_uvint(&[0xc0, 0x40, 0x00], 0), Some((0x4000, 3)));
        let nine = [0xff, 0x01, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(read_uvint(&nine, 0), Some((1 << 56, 9)));
    }

    #[test]
    fn a_buffer_that_ends_inside_the_value_gives_none() {
        assert_eq!(read_uvint(&[0xc0, 0x40], 0), None);
        assert_eq!(read_uvint(&[], 0), None);
    }
}
