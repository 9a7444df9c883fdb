//! The serde layer of the chain file: form only (fields, types, names). Meaning (ranges,
//! Nyquist, stability) is checked by `validate` at a sample rate.
//!
//! The file is read into a `serde_json::Value` first (syntax errors and numbers too large
//! for a float are reported with line and column), then each stage is deserialised on
//! its own into the `deny_unknown_fields` struct of its `type` (in `stages/`, one file a
//! type), so every error names the stage index, its type and the field. The helpers the
//! stage types share (the response, cutoff and count fields, the error builder) are here.

use super::{Chain, ChainError, Stage, FORMAT_NAME, FORMAT_VERSION, MAX_STAGES};
use crate::design::{Cutoff, Response};
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{json, Map, Number, Value};
use std::cell::RefCell;

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum ResponseWire {
    Lowpass,
    Highpass,
    Bandpass,
    Bandstop,
}

impl From<ResponseWire> for Response {
    fn from(r: ResponseWire) -> Response {
        match r {
            ResponseWire::Lowpass => Response::Lowpass,
            ResponseWire::Highpass => Response::Highpass,
            ResponseWire::Bandpass => Response::Bandpass,
            ResponseWire::Bandstop => Response::Bandstop,
        }
    }
}

/// `cutoff_hz`: a number, or `[low, high]`.
pub(super) struct CutoffWire(pub(super) Cutoff);

impl<'de> Deserialize<'de> for CutoffWire {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CutoffWire;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number, or [low, high] for band responses")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<CutoffWire, E> {
                Ok(CutoffWire(Cutoff::Single(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<CutoffWire, E> {
                Ok(CutoffWire(Cutoff::Single(v as f64)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<CutoffWire, E> {
                Ok(CutoffWire(Cutoff::Single(v as f64)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CutoffWire, A::Error> {
                let lo: f64 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let hi: f64 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(3, &self));
                }
                Ok(CutoffWire(Cutoff::Band(lo, hi)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A count (`order`, `taps`): an integer, also written as an integral float (`4.0`, as
/// numeric tools often emit); `4.5` or a negative number is an error.
#[derive(Clone, Copy)]
pub(super) struct Count(pub(super) u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a whole number")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Count, E> {
                u64::try_from(v).map(Count).map_err(|_| de::Error::invalid_value(de::Unexpected::Signed(v), &self))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Count, E> {
                if v.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&v) {
                    Ok(Count(v as u64))
                } else {
                    Err(de::Error::invalid_value(de::Unexpected::Float(v), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Quoted file content longer than this many characters is cut in error messages.
const QUOTE_MAX_CHARS: usize = 100;
/// Parser messages (which quote the offending value themselves) longer than this are cut.
const MESSAGE_MAX_CHARS: usize = 400;

/// `text` for an error message, at most about `max_chars` characters: a longer one keeps
/// its beginning and its end around ` … ` and says how long it was. A mutated or mistaken
/// file can hold megabytes in one value or key, and a message must stay one line a person
/// can read (the place it names is what matters).
fn excerpt(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_string();
    }
    let head: String = text.chars().take(max_chars * 2 / 3).collect();
    let tail: String = text.chars().skip(count - max_chars / 3).collect();
    format!("{head} … {tail} ({count} characters)")
}

/// A JSON value from the file, for an error message.
fn quoted(value: &Value) -> String {
    excerpt(&value.to_string(), QUOTE_MAX_CHARS)
}

fn not_a_chain(field: &str, message: impl Into<String>) -> ChainError {
    ChainError::NotAChain { field: field.to_string(), message: message.into() }
}

pub(super) fn stage_error(index: usize, stage_type: &str, field: &str, message: String) -> ChainError {
    ChainError::Stage {
        index,
        stage_type: excerpt(stage_type, QUOTE_MAX_CHARS),
        field: excerpt(field, QUOTE_MAX_CHARS),
        message: excerpt(&message, MESSAGE_MAX_CHARS),
    }
}

/// The name between the first pair of backticks of a serde message (`unknown field `x``).
fn backticked(message: &str) -> Option<&str> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(&message[start..start + len])
}

/// Deserialises one stage's remaining fields into its wire struct.
pub(super) fn fields<T: DeserializeOwned>(index: usize, stage_type: &str, map: Map<String, Value>) -> Result<T, ChainError> {
    serde_path_to_error::deserialize(Value::Object(map)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path.is_empty() || path == "." {
            let field = backticked(&inner).unwrap_or("").to_string();
            stage_error(index, stage_type, &field, inner)
        } else {
            let field = path.split(['.', '[']).next().unwrap_or(&path).to_string();
            stage_error(index, stage_type, &field, format!("{}: {inner}", excerpt(&path, QUOTE_MAX_CHARS)))
        }
    })
}

/// `matched` is a version 2 field.
pub(super) fn needs_version_2(index: usize, t: &str, matched: Option<bool>, version: u64) -> Result<(), ChainError> {
    if matched.is_some() && version < 2 {
        return Err(stage_error(index, t, "matched", format!("`matched` needs version 2 of the chain format (this file says version {version})")));
    }
    Ok(())
}

fn parse_stage(index: usize, value: Value, version: u64) -> Result<Stage, ChainError> {
    let Value::Object(mut map) = value else {
        return Err(stage_error(index, "?", "", "is not a JSON object".into()));
    };
    let type_name = match map.remove("type") {
        Some(Value::String(s)) => s,
        Some(other) => return Err(stage_error(index, "?", "type", format!("type must be a string, found {}", quoted(&other)))),
        None => return Err(stage_error(index, "?", "type", "missing field `type`".into())),
    };
    let t = type_name.as_str();
    let enabled = match map.remove("enabled") {
        None => true,
        Some(Value::Bool(b)) => b,
        Some(other) => return Err(stage_error(index, t, "enabled", format!("enabled must be true or false, found {}", quoted(&other)))),
    };
    let label = match map.remove("label") {
        None => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => return Err(stage_error(index, t, "label", format!("label must be a string, found {}", quoted(&other)))),
    };
    let Some(kind) = super::stages::parse(index, t, map, version)? else {
        let expected = super::stages::STAGE_TYPES.join(", ");
        return Err(stage_error(
            index,
            t,
            "type",
            format!("type `{}` is not a stage type (expected one of: {expected}; see docs/chain-format.md)", excerpt(t, QUOTE_MAX_CHARS)),
        ));
    };
    Ok(Stage { kind, enabled, label })
}

/// Where a JSON value sits in a chain file, for naming the stage of a duplicate key.
#[derive(Clone, Copy)]
enum Place {
    Top,
    Stages,
    /// Inside stage `i` (or outside any stage).
    Stage(Option<usize>),
}

/// What the reader refused, beyond JSON syntax.
enum Refused {
    /// A key given twice: the stage it is in and the key.
    Duplicate(Option<usize>, String),
    TooManyStages,
}

type Duplicate = RefCell<Option<Refused>>;

/// Reads a JSON value like `serde_json::Value` does, but refuses an object that holds a
/// key twice (serde_json's `Value` keeps the last one silently).
struct Strict<'a> {
    place: Place,
    duplicate: &'a Duplicate,
}

impl Strict<'_> {
    fn stage(&self) -> Option<usize> {
        match self.place {
            Place::Stage(i) => i,
            Place::Top | Place::Stages => None,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v).map(Value::Number).ok_or_else(|| E::custom("number is not finite"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        let mut i = 0;
        loop {
            let place = match self.place {
                Place::Stages => Place::Stage(Some(i)),
                Place::Top => Place::Stage(None),
                inner => inner,
            };
            match seq.next_element_seed(Strict { place, duplicate: self.duplicate })? {
                Some(v) => items.push(v),
                None => break,
            }
            i += 1;
            if matches!(self.place, Place::Stages) && i > MAX_STAGES {
                *self.duplicate.borrow_mut() = Some(Refused::TooManyStages);
                return Err(de::Error::custom(format!("the chain has more than {MAX_STAGES} stages")));
            }
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some(Refused::Duplicate(self.stage(), key.clone()));
                return Err(de::Error::custom(format!("duplicate key `{key}`")));
            }
            let place = match (self.place, key.as_str()) {
                (Place::Top, "stages") => Place::Stages,
                (Place::Top, _) | (Place::Stages, _) => Place::Stage(None),
                (inner, _) => inner,
            };
            let value = map.next_value_seed(Strict { place, duplicate: self.duplicate })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// The whole text as a JSON value: syntax errors, numbers too large for a float and
/// duplicate keys are reported with line and column.
fn read_value(text: &str) -> Result<Value, ChainError> {
    let duplicate = Duplicate::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Strict { place: Place::Top, duplicate: &duplicate }.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    value.map_err(|e| {
        match duplicate.take() {
            Some(Refused::Duplicate(stage, key)) => {
                return ChainError::DuplicateKey { stage, key: excerpt(&key, QUOTE_MAX_CHARS), line: e.line(), column: e.column() }
            }
            Some(Refused::TooManyStages) => {
                return ChainError::Limit { what: format!("the chain has more than {MAX_STAGES} stages") }
            }
            None => {}
        }
        let full = e.to_string();
        let message = match full.rfind(" at line ") {
            Some(i) => full[..i].to_string(),
            None => full,
        };
        ChainError::Syntax { line: e.line(), column: e.column(), message }
    })
}

/// Reads a chain file.
pub(super) fn parse(text: &str) -> Result<Chain, ChainError> {
    let value = read_value(text)?;
    let Value::Object(mut top) = value else {
        return Err(not_a_chain("the file", "is not a JSON object"));
    };
    match top.remove("format") {
        Some(Value::String(f)) if f == FORMAT_NAME => {}
        Some(other) => return Err(not_a_chain("format", format!("is {}, expected \"{FORMAT_NAME}\"", quoted(&other)))),
        None => return Err(not_a_chain("format", "is missing")),
    }
    let version = match top.remove("version") {
        Some(Value::Number(n)) => match n.as_u64().or_else(|| n.as_f64().filter(|v| v.fract() == 0.0 && *v >= 0.0).map(|v| v as u64)) {
            Some(v) if (1..=FORMAT_VERSION).contains(&v) => v,
            Some(v) if v > FORMAT_VERSION => return Err(ChainError::NewerVersion { found: v }),
            _ => return Err(not_a_chain("version", format!("{n} is not a version of this format"))),
        },
        Some(other) => return Err(not_a_chain("version", format!("must be an integer, found {}", quoted(&other)))),
        None => return Err(not_a_chain("version", "is missing")),
    };
    let stages = match top.remove("stages") {
        Some(Value::Array(stages)) => stages,
        Some(other) => return Err(not_a_chain("stages", format!("must be a list, found {}", quoted(&other)))),
        None => return Err(not_a_chain("stages", "is missing")),
    };
    if let Some(unknown) = top.keys().next() {
        return Err(not_a_chain(unknown, "is not a top-level field (expected format, version, stages)"));
    }
    if stages.len() > MAX_STAGES {
        return Err(ChainError::Limit { what: format!("the chain has {} stages, more than {MAX_STAGES}", stages.len()) });
    }
    let stages = stages.into_iter().enumerate().map(|(i, v)| parse_stage(i, v, version)).collect::<Result<_, _>>()?;
    Ok(Chain { stages })
}

pub(super) fn cutoff_value(c: &Cutoff) -> Value {
    match *c {
        Cutoff::Single(f) => json!(f),
        Cutoff::Band(lo, hi) => json!([lo, hi]),
    }
}

fn stage_value(stage: &Stage) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!(stage.kind.type_name()));
    super::stages::write(&stage.kind, &mut m);
    if !stage.enabled {
        m.insert("enabled".into(), json!(false));
    }
    if let Some(label) = &stage.label {
        m.insert("label".into(), json!(label));
    }
    Value::Object(m)
}

/// Writes a chain file (pretty-printed).
pub(super) fn to_string(chain: &Chain) -> String {
    // The oldest version that says everything in the chain: version 1 readers read it.
    let matched = chain.stages.iter().any(|s| s.kind.is_matched());
    let value = json!({
        "format": FORMAT_NAME,
        "version": if matched { 2 } else { 1 },
        "stages": chain.stages.iter().map(stage_value).collect::<Vec<_>>(),
    });
    // Serialising a `Value` cannot fail.
    serde_json::to_string_pretty(&value).unwrap_or_default()
}
