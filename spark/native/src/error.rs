//! Why a Kafka record could not become log rows: one kind per reason. Its text is the dead letter's
//! `failure_detail`, worded as the reference decoder (`spark.delivery.events`) words it, since the two
//! write the same dead letters. `Buffers` is the caller's mistake, not the record's: it fails the call
//! (`python::raise`, the one place a kind becomes a Python exception).

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventError {
    /// Not a Confluent-framed Avro datum of its writer schema.
    MalformedPayload(String),
    /// A datum of its schema that is not an event of the contract.
    InvalidEvent(&'static str),
    /// A change operation the contract does not name (the reference meets it as a KeyError).
    UnknownOperation(String),
    /// A schema id without a writer schema: why, as the registry's lookup said, else none was asked for.
    UnknownSchemaId { id: i32, why: Option<String> },
    /// A writer schema this decoder cannot read.
    UnreadableSchema { id: i32, why: String },
    /// Arrow buffers that do not hold the rows they claim.
    Buffers(String),
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventError::MalformedPayload(why) => write!(f, "MalformedPayload: {why}"),
            EventError::InvalidEvent(why) => write!(f, "InvalidEvent: {why}"),
            EventError::UnknownOperation(operation) => write!(f, "KeyError: '{operation}'"),
            EventError::UnknownSchemaId { why: Some(why), .. } => f.write_str(why),
            EventError::UnknownSchemaId { id, why: None } => {
                write!(f, "UnknownSchemaId: schema id {id} was not looked up")
            }
            EventError::UnreadableSchema { id, why } => write!(f, "UnreadableSchema: schema id {id}: {why}"),
            EventError::Buffers(why) => f.write_str(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EventError;

    #[test]
    fn each_kind_reads_as_the_reference_s_dead_letter() {
        let cases = [
            (
                EventError::MalformedPayload("3 bytes follow the datum".into()),
                "MalformedPayload: 3 bytes follow the datum",
            ),
            (EventError::InvalidEvent("a record expected"), "InvalidEvent: a record expected"),
            (EventError::UnknownOperation("upsert".into()), "KeyError: 'upsert'"),
            (EventError::UnknownSchemaId { id: 7, why: None }, "UnknownSchemaId: schema id 7 was not looked up"),
            (
                EventError::UnknownSchemaId { id: 7, why: Some("UnknownSchemaId: 40403".into()) },
                "UnknownSchemaId: 40403",
            ),
            (
                EventError::UnreadableSchema { id: 3, why: "x is not a schema".into() },
                "UnreadableSchema: schema id 3: x is not a schema",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }
}
