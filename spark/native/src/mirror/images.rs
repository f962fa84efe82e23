//! Images made natively: what each change merged did to `SELECT *`, row by row, as the reference's
//! observer (`spark.mirror.images.Images`) sees it. Before a change, every row it can alter is read;
//! after it, again: the row it names, or every row of the partition for a change reaching beyond one
//! row (a partition deletion, a static value: it shows on every row). A row shown differently gives an
//! image; rows come in the reference's order: those shown before (by row key), then those new.
//!
//! Whether a row changed is Python's `==` of its values as `json.loads` reads them: every NaN it reads is
//! one float object, which `==` of lists and dicts takes as equal to itself. The native core gives way on
//! an integer beyond 64 bits against a float. A value's own members (a UDT's fields, a duration's) are
//! in code point order here, where the reference keeps the order it read: JSON's objects have none.

use std::collections::HashMap;

use super::value::{parse, Value};
use super::{deletion_of, Native, Object, Rules};

/// One change's image of one row: the change's place among the partition's changes, the row's primary
/// key, and every column as `SELECT *` shows it before and after (None: not shown).
pub struct Image {
    pub change: usize,
    pub key: Object,
    pub before: Option<Object>,
    pub after: Option<Object>,
}

impl Rules {
    /// `change` (the partition's `at`-th) applied, with the images of the rows it altered added to `images`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply_imaged(
        &self,
        at: usize,
        change: &Object,
        record: &mut Object,
        rows: &mut Vec<(String, Object)>,
        index: &mut HashMap<String, usize>,
        now: i64,
        images: &mut Vec<Image>,
    ) -> Native<()> {
        let reached = self.reached(change, rows)?;
        let before = self.shown(&reached, record, rows, index, now)?;
        self.apply(change, record, rows, index)?;
        let after = self.shown(&reached, record, rows, index, now)?;
        let mut new = Vec::new();
        for ((row, was), is) in reached.iter().zip(before).zip(after) {
            match (was, is) {
                (None, None) => {}
                (None, Some(is)) => new.push((row, is)),
                (Some(was), is) => {
                    let same = match &is {
                        Some(is) => py_equal_members(&was, is)?,
                        None => false,
                    };
                    if !same {
                        images.push(Image { change: at, key: self.key(record, row)?, before: Some(was), after: is });
                    }
                }
            }
        }
        for (row, is) in new {
            images.push(Image { change: at, key: self.key(record, row)?, before: None, after: Some(is) });
        }
        Some(())
    }

    /// The row keys a change can alter (`Images._rows_reached`): the one it names, or every row of the
    /// partition with the named one, in code point order.
    fn reached(&self, change: &Object, rows: &[(String, Object)]) -> Native<Vec<String>> {
        let named = match change.get("k")? {
            Value::Null => None,
            key => Some(key.canonical()),
        };
        let Value::Object(cells) = change.get("c")? else { return None };
        let one_row = matches!(change.get("r"), None | Some(Value::Null))
            && !change.get("s")?.truthy()
            && !cells.keys().any(|name| self.statics.contains(name));
        if let (true, Some(row)) = (one_row, &named) {
            return Some(vec![row.clone()]);
        }
        let mut reached: Vec<String> = rows.iter().map(|(row, _)| row.clone()).chain(named).collect();
        reached.sort_unstable();
        reached.dedup();
        Some(reached)
    }

    /// Each reached row as `SELECT *` shows it now (`Images._read`): its key, static and regular values;
    /// None where it is not shown.
    fn shown(
        &self,
        reached: &[String],
        record: &Object,
        rows: &[(String, Object)],
        index: &HashMap<String, usize>,
        now: i64,
    ) -> Native<Vec<Option<Object>>> {
        let statics =
            if self.statics.is_empty() { Object::new() } else { self.read(record, deletion_of(record)?, now, true)?.0 };
        let mut shown = Vec::with_capacity(reached.len());
        for row in reached {
            let state = index.get(row).map(|&i| &rows[i].1).filter(|state| !state.is_empty());
            let values = match state {
                Some(state) => {
                    let (values, live) = self.read_row(record, state, now)?;
                    live.then_some(values)
                }
                None => None,
            };
            shown.push(match values {
                Some(values) => {
                    let mut all = self.key(record, row)?;
                    all.extend(statics.iter().map(|(name, value)| (name.clone(), value.clone())));
                    all.extend(values);
                    Some(all)
                }
                None => None,
            });
        }
        Some(shown)
    }

    /// A row's primary key (`Images._key`): the record's partition key values and the row key's.
    fn key(&self, record: &Object, row: &str) -> Native<Object> {
        let Value::Array(partition) = record.get("p")? else { return None };
        let Value::Array(clustering) = parse(row)? else { return None };
        let names = self.partition_key.iter().zip(partition.iter().cloned());
        Some(names.chain(self.clustering.iter().zip(clustering)).map(|(n, v)| (n.clone(), v)).collect())
    }
}

fn py_equal_members(a: &Object, b: &Object) -> Native<bool> {
    if a.len() != b.len() {
        return Some(false);
    }
    for ((k, x), (l, y)) in a.iter().zip(b) {
        if k != l || !py_equal(x, y)? {
            return Some(false);
        }
    }
    Some(true)
}

/// Python's `==` of two values as `json.loads` reads them, within rows (`1 == 1.0`, `True == 1`, NaN equal
/// to NaN); None where the native core does not decide it.
fn py_equal(a: &Value, b: &Value) -> Native<bool> {
    Some(match (number(a), number(b)) {
        (Some(Number::Int(x)), Some(Number::Int(y))) => x == y,
        (Some(Number::Float(x)), Some(Number::Float(y))) => x == y || (x.is_nan() && y.is_nan()),
        (Some(Number::Int(i)), Some(Number::Float(f))) | (Some(Number::Float(f)), Some(Number::Int(i))) => {
            f.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) && f as i64 == i
        }
        (Some(Number::Big), Some(Number::Float(_))) | (Some(Number::Float(_)), Some(Number::Big)) => return None,
        (Some(_), Some(_)) => a == b, // two integers beyond 64 bits, or one beyond and one within
        _ => match (a, b) {
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    return Some(false);
                }
                for (x, y) in x.iter().zip(y) {
                    if !py_equal(x, y)? {
                        return Some(false);
                    }
                }
                true
            }
            (Value::Object(x), Value::Object(y)) => py_equal_members(x, y)?,
            _ => a == b,
        },
    })
}

enum Number {
    Int(i64),
    Float(f64),
    Big,
}

fn number(value: &Value) -> Option<Number> {
    match value {
        Value::Bool(b) => Some(Number::Int(*b as i64)),
        Value::Int(i) => Some(Number::Int(*i)),
        Value::Float(f) => Some(Number::Float(*f)),
        Value::BigInt(_) => Some(Number::Big),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{py_equal, Value};

    #[test]
    fn values_compare_as_python_compares_them() {
        let (one, one_float, yes) = (Value::Int(1), Value::Float(1.0), Value::Bool(true));
        assert_eq!(py_equal(&one, &one_float), Some(true));
        assert_eq!(py_equal(&yes, &one_float), Some(true));
        assert_eq!(py_equal(&Value::Float(0.0), &Value::Float(-0.0)), Some(true));
        assert_eq!(py_equal(&Value::Int(2), &Value::Float(2.5)), Some(false));
        assert_eq!(py_equal(&Value::Str("1".into()), &one), Some(false));
        assert_eq!(py_equal(&Value::Null, &Value::Null), Some(true));
        let list = |v: Value| Value::Array(vec![Value::Str("a".into()), v]);
        assert_eq!(py_equal(&list(one.clone()), &list(one_float)), Some(true));
        assert_eq!(py_equal(&list(one), &list(Value::Int(2))), Some(false));
        assert_eq!(py_equal(&Value::Float(f64::NAN), &Value::Float(f64::NAN)), Some(true));
        assert_eq!(py_equal(&Value::BigInt("18446744073709551616".into()), &Value::Float(1.8e19)), None);
    }
}
