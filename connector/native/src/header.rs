//! Serialization header of a partition update (messaging form) and delta-encoded values.
//!
//!     uvint minTimestamp - TIMESTAMP_EPOCH | uvint minLocalDeletionTime - DELETION_TIME_EPOCH
//!     | uvint minTTL | [static Columns] | regular Columns
//!
//! Timestamps, TTLs and local deletion times of the update are deltas from these minimums, with
//! Java's wrapping arithmetic. Local deletion times are 32-bit: signed up to messaging 12,
//! unsigned (good until 2106) from messaging 13.

use crate::layout::{ColumnLayout, TableLayout};
use crate::partial::{Misfit, Partial};
use ringtail_contract::vint::read_uvint;

const TIMESTAMP_EPOCH: i64 = 1_442_880_000_000_000; // µs, 2015-09-22
const DELETION_TIME_EPOCH: u32 = 1_442_880_000; // s
/// DeletionTime.LIVE's timestamp: no deletion.
const LIVE: i64 = i64::MIN;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeletionTime {
    /// Write timestamp of the deletion, µs.
    pub marked_for_delete_at: i64,
    /// Seconds since the epoch when it was deleted.
    pub local_deletion_time: i64,
}

pub struct SerializationHeader {
    pub min_timestamp: i64,
    min_ldt: u32,
    min_ttl: u32,
    signed_ldt: bool,
    pub statics: Vec<ColumnLayout>,
    pub regulars: Vec<ColumnLayout>,
}

#[inline]
pub fn uvint(buf: &[u8], p: usize) -> Partial<(u64, usize)> {
    read_uvint(buf, p).ok_or_else(|| Misfit::at(p, "vint runs past the end of the mutation"))
}

#[inline]
pub fn byte(buf: &[u8], p: usize) -> Partial<u8> {
    buf.get(p).copied().ok_or_else(|| Misfit::at(p, "mutation ends early"))
}

impl SerializationHeader {
    #[inline]
    pub fn timestamp(&self, delta: u64) -> i64 {
        self.min_timestamp.wrapping_add(delta as i64)
    }

    #[inline]
    pub fn ldt(&self, delta: u64) -> i64 {
        let v = (delta as u32).wrapping_add(self.min_ldt);
        if self.signed_ldt {
            v as i32 as i64
        } else {
            v as i64
        }
    }

    #[inline]
    pub fn ttl(&self, delta: u64) -> i64 {
        (delta as u32).wrapping_add(self.min_ttl) as i32 as i64
    }

    /// A delta-encoded DeletionTime; None for the LIVE value (no deletion).
    pub fn read_deletion(&self, buf: &[u8], p: usize) -> Partial<(Option<DeletionTime>, usize)> {
        let (u, p) = uvint(buf, p)?;
        let marked_for_delete_at = self.timestamp(u);
        let (u, p) = uvint(buf, p)?;
        if marked_for_delete_at == LIVE {
            return Ok((None, p));
        }
        Ok((Some(DeletionTime { marked_for_delete_at, local_deletion_time: self.ldt(u) }), p))
    }
}

fn read_columns(buf: &[u8], p: usize, layout: &TableLayout) -> Partial<(Vec<ColumnLayout>, usize)> {
    let (count, mut p) = uvint(buf, p)?;
    let mut columns = Vec::with_capacity(count.min(1024) as usize);
    for _ in 0..count {
        let (size, q) = uvint(buf, p)?;
        let end = q
            .checked_add(size as usize)
            .filter(|&e| e <= buf.len())
            .ok_or_else(|| Misfit::at(q, "column name runs past the end of the mutation"))?;
        let name = &buf[q..end];
        let column = layout.columns.get(name).ok_or_else(|| {
            Misfit::at(
                q,
                format!("column {:?} is not in the table nor among its dropped columns", String::from_utf8_lossy(name)),
            )
        })?;
        columns.push(*column);
        p = end;
    }
    Ok((columns, p))
}

pub fn read_serialization_header(
    buf: &[u8],
    p: usize,
    layout: &TableLayout,
    has_static: bool,
    signed_ldt: bool,
) -> Partial<(SerializationHeader, usize)> {
    let (u, mut p) = uvint(buf, p)?;
    let min_timestamp = (u as i64).wrapping_add(TIMESTAMP_EPOCH);
    let (min_ldt, min_ttl);
    if byte(buf, p)? == 0 && byte(buf, p + 1)? == 0 {
        // the usual case: nothing deleted or expiring
        (min_ldt, min_ttl) = (DELETION_TIME_EPOCH, 0);
        p += 2;
    } else {
        let (u, q) = uvint(buf, p)?;
        min_ldt = (u as u32).wrapping_add(DELETION_TIME_EPOCH);
        let (u, q) = uvint(buf, q)?;
        min_ttl = u as u32;
        p = q;
    }
    let mut statics = Vec::new();
    if has_static {
        (statics, p) = read_columns(buf, p, layout)?;
    }
    let (regulars, p) = read_columns(buf, p, layout)?;
    Ok((SerializationHeader { min_timestamp, min_ldt, min_ttl, signed_ldt, statics, regulars }, p))
}
