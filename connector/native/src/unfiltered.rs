//! Rows and range tombstone markers of a partition update (UnfilteredSerializer). Commit log rows
//! carry no row size fields (those exist only in sstables):
//!
//!     uint8 flags [uint8 extFlags] | clustering (not for the static row)
//!     | [liveness: uvint timestamp delta [, uvint ttl delta, uvint expiration delta]]
//!     | [row deletion] | [column subset unless HAS_ALL_COLUMNS] | cells
//!
//!     marker: uint8 flags=IS_MARKER | uint8 bound kind | uint16 size | clustering prefix
//!             | deletion (a boundary has two: the closing one, then the opening one)

use crate::bytes::be_u16;
use crate::cell::{read_cells, slice};
use crate::change::{Bound, Change, Liveness, Op, Value, NO_LIVENESS};
use crate::header::{byte, uvint, DeletionTime, SerializationHeader};
use crate::layout::ColumnLayout;
use crate::partial::{Misfit, Partial};

pub const END_OF_PARTITION: u8 = 0x01;
pub const IS_MARKER: u8 = 0x02;
const HAS_TIMESTAMP: u8 = 0x04;
const HAS_TTL: u8 = 0x08;
const HAS_DELETION: u8 = 0x10;
const HAS_ALL_COLUMNS: u8 = 0x20;
const HAS_COMPLEX_DELETION: u8 = 0x40;
pub const EXTENSION_FLAG: u8 = 0x80;
pub const IS_STATIC: u8 = 0x01; // extended flags
const HAS_SHADOWABLE_DELETION: u8 = 0x02; // extended flags

/// Clustering values: per batch of 32, a uvint of 2 bits per value (null, empty).
pub fn read_clustering<'a>(buf: &'a [u8], mut p: usize, fixed_lengths: &[i32]) -> Partial<(Vec<Value<'a>>, usize)> {
    let mut values = Vec::with_capacity(fixed_lengths.len());
    let mut header = 0u64;
    for (i, &fixed_length) in fixed_lengths.iter().enumerate() {
        let shift = (i & 31) * 2;
        if shift == 0 {
            (header, p) = uvint(buf, p)?;
        }
        let state = header >> shift & 3;
        if state != 0 {
            values.push(if state & 2 != 0 { Value::Null } else { Value::Empty });
            continue;
        }
        let size = if fixed_length >= 0 {
            fixed_length as u64
        } else {
            let (size, q) = uvint(buf, p)?;
            p = q;
            size
        };
        let (value, q) = slice(buf, p, size)?;
        values.push(Value::Bytes(value));
        p = q;
    }
    Ok((values, p))
}

fn read_subset(buf: &[u8], p: usize, superset: &[ColumnLayout]) -> Partial<(Vec<ColumnLayout>, usize)> {
    let (encoded, mut p) = uvint(buf, p)?;
    if encoded == 0 {
        return Ok((superset.to_vec(), p));
    }
    let n = superset.len();
    if n < 64 {
        if encoded >> n != 0 {
            return Err(Misfit::at(p, "column subset names columns outside the header"));
        }
        let present = superset.iter().enumerate().filter(|(i, _)| encoded >> i & 1 == 0).map(|(_, c)| *c);
        return Ok((present.collect(), p));
    }
    // Large headers: the count of missing columns, then indexes of whichever list is shorter.
    let missing = encoded as usize;
    if missing > n {
        return Err(Misfit::at(p, "column subset misses more columns than the header has"));
    }
    let present_count = n - missing;
    let listed = if present_count < n / 2 { present_count } else { missing };
    let mut indexes = Vec::with_capacity(listed);
    for _ in 0..listed {
        let (index, q) = uvint(buf, p)?;
        if index as usize >= n {
            return Err(Misfit::at(p, "column subset index outside the header"));
        }
        indexes.push(index as usize);
        p = q;
    }
    if present_count < n / 2 {
        return Ok((indexes.iter().map(|&i| superset[i]).collect(), p));
    }
    let present = superset.iter().enumerate().filter(|(i, _)| !indexes.contains(i)).map(|(_, c)| *c);
    Ok((present.collect(), p))
}

/// A row after its flags; `change` has its place and partition key set.
pub fn read_row<'a>(
    buf: &'a [u8],
    mut p: usize,
    flags: u8,
    ext_flags: u8,
    header: &SerializationHeader,
    clustering: &[i32],
    mut change: Change<'a>,
) -> Partial<(Change<'a>, usize)> {
    let is_static = ext_flags & IS_STATIC != 0;
    if !is_static {
        (change.clustering, p) = read_clustering(buf, p, clustering)?;
    }
    if flags & HAS_TIMESTAMP != 0 {
        let (u, q) = uvint(buf, p)?;
        p = q;
        let mut liveness = Liveness { timestamp: header.timestamp(u), ttl: 0, expires_at: None };
        if flags & HAS_TTL != 0 {
            // TTL first, then the expiration time (cells use the other order)
            let (u, q) = uvint(buf, p)?;
            liveness.ttl = header.ttl(u);
            let (u, q) = uvint(buf, q)?;
            liveness.expires_at = Some(header.ldt(u));
            p = q;
        }
        change.liveness = Some(liveness);
    }
    if flags & HAS_DELETION != 0 {
        (change.deletion, p) = header.read_deletion(buf, p)?;
    }
    let superset = if is_static { &header.statics } else { &header.regulars };
    let columns;
    if flags & HAS_ALL_COLUMNS != 0 {
        columns = superset.clone();
    } else {
        (columns, p) = read_subset(buf, p, superset)?;
    }
    let row = change.liveness.unwrap_or(NO_LIVENESS);
    (change.columns, p) = read_cells(buf, p, &columns, header, &row, flags & HAS_COMPLEX_DELETION != 0)?;
    change.op = if change.deletion.is_some() {
        Op::RowDelete
    } else if change.liveness.is_some() {
        Op::Insert
    } else {
        Op::Update
    };
    change.shadowable = ext_flags & HAS_SHADOWABLE_DELETION != 0;
    change.is_static = is_static;
    Ok((change, p))
}

/// A range tombstone bound (one deletion) or boundary (closes one range, opens the next).
pub struct Marker<'a> {
    pub clustering: Vec<Value<'a>>,
    /// None: does not close a range; else whether the bound is inclusive.
    pub closes: Option<bool>,
    pub closing_deletion: Option<DeletionTime>,
    /// None: does not open a range; else whether the bound is inclusive.
    pub opens: Option<bool>,
}

impl<'a> Marker<'a> {
    pub fn closing_bound(&self) -> Bound<'a> {
        Bound { clustering: self.clustering.clone(), inclusive: self.closes == Some(true) }
    }

    pub fn opening_bound(&self) -> Bound<'a> {
        Bound { clustering: self.clustering.clone(), inclusive: self.opens == Some(true) }
    }
}

/// ClusteringPrefix.Kind ordinal -> (inclusive if it closes a range, inclusive if it opens one).
fn bound_kind(kind: u8) -> Option<(Option<bool>, Option<bool>)> {
    match kind {
        0 => Some((Some(false), None)),       // EXCL_END_BOUND
        1 => Some((None, Some(true))),        // INCL_START_BOUND
        2 => Some((Some(false), Some(true))), // EXCL_END_INCL_START_BOUNDARY
        5 => Some((Some(true), Some(false))), // INCL_END_EXCL_START_BOUNDARY
        6 => Some((Some(true), None)),        // INCL_END_BOUND
        7 => Some((None, Some(false))),       // EXCL_START_BOUND
        _ => None,
    }
}

pub fn read_marker<'a>(
    buf: &'a [u8],
    p: usize,
    header: &SerializationHeader,
    clustering: &[i32],
) -> Partial<(Marker<'a>, usize)> {
    let kind = byte(buf, p)?;
    let size =
        be_u16(buf, p + 1).ok_or_else(|| Misfit::at(p, "mutation ends inside a range tombstone marker"))? as usize;
    let (closes, opens) = bound_kind(kind)
        .filter(|_| size <= clustering.len())
        .ok_or_else(|| Misfit::at(p, format!("invalid range tombstone marker (kind {kind}, {size} values)")))?;
    let (values, mut p) = read_clustering(buf, p + 3, &clustering[..size])?;
    let mut closing_deletion = None;
    if closes.is_some() {
        (closing_deletion, p) = header.read_deletion(buf, p)?;
    }
    if opens.is_some() {
        (_, p) = header.read_deletion(buf, p)?;
    }
    Ok((Marker { clustering: values, closes, closing_deletion, opens }, p))
}
