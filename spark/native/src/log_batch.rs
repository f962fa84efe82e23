//! A log table's rows as the unlogged BATCH requests that write them: the part of the native protocol's
//! BATCH body that holds the statements (the driver writes the batch type before it and the consistency,
//! flags and timestamp after it), for each request, with its routing key and the rows it writes.
//!
//!     statements = count:u16, statement{count}
//!     statement  = kind:u8 (1: a prepared statement's id), id_len:u16, id, values:u16, value{values}
//!     value      = len:i32, bytes{len}   |   -2:i32 (unset: the row writes nothing there)
//!
//! The rows of one partition go together, so each request is one mutation on its replicas, in batches of
//! at most `limit` bytes of values (a row alone may be more). A log table's partition key is its stream
//! id alone, so the stream id's bytes are the routing key. Partitions come in the order of their first
//! row, a partition's batches in the order of its rows, as the reference (`spark.sinks.cassandra.sink.
//! _requests`) groups the rows it binds.

use std::collections::HashMap;

use crate::log_insert::Slot;

const PREPARED: u8 = 1;
const UNSET: i32 = -2;

/// One request: its routing key, its statements (`statements` above) and the rows they write.
pub struct Request {
    pub routing_key: Vec<u8>,
    pub statements: Vec<u8>,
    pub rows: Vec<usize>,
    size: usize,
}

pub struct Batches<'a> {
    query_id: &'a [u8],
    limit: usize,
    /// Each partition's requests, in the order of the partition's first row.
    partitions: Vec<Vec<Request>>,
    by_key: HashMap<Vec<u8>, usize>,
}

impl<'a> Batches<'a> {
    /// Requests of the prepared statement `query_id`, each of at most `limit` bytes of values.
    pub fn new(query_id: &'a [u8], limit: usize) -> Self {
        Batches { query_id, limit, partitions: Vec::new(), by_key: HashMap::new() }
    }

    /// Row `row`, whose values are `slots` of `bytes`, into its partition's last request or a new one.
    pub fn add(&mut self, row: usize, routing_key: &[u8], bytes: &[u8], slots: &[Slot]) {
        let size: usize = slots.iter().flatten().map(|range| range.len()).sum();
        let at = *self.by_key.entry(routing_key.to_vec()).or_insert_with(|| {
            self.partitions.push(Vec::new());
            self.partitions.len() - 1
        });
        let requests = &mut self.partitions[at];
        let full = requests.last().is_none_or(|r| r.size + size > self.limit || r.rows.len() == usize::from(u16::MAX));
        if full {
            requests.push(Request { routing_key: routing_key.to_vec(), statements: vec![0, 0], rows: vec![], size: 0 });
        }
        let request = requests.last_mut().expect("a request was pushed if none was open");
        let out = &mut request.statements;
        out.push(PREPARED);
        out.extend_from_slice(&(self.query_id.len() as u16).to_be_bytes());
        out.extend_from_slice(self.query_id);
        out.extend_from_slice(&(slots.len() as u16).to_be_bytes());
        for slot in slots {
            match slot {
                Some(range) => {
                    out.extend_from_slice(&(range.len() as i32).to_be_bytes());
                    out.extend_from_slice(&bytes[range.clone()]);
                }
                None => out.extend_from_slice(&UNSET.to_be_bytes()),
            }
        }
        request.rows.push(row);
        request.size += size;
        let count = request.rows.len() as u16;
        out[..2].copy_from_slice(&count.to_be_bytes());
    }

    pub fn finish(self) -> impl Iterator<Item = Request> {
        self.partitions.into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(batches: &mut Batches<'_>, row: usize, key: u8, values: &[Option<&[u8]>]) {
        let (mut bytes, mut slots) = (Vec::new(), Vec::new());
        for value in values {
            slots.push(value.map(|v| {
                bytes.extend_from_slice(v);
                bytes.len() - v.len()..bytes.len()
            }));
        }
        batches.add(row, &[key; 2], &bytes, &slots);
    }

    #[test]
    fn a_partitions_rows_share_requests_up_to_the_limit_in_order_of_first_sight() {
        let mut batches = Batches::new(b"id", 6);
        add(&mut batches, 0, 1, &[Some(b"abc"), None]);
        add(&mut batches, 1, 2, &[Some(b"abcdefgh"), None]);
        add(&mut batches, 2, 1, &[Some(b"de"), Some(b"f")]);
        add(&mut batches, 3, 1, &[Some(b"g"), None]);
        let got: Vec<_> = batches.finish().map(|r| (r.routing_key, r.rows)).collect();
        assert_eq!(got, vec![(vec![1, 1], vec![0, 2]), (vec![1, 1], vec![3]), (vec![2, 2], vec![1])]);
    }

    #[test]
    fn statements_are_laid_out_as_the_protocol_reads_them() {
        let mut batches = Batches::new(b"id", 100);
        add(&mut batches, 0, 1, &[Some(b"x"), None]);
        add(&mut batches, 1, 1, &[Some(b""), Some(b"yz")]);
        let request = batches.finish().next().unwrap();
        let mut expected = vec![0, 2];
        expected.extend([1, 0, 2, b'i', b'd', 0, 2, 0, 0, 0, 1, b'x', 0xff, 0xff, 0xff, 0xfe]);
        expected.extend([1, 0, 2, b'i', b'd', 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, b'y', b'z']);
        assert_eq!(request.statements, expected);
    }
}
