//! The text forms of the CQL values Avro carries as strings, as the Python type layer writes them:
//! varint and decimal exact (a decimal as Java's BigDecimal.toString / Python's Decimal), uuids
//! hyphenated in lower case, inet addresses as Python's ipaddress prints them.

use std::fmt::Write;

/// The decimal digits of a big-endian two's complement integer, and whether it is negative.
fn digits(raw: &[u8]) -> (String, bool) {
    let negative = raw.first().is_some_and(|b| b & 0x80 != 0);
    // The magnitude, as 32-bit limbs, most significant first.
    let mut bytes: Vec<u8> = raw.to_vec();
    if negative {
        // two's complement: invert and add one
        for b in bytes.iter_mut() {
            *b = !*b;
        }
        for b in bytes.iter_mut().rev() {
            let (v, carry) = b.overflowing_add(1);
            *b = v;
            if !carry {
                break;
            }
        }
    }
    let pad = (4 - bytes.len() % 4) % 4;
    let mut limbs: Vec<u32> = std::iter::repeat_n(0u8, pad)
        .chain(bytes)
        .collect::<Vec<u8>>()
        .chunks(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut chunks = Vec::new(); // base 10^9, least significant first
    while limbs.iter().any(|&l| l != 0) {
        let mut remainder = 0u64;
        for limb in limbs.iter_mut() {
            let value = remainder << 32 | *limb as u64;
            *limb = (value / 1_000_000_000) as u32;
            remainder = value % 1_000_000_000;
        }
        chunks.push(remainder as u32);
    }
    let mut text = String::new();
    match chunks.split_last() {
        None => text.push('0'),
        Some((first, rest)) => {
            write!(text, "{first}").unwrap();
            for chunk in rest.iter().rev() {
                write!(text, "{chunk:09}").unwrap();
            }
        }
    }
    let negative = negative && text != "0";
    (text, negative)
}

pub fn varint(raw: &[u8]) -> String {
    let (text, negative) = digits(raw);
    if negative {
        format!("-{text}")
    } else {
        text
    }
}

/// int32 scale, then the unscaled varint (Python's Decimal string: plain while the exponent is at
/// most 0 and the number not too small, else scientific with `E±n`).
pub fn decimal(raw: &[u8]) -> String {
    let scale_bytes = &raw[..raw.len().min(4)];
    let scale = if scale_bytes.is_empty() {
        0
    } else {
        let mut v: i64 = if scale_bytes[0] & 0x80 != 0 { -1 } else { 0 };
        for &b in scale_bytes {
            v = v << 8 | b as i64;
        }
        v
    };
    let (coefficient, negative) = digits(&raw[raw.len().min(4)..]);
    let exponent = -scale;
    let length = coefficient.len() as i64;
    let left = exponent + length;
    let dot = if exponent <= 0 && left > -6 { left } else { 1 };
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if dot <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-dot) as usize));
        out.push_str(&coefficient);
    } else if dot >= length {
        out.push_str(&coefficient);
        out.extend(std::iter::repeat_n('0', (dot - length) as usize));
    } else {
        out.push_str(&coefficient[..dot as usize]);
        out.push('.');
        out.push_str(&coefficient[dot as usize..]);
    }
    if left != dot {
        write!(out, "E{:+}", left - dot).unwrap();
    }
    out
}

pub fn uuid(raw: &[u8; 16]) -> String {
    let mut out = String::with_capacity(36);
    for (i, b) in raw.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        write!(out, "{b:02x}").unwrap();
    }
    out
}

/// IPv4 dotted; IPv6 as hextets without leading zeros, the first longest run of two or more zero
/// hextets written `::`.
pub fn inet(raw: &[u8]) -> Option<String> {
    match raw.len() {
        4 => Some(format!("{}.{}.{}.{}", raw[0], raw[1], raw[2], raw[3])),
        16 => {
            let hextets: Vec<u16> = raw.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
            let (mut best, mut best_len, mut start, mut len) = (0, 0, 0, 0);
            for (i, &h) in hextets.iter().enumerate() {
                if h == 0 {
                    if len == 0 {
                        start = i;
                    }
                    len += 1;
                    if len > best_len {
                        (best, best_len) = (start, len);
                    }
                } else {
                    len = 0;
                }
            }
            let text = |hs: &[u16]| hs.iter().map(|h| format!("{h:x}")).collect::<Vec<_>>().join(":");
            if best_len > 1 {
                Some(format!("{}::{}", text(&hextets[..best]), text(&hextets[best + best_len..])))
            } else {
                Some(text(&hextets))
            }
        }
        _ => None,
    }
}
