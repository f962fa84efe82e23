//! Partition updates (PartitionUpdate serializer, "on-wire" form).
//!
//!     16 bytes table id | vint-length partition key | uint8 flags | [serialization header]
//!     | [partition deletion] | [static row] | [uvint row estimate] | rows and markers | 0x01

use crate::cell::slice;
use crate::change::{Change, Op};
use crate::header::{byte, read_serialization_header, uvint};
use crate::layout::TableLayout;
use crate::partial::{Misfit, Partial};
use crate::unfiltered::{read_marker, read_row, Marker, END_OF_PARTITION, EXTENSION_FLAG, IS_MARKER, IS_STATIC};

const IS_EMPTY: u8 = 0x01;
const HAS_PARTITION_DELETION: u8 = 0x04;
const HAS_STATIC_ROW: u8 = 0x08;
const HAS_ROW_ESTIMATE: u8 = 0x10;

/// Append the update's changes to `out`; the position after the update and its partition key,
/// which an empty update has none of (the reference reader decodes no key for it). `p` is just after
/// the table id, which chose `layout` (the caller's table number `table`).
pub fn read_partition_update<'a>(
    buf: &'a [u8],
    p: usize,
    table: usize,
    layout: &TableLayout,
    signed_ldt: bool,
    update_index: u32,
    out: &mut Vec<Change<'a>>,
) -> Partial<(usize, Option<&'a [u8]>)> {
    let (size, p) = uvint(buf, p)?;
    let (key, p) = slice(buf, p, size)?;
    let flags = byte(buf, p)?;
    let mut p = p + 1;
    if flags & IS_EMPTY != 0 {
        return Ok((p, None));
    }
    let header;
    (header, p) = read_serialization_header(buf, p, layout, flags & HAS_STATIC_ROW != 0, signed_ldt)?;
    let clustering = &layout.clustering;
    let mut index = 0u32;
    let mut next = |op| {
        index += 1;
        Change::new(table, update_index, index - 1, op, key)
    };
    if flags & HAS_PARTITION_DELETION != 0 {
        let mut change = next(Op::PartitionDelete);
        (change.deletion, p) = header.read_deletion(buf, p)?;
        out.push(change);
    }
    if flags & HAS_STATIC_ROW != 0 {
        let (row_flags, ext_flags) = (byte(buf, p)?, byte(buf, p + 1)?);
        if row_flags & EXTENSION_FLAG == 0 || ext_flags & IS_STATIC == 0 {
            return Err(Misfit::at(p, "static row without the static flag"));
        }
        let change;
        (change, p) = read_row(buf, p + 2, row_flags, ext_flags, &header, clustering, next(Op::Update))?;
        out.push(change);
    }
    if flags & HAS_ROW_ESTIMATE != 0 {
        (_, p) = uvint(buf, p)?;
    }
    let mut opened: Option<Marker<'a>> = None; // the marker that opened the current range deletion
    loop {
        let row_flags = byte(buf, p)?;
        p += 1;
        if row_flags & END_OF_PARTITION != 0 {
            break;
        }
        let mut change = next(Op::Update);
        if row_flags & IS_MARKER != 0 {
            let marker;
            (marker, p) = read_marker(buf, p, &header, clustering)?;
            if marker.closes.is_some() {
                change.op = Op::RangeDelete;
                change.deletion = marker.closing_deletion;
                change.range_start = opened.as_ref().map(Marker::opening_bound);
                change.range_end = Some(marker.closing_bound());
                out.push(change);
            }
            opened = marker.opens.map(|_| marker);
            continue;
        }
        let mut ext_flags = 0;
        if row_flags & EXTENSION_FLAG != 0 {
            ext_flags = byte(buf, p)?;
            p += 1;
        }
        (change, p) = read_row(buf, p, row_flags, ext_flags, &header, clustering, change)?;
        out.push(change);
    }
    Ok((p, Some(key)))
}
