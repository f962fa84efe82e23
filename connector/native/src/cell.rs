//! Cells (Cell.Serializer), simple and complex.
//!
//!     uint8 flags | [uvint timestamp delta] | [uvint local deletion time delta] | [uvint ttl delta]
//!     | [vint-length path, complex columns only] | [value: fixed size or vint-length]

use crate::change::{Cell, ColumnCells, Liveness};
use crate::header::{byte, uvint, SerializationHeader};
use crate::layout::ColumnLayout;
use crate::partial::{Misfit, Partial};

const IS_DELETED: u8 = 0x01;
const IS_EXPIRING: u8 = 0x02;
const HAS_EMPTY_VALUE: u8 = 0x04;
const USE_ROW_TIMESTAMP: u8 = 0x08;
const USE_ROW_TTL: u8 = 0x10;

#[inline]
pub fn slice(buf: &[u8], p: usize, size: u64) -> Partial<(&[u8], usize)> {
    let end = p
        .checked_add(size as usize)
        .filter(|&e| e <= buf.len())
        .ok_or_else(|| Misfit::at(p, format!("a {size}-byte value runs past the end of the mutation")))?;
    Ok((&buf[p..end], end))
}

pub fn read_cell<'a>(
    buf: &'a [u8],
    p: usize,
    column: &ColumnLayout,
    header: &SerializationHeader,
    row: &Liveness,
) -> Partial<(Cell<'a>, usize)> {
    let flags = byte(buf, p)?;
    let mut p = p + 1;
    let timestamp = if flags & USE_ROW_TIMESTAMP != 0 {
        row.timestamp
    } else {
        let (u, q) = uvint(buf, p)?;
        p = q;
        header.timestamp(u)
    };
    let mut ttl = 0;
    let mut local_deletion_time = None;
    if flags & (IS_DELETED | IS_EXPIRING) != 0 {
        if flags & USE_ROW_TTL != 0 {
            (ttl, local_deletion_time) = (row.ttl, row.expires_at);
        } else {
            let (u, q) = uvint(buf, p)?;
            local_deletion_time = Some(header.ldt(u));
            p = q;
            if flags & IS_EXPIRING != 0 {
                let (u, q) = uvint(buf, p)?;
                ttl = header.ttl(u);
                p = q;
            }
        }
    }
    let mut path = None;
    if column.complex {
        let (size, q) = uvint(buf, p)?;
        let (found, q) = slice(buf, q, size)?;
        path = Some(found);
        p = q;
    }
    let mut value: &[u8] = &[];
    if flags & HAS_EMPTY_VALUE == 0 {
        let size = if column.fixed_length >= 0 {
            column.fixed_length as u64
        } else {
            let (size, q) = uvint(buf, p)?;
            p = q;
            size
        };
        (value, p) = slice(buf, p, size)?;
    }
    let tombstone = flags & IS_DELETED != 0;
    Ok((Cell { timestamp, ttl, local_deletion_time, tombstone, path, value }, p))
}

/// Cells of a row's present columns, in header order.
pub fn read_cells<'a>(
    buf: &'a [u8],
    mut p: usize,
    columns: &[ColumnLayout],
    header: &SerializationHeader,
    row: &Liveness,
    has_complex_deletion: bool,
) -> Partial<(Vec<ColumnCells<'a>>, usize)> {
    let mut found = Vec::with_capacity(columns.len());
    for column in columns {
        if !column.complex {
            let (cell, q) = read_cell(buf, p, column, header, row)?;
            found.push(ColumnCells::Simple { column: column.index, cell });
            p = q;
            continue;
        }
        let mut deletion = None;
        if has_complex_deletion {
            (deletion, p) = header.read_deletion(buf, p)?;
        }
        let (count, q) = uvint(buf, p)?;
        p = q;
        let mut cells = Vec::with_capacity(count.min(1024) as usize);
        for _ in 0..count {
            let (cell, q) = read_cell(buf, p, column, header, row)?;
            cells.push(cell);
            p = q;
        }
        found.push(ColumnCells::Complex { column: column.index, deletion, cells });
    }
    Ok((found, p))
}
