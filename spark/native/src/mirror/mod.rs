//! A mirrored partition merged natively: the reference's rules (`spark.mirror.state.Rules`, applied per
//! partition by `spark.mirror.engine.merge`) on the same JSON texts, giving the same stored states byte
//! for byte and the same rows of `SELECT *`.
//!
//!     change  = {"k": clustering | null, "s": static, "l": [ts, ttl, expiry] | null, "d": ts | null,
//!                "r"?: bounds, "c": {column: cell}}
//!     cell    = [ts, ttl, expiry, tombstone, value]                      (a single-cell column)
//!             | [deletion ts | null, [[key, ts, ttl, expiry, tombstone, value], ...]]   (multi-cell)
//!     record  = {"p": partition key values, "d"?: ts, "c"?: {column: cell}, "x"?: {column: stored}}
//!     row     = {"l"?: [ts, ttl, expiry], "d"?: ts, "c"?: {column: cell}, "x"?: {column: stored}}
//!     stored  = [deletion ts | null, {element key: cell}]
//!
//! A partition is merged here only when everything it needs is: it gives way to the reference (`None`)
//! on a range deletion (which rows it covers is the clustering types' order), on two different values
//! that tie at one timestamp (Cassandra then compares their serialized bytes), on a list element a
//! snapshot read (`is_read_list_key`), on elements whose type's order is not one of `Order`'s, and on
//! any text or shape the reference would read otherwise or refuse. The reference then merges the whole
//! partition, so each partition has one author.

pub mod images;
pub mod order;
pub mod value;

use std::collections::{BTreeMap, HashMap, HashSet};

use images::Image;
use order::Order;
use value::{parse, Value};

type Object = BTreeMap<String, Value>;
/// Why a merge gives way: nothing to say, the reference merges (and explains any error itself).
type Native<T> = Option<T>;

/// Below every timestamp: no deletion.
const NONE: i64 = i64::MIN;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    Single,
    List,
    Set,
    Map,
    Udt,
}

impl Storage {
    pub fn named(name: &str) -> Option<Storage> {
        Some(match name {
            "single" => Storage::Single,
            "list" => Storage::List,
            "set" => Storage::Set,
            "map" => Storage::Map,
            "udt" => Storage::Udt,
            _ => return None,
        })
    }
}

/// How one non-key column merges and reads (`ColumnRules`).
pub struct Column {
    pub storage: Storage,
    pub is_static: bool,
    /// Element keys stored as they are (strings); else as their canonical JSON text.
    pub key_strings: bool,
    pub order: Order,
    /// A UDT's fields, in order.
    pub fields: Vec<String>,
}

impl Column {
    /// Whether two different values tying at one timestamp leave the stored one: a set's elements have
    /// no value, and a UDT field the type no longer has compares as empty.
    fn tie_free(&self, element_key: &str) -> bool {
        match self.storage {
            Storage::Set => true,
            Storage::Udt => !self.fields.iter().any(|f| f == element_key),
            _ => false,
        }
    }
}

pub struct Rules {
    pub partition_key: Vec<String>,
    /// The clustering columns' names.
    pub clustering: Vec<String>,
    pub columns: BTreeMap<String, Column>,
    pub dropped: HashMap<String, i64>,
    statics: HashSet<String>,
}

/// What a partition's merge gives: the record's partition key values, the states to write (row key,
/// canonical text or None to remove, next expiry), and the rows of `SELECT *` it decides (clustering
/// values or None for the partition's static-only row, values by column or None for no row), and the
/// changes' images when asked for.
pub struct Merged {
    pub partition_key: Value,
    pub states: Vec<(String, Option<String>, Option<i64>)>,
    pub rows: Vec<(Option<Value>, Option<Object>)>,
    pub images: Vec<Image>,
}

fn int(value: &Value) -> Native<i64> {
    match value {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

fn array(value: &Value) -> Native<&Vec<Value>> {
    match value {
        Value::Array(items) => Some(items),
        _ => None,
    }
}

fn object_mut<'a>(state: &'a mut Object, name: &str) -> Native<&'a mut Object> {
    match state.entry(name.to_string()).or_insert_with(|| Value::Object(Object::new())) {
        Value::Object(members) => Some(members),
        _ => None,
    }
}

/// At equal timestamps: live 0 < expiring 1 < tombstone 2.
fn category(cell: &[Value]) -> u8 {
    if cell[3].truthy() {
        2
    } else if cell[1].truthy() {
        1
    } else {
        0
    }
}

/// Whether `new` supersedes `old` (`_wins`); None: two different values tie, which their bytes decide.
fn wins(new: &[Value], old: &[Value], tie_free: bool) -> Native<bool> {
    if new.len() != 5 || old.len() != 5 {
        return None;
    }
    let (n, o) = (int(&new[0])?, int(&old[0])?);
    if n != o {
        return Some(n > o);
    }
    let (nc, oc) = (category(new), category(old));
    if nc != oc {
        return Some(nc > oc);
    }
    if nc == 2 {
        return Some(false);
    }
    if nc == 1 && new[2] != old[2] {
        return Some(int(&new[2])? > int(&old[2])?);
    }
    (new[4].same(&old[4]) || tie_free).then_some(false)
}

/// `LivenessInfo.supersedes`.
fn liveness_wins(new: &[Value], old: &[Value]) -> Native<bool> {
    if new.len() != 3 || old.len() != 3 {
        return None;
    }
    let (n, o) = (int(&new[0])?, int(&old[0])?);
    if n != o {
        return Some(n > o);
    }
    let expiring = new[1].truthy();
    if expiring != old[1].truthy() {
        return Some(expiring);
    }
    Some(expiring && int(&new[2])? > int(&old[2])?)
}

fn live(cell: &[Value], shadow: i64, now: i64) -> Native<bool> {
    if cell.len() < 4 {
        return None;
    }
    Some(int(&cell[0])? > shadow && !cell[3].truthy() && (!cell[1].truthy() || int(&cell[2])? > now))
}

fn deletion_of(state: &Object) -> Native<i64> {
    state.get("d").map_or(Some(NONE), int)
}

impl Rules {
    pub fn new(
        partition_key: Vec<String>,
        clustering: Vec<String>,
        columns: BTreeMap<String, Column>,
        dropped: HashMap<String, i64>,
    ) -> Rules {
        let statics = columns.iter().filter(|(_, c)| c.is_static).map(|(n, _)| n.clone()).collect();
        Rules { partition_key, clustering, columns, dropped, statics }
    }

    /// The row key of the one row a change touches; None when it reaches beyond one row (a range or
    /// partition deletion, the static row, a static value) or cannot be read here.
    pub fn touched(&self, cells: &str) -> Option<String> {
        let Value::Object(change) = parse(cells)? else { return None };
        if !matches!(change.get("r"), None | Some(Value::Null)) || change.get("s")?.truthy() {
            return None;
        }
        let Value::Object(columns) = change.get("c")? else { return None };
        if columns.keys().any(|name| self.statics.contains(name)) {
            return None;
        }
        match change.get("k")? {
            Value::Null => None,
            key => Some(key.canonical()),
        }
    }

    /// One partition's changes (in order) merged into its stored states (`rows`: row key → text) as
    /// `engine.merge` merges them; `key`: a change's key (its JSON object), for the partition key values
    /// when no record is stored; `due`: the row keys whose states are due (written even when unchanged);
    /// `whole`: the partition was read whole; `imaged`: each change's images are made (`images`). None: the
    /// reference merges it.
    #[allow(clippy::too_many_arguments)]
    pub fn merge(
        &self,
        key: Option<&str>,
        record_text: Option<&str>,
        stored: &[(String, String)],
        changes: &[&str],
        now: i64,
        due: &HashSet<String>,
        whole: bool,
        imaged: bool,
    ) -> Native<Merged> {
        let mut record = match record_text {
            Some(text) => match parse(text)? {
                Value::Object(record) => record,
                _ => return None,
            },
            None => {
                let Value::Object(key) = parse(key?)? else { return None };
                let values = self.partition_key.iter().map(|n| key.get(n).cloned()).collect::<Option<Vec<_>>>()?;
                Object::from([("p".to_string(), Value::Array(values))])
            }
        };
        let mut rows: Vec<(String, Object)> = Vec::with_capacity(stored.len() + changes.len());
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut texts: HashMap<&str, &str> = HashMap::new();
        for (row, text) in stored {
            let Value::Object(state) = parse(text)? else { return None };
            index.insert(row.clone(), rows.len());
            rows.push((row.clone(), state));
            texts.insert(row, text);
        }
        let mut images = Vec::new();
        for (at, text) in changes.iter().enumerate() {
            let Value::Object(change) = parse(text)? else { return None };
            if imaged {
                self.apply_imaged(at, &change, &mut record, &mut rows, &mut index, now, &mut images)?;
            } else {
                self.apply(&change, &mut record, &mut rows, &mut index)?;
            }
        }
        self.prune(&mut record, &mut rows)?;

        let mut states = Vec::new();
        // A new record of nothing but the partition key is stored only beside a state that can expire.
        let bare = record_text.is_none() && record.len() == 1;
        let record_changed = !bare && save(&mut states, "", Some(&record), record_text, due.contains(""), now)?;
        let mut changed = Vec::new();
        for (i, (row, state)) in rows.iter().enumerate() {
            let state = (!state.is_empty()).then_some(state);
            if save(&mut states, row, state, texts.get(row.as_str()).copied(), due.contains(row), now)? {
                changed.push(i);
            }
        }
        if bare && states.iter().any(|s| s.2.is_some()) {
            let mut text = String::new();
            Value::write_object(&mut text, &record);
            states.insert(0, (String::new(), Some(text), None));
        }
        let which: Vec<usize> = if record_changed { (0..rows.len()).collect() } else { changed };
        let partition_key = record.get("p")?.clone();
        let rows = self.mirror_rows(&record, &rows, &which, whole, now)?;
        Some(Merged { partition_key, states, rows, images })
    }

    fn apply(
        &self,
        change: &Object,
        record: &mut Object,
        rows: &mut Vec<(String, Object)>,
        index: &mut HashMap<String, usize>,
    ) -> Native<()> {
        let deletion = change.get("d")?;
        if !matches!(change.get("r"), None | Some(Value::Null)) {
            return None; // a range deletion: which rows it covers is the clustering types' order
        }
        let Value::Object(cells) = change.get("c")? else { return None };
        if change.get("s")?.truthy() {
            return self.merge_cells(record, cells.iter());
        }
        let key = change.get("k")?;
        if *key == Value::Null {
            let newest = deletion_of(record)?.max(int(deletion)?);
            record.insert("d".into(), Value::Int(newest));
            return Some(());
        }
        let row_key = key.canonical();
        let at = *index.entry(row_key.clone()).or_insert_with(|| {
            rows.push((row_key, Object::new()));
            rows.len() - 1
        });
        let row = &mut rows[at].1;
        let liveness = change.get("l")?;
        if *liveness != Value::Null {
            let newer = match row.get("l") {
                None => true,
                Some(old) => liveness_wins(array(liveness)?, array(old)?)?,
            };
            if newer {
                row.insert("l".into(), liveness.clone());
            }
        }
        if *deletion != Value::Null {
            let newest = deletion_of(row)?.max(int(deletion)?);
            row.insert("d".into(), Value::Int(newest));
        }
        if cells.keys().any(|name| self.statics.contains(name)) {
            // a snapshot's row: its static values too
            self.merge_cells(record, cells.iter().filter(|(n, _)| self.statics.contains(*n)))?;
            return self.merge_cells(row, cells.iter().filter(|(n, _)| !self.statics.contains(*n)));
        }
        self.merge_cells(row, cells.iter())
    }

    fn merge_cells<'a>(&self, state: &mut Object, cells: impl Iterator<Item = (&'a String, &'a Value)>) -> Native<()> {
        for (name, cell) in cells {
            let Some(column) = self.columns.get(name) else { continue }; // dropped: its cells are dead
            let dropped = self.dropped.get(name).copied().unwrap_or(NONE);
            let cell = array(cell)?;
            if column.storage == Storage::Single {
                if int(cell.first()?)? <= dropped {
                    continue;
                }
                let stored = object_mut(state, "c")?;
                let newer = match stored.get(name) {
                    None => true,
                    Some(old) => wins(cell, array(old)?, false)?,
                };
                if newer {
                    stored.insert(name.clone(), Value::Array(cell.clone()));
                }
                continue;
            }
            let [deletion, Value::Array(elements)] = cell.as_slice() else { return None };
            let multi = object_mut(state, "x")?;
            let stored = multi
                .entry(name.clone())
                .or_insert_with(|| Value::Array(vec![Value::Null, Value::Object(Object::new())]));
            let Value::Array(stored) = stored else { return None };
            let [stored_deletion, Value::Object(stored_elements)] = stored.as_mut_slice() else { return None };
            if *deletion != Value::Null {
                let d = int(deletion)?;
                if d > dropped && (*stored_deletion == Value::Null || d > int(stored_deletion)?) {
                    *stored_deletion = Value::Int(d);
                }
            }
            for element in elements {
                let [key, rest @ ..] = array(element)?.as_slice() else { return None };
                if rest.len() != 5 {
                    return None;
                }
                if int(&rest[0])? <= dropped {
                    continue;
                }
                let element_key = match (column.key_strings, key) {
                    (true, Value::Str(s)) => s.clone(),
                    (true, _) => return None,
                    (false, key) => key.canonical(),
                };
                let newer = match stored_elements.get(&element_key) {
                    None => true,
                    Some(old) => wins(rest, array(old)?, column.tie_free(&element_key))?,
                };
                if newer {
                    stored_elements.insert(element_key, Value::Array(rest.to_vec()));
                }
            }
        }
        Some(())
    }

    /// What deletions shadow, dropped from the states (`Rules.prune`; no range deletion is here).
    fn prune(&self, record: &mut Object, rows: &mut [(String, Object)]) -> Native<()> {
        if record.contains_key("r") {
            return None;
        }
        let partition = deletion_of(record)?;
        prune_cells(record, partition)?;
        for (_, row) in rows.iter_mut() {
            let mut shadow = partition;
            let deletion = deletion_of(row)?;
            if deletion <= shadow {
                row.remove("d");
            } else {
                shadow = deletion;
            }
            if let Some(liveness) = row.get("l") {
                if int(array(liveness)?.first()?)? <= shadow {
                    row.remove("l");
                }
            }
            prune_cells(row, shadow)?;
        }
        Some(())
    }

    fn mirror_rows(
        &self,
        record: &Object,
        rows: &[(String, Object)],
        which: &[usize],
        whole: bool,
        now: i64,
    ) -> Native<Vec<(Option<Value>, Option<Object>)>> {
        let (statics, static_live) = if self.statics.is_empty() {
            (Object::new(), false)
        } else {
            self.read(record, deletion_of(record)?, now, true)?
        };
        let mut out = Vec::with_capacity(which.len() + 1);
        for &i in which {
            let (row, state) = &rows[i];
            let (values, live) =
                if state.is_empty() { (Object::new(), false) } else { self.read_row(record, state, now)? };
            let mut shown = None;
            if live {
                let mut all = statics.clone();
                all.extend(values);
                shown = Some(all);
            }
            out.push((Some(parse(row)?), shown));
        }
        if whole && !self.clustering.is_empty() {
            let mut any_row = false;
            for (_, state) in rows {
                if !state.is_empty() && self.read_row(record, state, now)?.1 {
                    any_row = true;
                    break;
                }
            }
            let shown = (static_live && !any_row).then(|| {
                let mut all = statics.clone();
                for (name, column) in &self.columns {
                    if !column.is_static {
                        all.insert(name.clone(), Value::Null);
                    }
                }
                all
            });
            out.push((None, shown));
        }
        Some(out)
    }

    /// (The regular columns' values, whether the row is in `SELECT *`).
    fn read_row(&self, record: &Object, row: &Object, now: i64) -> Native<(Object, bool)> {
        let shadow = deletion_of(record)?.max(deletion_of(row)?);
        let (values, mut is_live) = self.read(row, shadow, now, false)?;
        if let Some(liveness) = row.get("l") {
            let l = array(liveness)?;
            if l.len() != 3 {
                return None;
            }
            if int(&l[0])? > shadow && (!l[1].truthy() || int(&l[2])? > now) {
                is_live = true;
            }
        }
        Some((values, is_live))
    }

    fn read(&self, state: &Object, shadow: i64, now: i64, statics: bool) -> Native<(Object, bool)> {
        let single = match state.get("c") {
            Some(Value::Object(c)) => Some(c),
            None => None,
            _ => return None,
        };
        let multi = match state.get("x") {
            Some(Value::Object(x)) => Some(x),
            None => None,
            _ => return None,
        };
        let mut values = Object::new();
        let mut any_live = false;
        for (name, column) in &self.columns {
            if column.is_static != statics {
                continue;
            }
            let cell = multi.and_then(|x| x.get(name)).or_else(|| single.and_then(|c| c.get(name)));
            let (value, cell_live) = match cell {
                None => (Value::Null, false),
                Some(cell) => read_cell(column, array(cell)?, shadow, now)?,
            };
            values.insert(name.clone(), value);
            any_live |= cell_live;
        }
        Some((values, any_live))
    }
}

/// (The value `SELECT` shows, whether any cell of it is live) of a column's stored cell.
fn read_cell(column: &Column, cell: &[Value], shadow: i64, now: i64) -> Native<(Value, bool)> {
    if column.storage == Storage::Single {
        if cell.len() != 5 {
            return None;
        }
        return Some(if live(cell, shadow, now)? { (cell[4].clone(), true) } else { (Value::Null, false) });
    }
    let [deletion, Value::Object(elements)] = cell else { return None };
    let shadow = if *deletion == Value::Null { shadow } else { shadow.max(int(deletion)?) };
    let mut shown: Vec<(Value, &Vec<Value>)> = Vec::new();
    for (key, element) in elements {
        let element = array(element)?;
        if element.len() != 5 {
            return None;
        }
        if live(element, shadow, now)? {
            let key = if column.key_strings { Value::Str(key.clone()) } else { parse(key)? };
            shown.push((key, element));
        }
    }
    if shown.is_empty() {
        return Some((Value::Null, false));
    }
    let value = match column.storage {
        Storage::Udt => {
            let mut fields = Object::new();
            for name in &column.fields {
                let written = shown.iter().find(|(k, _)| matches!(k, Value::Str(s) if s == name));
                fields.insert(name.clone(), written.map_or(Value::Null, |(_, e)| e[4].clone()));
            }
            Value::Object(fields)
        }
        storage => {
            let shown = column.order.sort(shown)?;
            Value::Array(match storage {
                Storage::List => {
                    if shown.iter().any(|(k, _)| matches!(k, Value::Str(s) if order::is_read_list_key(s))) {
                        return None; // a snapshot's copies of logged elements: the reference removes them
                    }
                    shown.into_iter().map(|(_, e)| e[4].clone()).collect()
                }
                Storage::Set => shown.into_iter().map(|(k, _)| k).collect(),
                _ => shown.into_iter().map(|(k, e)| Value::Array(vec![k, e[4].clone()])).collect(),
            })
        }
    };
    Some((value, true))
}

fn prune_cells(state: &mut Object, shadow: i64) -> Native<()> {
    if let Some(cells) = state.remove("c") {
        let Value::Object(cells) = cells else { return None };
        let mut kept = Object::new();
        for (name, cell) in cells {
            if int(array(&cell)?.first()?)? > shadow {
                kept.insert(name, cell);
            }
        }
        if !kept.is_empty() {
            state.insert("c".into(), Value::Object(kept));
        }
    }
    if let Some(multi) = state.remove("x") {
        let Value::Object(multi) = multi else { return None };
        let mut kept_columns = Object::new();
        for (name, stored) in multi {
            let Value::Array(stored) = stored else { return None };
            let [mut deletion, Value::Object(elements)] = <[Value; 2]>::try_from(stored).ok()? else { return None };
            if deletion != Value::Null && int(&deletion)? <= shadow {
                deletion = Value::Null;
            }
            let floor = if deletion == Value::Null { shadow } else { shadow.max(int(&deletion)?) };
            let mut kept = Object::new();
            for (key, element) in elements {
                if int(array(&element)?.first()?)? > floor {
                    kept.insert(key, element);
                }
            }
            if deletion != Value::Null || !kept.is_empty() {
                kept_columns.insert(name, Value::Array(vec![deletion, Value::Object(kept)]));
            }
        }
        if !kept_columns.is_empty() {
            state.insert("x".into(), Value::Object(kept_columns));
        }
    }
    Some(())
}

/// Queue a state to be written when it changed or is due (`_save`); whether it was.
fn save(
    states: &mut Vec<(String, Option<String>, Option<i64>)>,
    row: &str,
    state: Option<&Object>,
    before: Option<&str>,
    due: bool,
    now: i64,
) -> Native<bool> {
    let text = state.map(|s| {
        let mut out = String::new();
        Value::write_object(&mut out, s);
        out
    });
    if text.as_deref() == before && !due {
        return Some(false);
    }
    let expires = match state {
        Some(s) => next_expiry(s, now)?,
        None => None,
    };
    states.push((row.to_string(), text, expires));
    Some(true)
}

/// The first time after `now` (s) at which something in the state expires (`Rules.next_expiry`).
fn next_expiry(state: &Object, now: i64) -> Native<Option<i64>> {
    let mut first: Option<i64> = None;
    let mut consider = |ttl: &Value, expiry: &Value, tombstone: bool| -> Native<()> {
        if ttl.truthy() && !tombstone {
            let at = int(expiry)?;
            if at > now && first.is_none_or(|f| at < f) {
                first = Some(at);
            }
        }
        Some(())
    };
    if let Some(liveness) = state.get("l") {
        let l = array(liveness)?;
        if l.len() != 3 {
            return None;
        }
        consider(&l[1], &l[2], false)?;
    }
    if let Some(cells) = state.get("c") {
        let Value::Object(cells) = cells else { return None };
        for cell in cells.values() {
            let c = array(cell)?;
            if c.len() != 5 {
                return None;
            }
            consider(&c[1], &c[2], c[3].truthy())?;
        }
    }
    if let Some(multi) = state.get("x") {
        let Value::Object(multi) = multi else { return None };
        for stored in multi.values() {
            let [_, Value::Object(elements)] = array(stored)?.as_slice() else { return None };
            for element in elements.values() {
                let e = array(element)?;
                if e.len() != 5 {
                    return None;
                }
                consider(&e[1], &e[2], e[3].truthy())?;
            }
        }
    }
    Some(first)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap, HashSet};

    use super::{Column, Order, Rules, Storage, Value};

    fn rules() -> Rules {
        let column = |storage, order| Column { storage, is_static: false, key_strings: true, order, fields: vec![] };
        let columns = BTreeMap::from([
            ("tags".to_string(), column(Storage::Set, Order::Text)),
            ("v".to_string(), column(Storage::Single, Order::Other)),
        ]);
        Rules::new(vec!["k".into()], vec![], columns, HashMap::new())
    }

    #[test]
    fn a_partition_s_changes_become_its_states_and_its_row() {
        let changes = [
            r#"{"k": [], "s": false, "l": [10, 0, null], "d": null, "c": {"v": [10, 0, null, 0, "a"]}}"#,
            r#"{"k": [], "s": false, "l": null, "d": null, "c": {"tags": [9, [["y", 10, 0, null, 0, null],
                ["x", 11, 0, null, 0, null]]], "v": [12, 0, null, 0, "b"]}}"#,
        ];
        let merged =
            rules().merge(Some(r#"{"k": 7}"#), None, &[], &changes, 100, &HashSet::new(), false, false).unwrap();
        assert_eq!(merged.partition_key, Value::Array(vec![Value::Int(7)]));
        let states: Vec<_> = merged.states.iter().map(|(row, text, _)| (row.as_str(), text.as_deref())).collect();
        assert_eq!(
            states,
            [(
                "[]",
                Some(concat!(
                    r#"{"c":{"v":[12,0,null,0,"b"]},"l":[10,0,null],"#,
                    r#""x":{"tags":[9,{"x":[11,0,null,0,null],"y":[10,0,null,0,null]}]}}"#
                ))
            )],
            "a new record of nothing but the partition key is not stored"
        );
        let (clustering, values) = &merged.rows[0];
        assert_eq!(clustering, &Some(Value::Array(vec![])));
        let values = values.as_ref().unwrap();
        assert_eq!(values["v"], Value::Str("b".into()));
        assert_eq!(values["tags"], Value::Array(vec![Value::Str("x".into()), Value::Str("y".into())]));
    }

    #[test]
    fn a_new_record_is_stored_beside_a_state_that_can_expire() {
        let changes = [r#"{"k": [], "s": false, "l": [10, 60, 160], "d": null, "c": {"v": [10, 60, 160, 0, "a"]}}"#];
        let merged =
            rules().merge(Some(r#"{"k": 7}"#), None, &[], &changes, 100, &HashSet::new(), false, false).unwrap();
        let states: Vec<_> = merged.states.iter().map(|(row, text, at)| (row.as_str(), text.as_deref(), *at)).collect();
        assert_eq!(
            states,
            [
                ("", Some(r#"{"p":[7]}"#), None),
                ("[]", Some(r#"{"c":{"v":[10,60,160,0,"a"]},"l":[10,60,160]}"#), Some(160)),
            ]
        );
        let stored = [("[]".to_string(), states[1].1.unwrap().to_string())];
        let later = [r#"{"k": [], "s": false, "l": null, "d": null, "c": {"v": [11, 60, 161, 0, "b"]}}"#];
        let merged = rules()
            .merge(Some(r#"{"k": 7}"#), Some(r#"{"p":[7]}"#), &stored, &later, 100, &HashSet::new(), false, false)
            .unwrap();
        assert_eq!(
            merged.states.iter().map(|(row, _, _)| row.as_str()).collect::<Vec<_>>(),
            ["[]"],
            "a stored record is written only when it changes"
        );
    }

    #[test]
    fn two_values_tying_at_one_timestamp_give_way() {
        let changes = [
            r#"{"k": [], "s": false, "l": null, "d": null, "c": {"v": [10, 0, null, 0, "a"]}}"#,
            r#"{"k": [], "s": false, "l": null, "d": null, "c": {"v": [10, 0, null, 0, "b"]}}"#,
        ];
        let key = Some(r#"{"k": 7}"#);
        assert!(rules().merge(key, None, &[], &changes, 100, &HashSet::new(), false, false).is_none());
        let same = [changes[0], changes[0]];
        assert!(rules().merge(key, None, &[], &same, 100, &HashSet::new(), false, false).is_some());
    }
}
