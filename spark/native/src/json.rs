//! JSON text exactly as Python's `json` module writes it with `ensure_ascii=False`, so the native
//! decoder's text equals the reference decoder's byte for byte: floats as `repr` gives them (shortest
//! round trip, `1e+16`, `1.5e-05`, `0.0`, `NaN`, `Infinity`), only `"`, `\` and control characters
//! escaped (`ascii_string`: as `ensure_ascii=True` escapes, for `json_writer`).

use std::fmt::Write;

#[derive(Clone, Copy)]
pub struct Style {
    pub item: &'static str,
    pub key: &'static str,
}

/// `json.dumps` defaults: `", "` and `": "`.
pub const SPACED: Style = Style { item: ", ", key: ": " };
/// `separators=(",", ":")`.
pub const COMPACT: Style = Style { item: ",", key: ":" };

pub fn string(out: &mut String, s: &str) {
    escaped(out, s, false);
}

/// A string as `ensure_ascii=True` writes it: every character past `~` escaped too, as `\uXXXX` (a pair of
/// surrogates past U+FFFF).
pub fn ascii_string(out: &mut String, s: &str) {
    escaped(out, s, true);
}

fn escaped(out: &mut String, s: &str, ascii: bool) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            c if (c as u32) < 0x20 || (ascii && c > '~') => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escaped.is_empty() {
            for unit in c.encode_utf16(&mut [0u16; 2]) {
                let _ = write!(out, "\\u{:04x}", unit);
            }
        } else {
            out.push_str(escaped);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

pub fn int(out: &mut String, v: i64) {
    let _ = write!(out, "{v}");
}

/// Python's `float.__repr__`, as `json` writes floats.
pub fn float(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    let (digits, exponent) = shortest_digits(x.abs());
    if x < 0.0 {
        out.push('-');
    }
    if !(-4..16).contains(&exponent) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs());
    } else if exponent < 0 {
        out.push_str("0.");
        for _ in 0..(-exponent - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let whole = exponent as usize + 1;
        if digits.len() > whole {
            out.push_str(&digits[..whole]);
            out.push('.');
            out.push_str(&digits[whole..]);
        } else {
            out.push_str(&digits);
            for _ in digits.len()..whole {
                out.push('0');
            }
            out.push_str(".0");
        }
    }
}

/// The digits and decimal exponent of `x` (positive, finite) as Python's repr chooses them: the
/// shortest that read back as `x` (Rust's `{:e}` gives those); of two such, equally near `x`, the
/// one ending in an even digit, where Rust takes the upper (562949953421312.25: `…312.2`, not `.3`).
fn shortest_digits(x: f64) -> (String, i32) {
    let (digits, exponent) = split_scientific(&format!("{x:e}"));
    // A tie is an exact value one digit longer than the shortest, ending in 5 (a double's exact
    // decimal value has at most 767 significant digits).
    let (exact, exact_exponent) = split_scientific(&format!("{x:.767e}"));
    let exact = exact.trim_end_matches('0');
    if exact_exponent != exponent || exact.len() != digits.len() + 1 || !exact.ends_with('5') {
        return (digits, exponent);
    }
    let low = &exact[..digits.len()];
    let even = if low.as_bytes()[low.len() - 1] % 2 == 0 { Some(low.to_string()) } else { next_up(low) };
    match even {
        Some(even) if even != digits && reads_back(&even, exponent, x) => (even, exponent),
        _ => (digits, exponent),
    }
}

fn split_scientific(text: &str) -> (String, i32) {
    let (mantissa, exponent) = text.split_once('e').unwrap();
    (mantissa.chars().filter(|c| *c != '.').collect(), exponent.parse().unwrap())
}

/// The digit string one unit higher in its last place; None when that adds a digit (…999).
fn next_up(digits: &str) -> Option<String> {
    let mut bytes = digits.as_bytes().to_vec();
    for b in bytes.iter_mut().rev() {
        if *b == b'9' {
            *b = b'0';
        } else {
            *b += 1;
            return String::from_utf8(bytes).ok();
        }
    }
    None
}

fn reads_back(digits: &str, exponent: i32, x: f64) -> bool {
    format!("{digits}e{}", exponent - (digits.len() as i32 - 1)).parse::<f64>() == Ok(x)
}

pub fn hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
}

#[cfg(test)]
mod tests {
    use super::{ascii_string, float, string};

    fn repr(x: f64) -> String {
        let mut out = String::new();
        float(&mut out, x);
        out
    }

    #[test]
    fn floats_read_as_python_s_repr() {
        // Each right-hand side is what `json.dumps` writes in CPython 3.11.
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1.5e-5, "1.5e-05"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789.125, "123456789.125"),
            (0.0001, "0.0001"),
            (-2.5e-7, "-2.5e-07"),
            (562949953421312.25, "562949953421312.2"),
            (f64::INFINITY, "Infinity"),
            (f64::NAN, "NaN"),
        ];
        for (x, expected) in cases {
            assert_eq!(repr(x), expected, "{x:e}");
        }
    }

    #[test]
    fn strings_are_escaped_as_ensure_ascii_escapes_them() {
        // json.dumps's output for the same texts.
        let written = |text: &str| {
            let mut out = String::new();
            ascii_string(&mut out, text);
            out
        };
        assert_eq!(written("plain ~"), r#""plain ~""#);
        assert_eq!(written("a\"b\\c/"), r#""a\"b\\c/""#);
        assert_eq!(written("\n\r\t\u{8}\u{c}\u{1}\u{7f}"), r#""\n\r\t\b\f\u0001\u007f""#);
        assert_eq!(written("héllo €"), r#""h\u00e9llo \u20ac""#);
        assert_eq!(written("𝄞"), r#""\ud834\udd1e""#);
    }

    #[test]
    fn only_quotes_backslashes_and_controls_are_escaped() {
        let mut out = String::new();
        string(&mut out, "a\"b\\c\nd\u{1}é€");
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\u0001é€\"");
    }
}
