//! A snapshot's page of result rows → its log rows with operation `read`, as
//! `spark.snapshot.rows.TableRows.log_rows` makes them (the reference; the tests hold this one to it
//! byte for byte). The rows section of a RESULT Rows message (native protocol v4 and v5), its
//! columns in the order of `TableRows.select`:
//!
//!     rows  = count:int row{count}
//!     row   = token key_value{partition key and clustering columns} cell{cells}
//!     cell  = value [write_time] [ttl]       ; each selected for some cells only
//!     value = length:int byte{length}        ; a negative length is null
//!
//! A value becomes JSON text through the contract: its CQL bytes are written as the Avro datum of
//! its type (`ringtail_contract::value`), read back (`datum`) and written as `values::value` writes
//! an event's values, so a row read by the snapshot and the same row from the log hold the same text.

use std::fmt::Write;

use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;
use ringtail_contract::avro::Writer;
use ringtail_contract::cql::CqlType;
use ringtail_contract::value::{element, Value};

use crate::columns::{Fixed, Pairs, Var};
use crate::datum::{Datum, Input};
use crate::json::{self, SPACED};
use crate::rows::log_time;
use crate::schema::{Node, Schema};
use crate::values::{record_value, value};

/// Cassandra's "no timestamp" (`LivenessInfo.NO_TIMESTAMP`): a selected write time of a cell without one.
const NO_TIME: i64 = i64::MIN;

/// Why a page cannot become log rows: where in the rows section, and what.
#[derive(Debug, PartialEq, Eq)]
pub struct PageError {
    pub row: usize,
    pub column: String,
    pub message: String,
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "row {} of the page, column {}: {}", self.row, self.column, self.message)
    }
}

/// One column's values as JSON text: its CQL type and the Avro schema of its values (`value_type`).
pub struct ValueJson {
    cql: CqlType,
    schema: Schema,
    /// A non-frozen UDT: only the fields that hold a value are written (a CQL read names no other).
    held_fields_only: bool,
}

impl ValueJson {
    pub fn new(cql: CqlType, schema: &str) -> Result<Self, String> {
        let held_fields_only = matches!(cql, CqlType::Udt { multi_cell: true, .. });
        Ok(ValueJson { cql, schema: Schema::parse(schema)?, held_fields_only })
    }

    fn write(&self, out: &mut String, scratch: &mut Writer, raw: &[u8]) -> Result<(), String> {
        scratch.buf.clear();
        element(scratch, &self.cql, Value::of(raw)).map_err(|e| e.to_string())?;
        let datum = Input::new(&scratch.buf, 0).read(&self.schema, self.schema.root).map_err(|e| e.message)?;
        let root = self.schema.branch(self.schema.root);
        match (self.schema.node(root), &datum) {
            (Node::Record(record), Datum::Record(fields)) if self.held_fields_only => {
                record_value(out, &self.schema, record, fields, SPACED, true)
            }
            _ => value(out, &self.schema, self.schema.root, &datum, SPACED),
        }
        Ok(())
    }
}

pub struct KeyColumn {
    pub name: String,
    pub json: ValueJson,
}

pub struct CellColumn {
    pub name: String,
    pub json: ValueJson,
    /// Its newest write time is selected after it.
    pub written: bool,
    /// Its TTL is selected after that.
    pub ttl: bool,
}

/// One table's statement, compiled once: how its rows become log rows.
pub struct TableRows {
    /// `read␟keyspace␟table␟`, what every row's content digest starts with.
    head: String,
    partition_key: Vec<KeyColumn>,
    clustering: Vec<KeyColumn>,
    cells: Vec<CellColumn>,
}

/// The columns of a page's log rows that differ from row to row (the caller adds the stream ids and the
/// columns every read row holds alike).
#[derive(Default)]
pub struct ReadRows {
    pub rows: usize,
    pub token: Fixed<i64>,
    pub partition_key: Var,
    pub key: Var,
    pub columns: Pairs,
    pub ttl: Fixed<i64>,
    pub write_time_us: Fixed<i64>,
    pub change_id: Var,
    pub time: Var,
}

struct Section<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Section<'a> {
    fn int(&mut self) -> Option<i32> {
        let b = self.bytes.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        Some(i32::from_be_bytes(b.try_into().unwrap()))
    }

    fn value(&mut self) -> Option<Option<&'a [u8]>> {
        let length = self.int()?;
        if length < 0 {
            return Some(None);
        }
        let value = self.bytes.get(self.pos..self.pos + length as usize)?;
        self.pos += length as usize;
        Some(Some(value))
    }
}

fn number(raw: Option<&[u8]>, width: usize) -> Result<Option<i64>, String> {
    match raw {
        None => Ok(None),
        Some(b) if b.len() == width => {
            Ok(Some(b.iter().fold(0i64, |v, &x| v << 8 | x as i64) << (64 - 8 * width) >> (64 - 8 * width)))
        }
        Some(b) => Err(format!("a selected write time or TTL is not {width} bytes: {} bytes", b.len())),
    }
}

impl TableRows {
    pub fn new(
        keyspace: &str,
        table: &str,
        partition_key: Vec<KeyColumn>,
        clustering: Vec<KeyColumn>,
        cells: Vec<CellColumn>,
    ) -> Self {
        TableRows { head: format!("read\x1f{keyspace}\x1f{table}\x1f"), partition_key, clustering, cells }
    }

    /// The log rows of a rows section; `version_us` is the write time of a row without one.
    pub fn read(&self, section: &[u8], version_us: i64) -> Result<ReadRows, PageError> {
        let mut input = Section { bytes: section, pos: 0 };
        let count = input.int().filter(|&n| n >= 0).ok_or_else(|| PageError {
            row: 0,
            column: "-".into(),
            message: "the rows section does not start with a row count".into(),
        })? as usize;
        let mut out = ReadRows { rows: count, ..Default::default() };
        let mut scratch = Writer::default();
        let (mut key, mut content, mut text) = (String::new(), String::new(), String::new());
        let mut partition_key: Vec<u8> = Vec::new();
        let mut held = String::new(); // `␟name=text` of each cell the row holds, as its digest takes them
        let single = self.partition_key.len() == 1; // else the key is CompositeType's components
        for row in 0..count {
            let fail = |column: &str, message: String| PageError { row, column: column.into(), message };
            let overrun =
                |column: &str| fail(column, format!("the section ends inside the row ({} bytes)", section.len()));
            let token = input.value().ok_or_else(|| overrun("token"))?;
            out.token.push(Some(
                number(token, 8).map_err(|m| fail("token", m))?.ok_or_else(|| fail("token", "null".into()))?,
            ));
            key.clear();
            key.push('{');
            partition_key.clear();
            for (i, column) in self.partition_key.iter().chain(&self.clustering).enumerate() {
                let raw = input.value().ok_or_else(|| overrun(&column.name))?;
                if i < self.partition_key.len() {
                    let raw = raw.ok_or_else(|| fail(&column.name, "a partition key column is null".into()))?;
                    if single {
                        partition_key.extend_from_slice(raw);
                    } else {
                        let length = u16::try_from(raw.len()).map_err(|_| {
                            fail(&column.name, format!("a key component is limited to 65535 bytes, got {}", raw.len()))
                        })?;
                        partition_key.extend_from_slice(&length.to_be_bytes());
                        partition_key.extend_from_slice(raw);
                        partition_key.push(0);
                    }
                }
                let Some(raw) = raw else { continue }; // a static row's clustering
                if key.len() > 1 {
                    key.push_str(SPACED.item);
                }
                json::string(&mut key, &column.name);
                key.push_str(SPACED.key);
                column.json.write(&mut key, &mut scratch, raw).map_err(|m| fail(&column.name, m))?;
            }
            key.push('}');
            let (mut newest, mut ttl) = (NO_TIME, -1i64);
            held.clear();
            for cell in &self.cells {
                let raw = input.value().ok_or_else(|| overrun(&cell.name))?;
                let written = if cell.written { input.value().ok_or_else(|| overrun(&cell.name))? } else { None };
                let left = if cell.ttl { input.value().ok_or_else(|| overrun(&cell.name))? } else { None };
                let Some(raw) = raw else { continue };
                newest = newest.max(number(written, 8).map_err(|m| fail(&cell.name, m))?.unwrap_or(NO_TIME));
                ttl = ttl.max(number(left, 4).map_err(|m| fail(&cell.name, m))?.unwrap_or(-1));
                text.clear();
                cell.json.write(&mut text, &mut scratch, raw).map_err(|m| fail(&cell.name, m))?;
                out.columns.entry(&cell.name, &text);
                let _ = write!(held, "\x1f{}={text}", cell.name);
            }
            out.columns.end_row(true);
            let written_us = if newest == NO_TIME { version_us } else { newest };
            content.clear();
            content.push_str(&self.head);
            content.push_str(&key);
            let _ = write!(content, "\x1f{written_us}");
            content.push_str(&held);
            let mut hasher = Blake2bVar::new(16).unwrap();
            hasher.update(&partition_key);
            hasher.update(content.as_bytes());
            let mut digest = [0u8; 16];
            hasher.finalize_variable(&mut digest).unwrap();
            let mut change_id = String::with_capacity(32);
            json::hex(&mut change_id, &digest);
            out.partition_key.push(Some(&partition_key));
            out.key.text(Some(&key));
            out.ttl.push((ttl >= 0).then_some(ttl));
            out.write_time_us.push(Some(written_us));
            out.change_id.text(Some(&change_id));
            out.time.text(Some(&log_time(written_us, &digest)));
        }
        if input.pos != section.len() {
            return Err(PageError {
                row: count,
                column: "-".into(),
                message: format!("{} bytes after the last row", section.len() - input.pos),
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int_column(name: &str) -> KeyColumn {
        KeyColumn { name: name.into(), json: ValueJson::new(CqlType::Int, r#"["null", "int"]"#).unwrap() }
    }

    fn text_cell(name: &str) -> CellColumn {
        CellColumn {
            name: name.into(),
            json: ValueJson::new(CqlType::Text, r#""string""#).unwrap(),
            written: true,
            ttl: true,
        }
    }

    /// `CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c))`.
    fn table() -> TableRows {
        TableRows::new("ks", "t", vec![int_column("k")], vec![int_column("c")], vec![text_cell("v")])
    }

    fn section(rows: &[Vec<Option<&[u8]>>]) -> Vec<u8> {
        let mut out = (rows.len() as i32).to_be_bytes().to_vec();
        for value in rows.iter().flatten() {
            match value {
                None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(v) => {
                    out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    out.extend_from_slice(v);
                }
            }
        }
        out
    }

    fn text(var: &Var, i: usize) -> &str {
        std::str::from_utf8(&var.data[var.offsets[i] as usize..var.offsets[i + 1] as usize]).unwrap()
    }

    #[test]
    fn a_row_reads_as_its_key_its_cells_newest_write_time_and_ttl() {
        let (token, k, c) = (7i64.to_be_bytes(), 1i32.to_be_bytes(), (-2i32).to_be_bytes());
        let (written, ttl) = (1_700_000_000_000_001i64.to_be_bytes(), 600i32.to_be_bytes());
        let page = section(&[
            vec![Some(&token), Some(&k), Some(&c), Some(b"a \"q\""), Some(&written), Some(&ttl)],
            vec![Some(&token), Some(&k), None, None, None, None], // a static row of no cell
        ]);
        let rows = table().read(&page, 42).unwrap();
        assert_eq!(rows.rows, 2);
        assert_eq!(rows.token.values, vec![7, 7]);
        assert_eq!((text(&rows.key, 0), text(&rows.key, 1)), ("{\"k\": 1, \"c\": -2}", "{\"k\": 1}"));
        assert_eq!((text(&rows.columns.keys, 0), text(&rows.columns.values, 0)), ("v", "\"a \\\"q\\\"\""));
        assert_eq!(rows.columns.offsets, vec![0, 1, 1]);
        assert_eq!(rows.write_time_us.values, vec![1_700_000_000_000_001, 42]);
        assert_eq!((rows.ttl.values.clone(), rows.ttl.valid.unset), (vec![600, 0], 1));
        assert_eq!(rows.partition_key.data, [k, k].concat());
        assert_ne!(text(&rows.change_id, 0), text(&rows.change_id, 1));
    }

    #[test]
    fn a_section_cut_inside_a_row_or_longer_than_its_rows_is_an_error_naming_where() {
        let (token, k) = (7i64.to_be_bytes(), 1i32.to_be_bytes());
        let page = section(&[vec![Some(&token), Some(&k), Some(&k), Some(b"x"), None, None]]);
        let cut = table().read(&page[..page.len() - 6], 0).err().unwrap();
        assert_eq!((cut.row, cut.column.as_str()), (0, "v"));
        let longer = table().read(&[page.as_slice(), b"\x00"].concat(), 0).err().unwrap();
        assert_eq!(longer.to_string(), "row 1 of the page, column -: 1 bytes after the last row");
        let wrong = table().read(&section(&[vec![Some(&token), Some(b"\x01"), None, None, None, None]]), 0);
        assert_eq!(wrong.err().unwrap().column, "k");
    }

    #[test]
    fn a_ttl_and_a_write_time_are_signed_big_endian() {
        assert_eq!(number(Some(&(-5i32).to_be_bytes()), 4), Ok(Some(-5)));
        assert_eq!(number(Some(&i64::MIN.to_be_bytes()), 8), Ok(Some(i64::MIN)));
        assert!(number(Some(&[0; 7]), 8).is_err());
    }
}
