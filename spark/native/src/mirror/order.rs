//! Cassandra's order of a collection's elements, for the types a native merge reads
//! (`spark.mirror.order` is the reference, for every type): text by code point (UTF-8's byte order),
//! integers as numbers, a list's timeuuids by time and then their last eight bytes signed
//! (`TimeUUIDType`). Elements of any other type are ordered by the reference.

use super::value::Value;

/// The order of a set's elements, a map's keys or a list's element timeuuids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Text,
    Integer,
    TimeUuid,
    /// Not one of these: a collection of more than one live element gives way to the reference.
    Other,
}

impl Order {
    pub fn named(name: &str) -> Order {
        match name {
            "text" => Order::Text,
            "integer" => Order::Integer,
            "timeuuid" => Order::TimeUuid,
            _ => Order::Other,
        }
    }

    /// `shown` (element keys with their cells) sorted; None when a key is not of the order's type, or
    /// two keys are equal in it (the reference's stable sort then keeps an order of its own).
    pub fn sort<T>(self, shown: Vec<(Value, T)>) -> Option<Vec<(Value, T)>> {
        if shown.len() < 2 {
            return Some(shown);
        }
        let mut keyed = shown.into_iter().map(|e| Some((self.key(&e.0)?, e))).collect::<Option<Vec<_>>>()?;
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        if keyed.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return None;
        }
        Some(keyed.into_iter().map(|(_, e)| e).collect())
    }

    fn key(self, value: &Value) -> Option<SortKey> {
        match (self, value) {
            (Order::Text, Value::Str(s)) => Some(SortKey::Text(s.clone())),
            (Order::Integer, Value::Int(i)) => Some(SortKey::Integer(*i)),
            (Order::TimeUuid, Value::Str(s)) => timeuuid(s).map(|(time, rest)| SortKey::TimeUuid(time, rest)),
            _ => None,
        }
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum SortKey {
    Text(String),
    Integer(i64),
    TimeUuid(i64, i64),
}

/// TimeUUIDType's key of a UUID's text (`8-4-4-4-12` hex digits): the 60-bit time first as a signed
/// long, then the last eight bytes compared as signed bytes.
fn timeuuid(text: &str) -> Option<(i64, i64)> {
    let bytes = text.as_bytes();
    if bytes.len() != 36 || [8, 13, 18, 23].iter().any(|&i| bytes[i] != b'-') {
        return None;
    }
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let msb = u64::from_str_radix(&hex[..16], 16).ok()?;
    let lsb = u64::from_str_radix(&hex[16..], 16).ok()?;
    let reordered = (msb << 48) | ((msb << 16) & 0xFFFF_0000_0000) | (msb >> 32);
    Some((reordered as i64, (lsb ^ 0x0080_8080_8080_8080) as i64))
}

/// Whether a list element's key is one a snapshot gave (`spark.mirror.layout.read_list_key`).
pub fn is_read_list_key(key: &str) -> bool {
    key.ends_with("-8000-000000000000")
}

#[cfg(test)]
mod tests {
    use super::{timeuuid, Order};
    use crate::mirror::value::Value;

    fn sorted(order: Order, keys: &[Value]) -> Option<Vec<Value>> {
        let shown: Vec<(Value, ())> = keys.iter().map(|k| (k.clone(), ())).collect();
        Some(order.sort(shown)?.into_iter().map(|(k, _)| k).collect())
    }

    #[test]
    fn text_by_code_point_and_integers_by_value() {
        let text = |s: &str| Value::Str(s.into());
        assert_eq!(
            sorted(Order::Text, &[text("é"), text("b"), text("Z"), text("a")]).unwrap(),
            vec![text("Z"), text("a"), text("b"), text("é")]
        );
        let ints = [Value::Int(10), Value::Int(-3), Value::Int(2), Value::Int(0), Value::Int(7)];
        assert_eq!(
            sorted(Order::Integer, &ints).unwrap(),
            vec![Value::Int(-3), Value::Int(0), Value::Int(2), Value::Int(7), Value::Int(10)]
        );
    }

    #[test]
    fn timeuuids_by_time_then_signed_bytes() {
        // Same time, clock sequences 0x80 and 0x7f: signed, 0x80 (-128) first. Then an earlier time.
        let later_low = "c6c9faaa-e631-11f1-8000-02fc00000001";
        let later_high = "c6c9faaa-e631-11f1-7f00-02fc00000001";
        let earlier = "00000001-e632-11f0-7f00-02fc00000001";
        let keys: Vec<Value> = [later_high, later_low, earlier].iter().map(|s| Value::Str((*s).into())).collect();
        let got = sorted(Order::TimeUuid, &keys).unwrap();
        assert_eq!(got, vec![keys[2].clone(), keys[1].clone(), keys[0].clone()]);
        assert!(timeuuid("not-a-uuid").is_none());
    }

    #[test]
    fn ties_and_other_types_give_way() {
        assert!(sorted(Order::Text, &[Value::Str("a".into()), Value::Str("a".into())]).is_none());
        assert!(sorted(Order::Other, &[Value::Int(1), Value::Int(2)]).is_none());
        assert!(sorted(Order::Other, &[Value::Int(1)]).is_some());
        assert!(sorted(Order::Integer, &[Value::Int(1), Value::Str("2".into())]).is_none());
    }
}
