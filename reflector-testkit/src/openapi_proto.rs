//! The Swagger 2.0 document in gnostic's protobuf encoding (`openapi.v2.Document`), which
//! kubectl up to 1.26 and client-go's `OpenAPISchema()` ask `/openapi/v2` for
//! (`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) and decode
//! with no JSON fallback.
//!
//! Only the messages the generated document uses are written: `Document`, `Info`, `Paths`,
//! `PathItem`, `Operation`, `Responses`, `Response`, `Definitions`, `Schema` and the
//! `Named*`/`Any` wrappers. An `Any` carries its value as YAML, and JSON is YAML, so it is
//! the value's JSON text. Field numbers are those of gnostic's `OpenAPIv2.proto`.

use serde_json::{Map, Value};

/// A protobuf message being written.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.0.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, bytes: &[u8]) {
        self.key(field, 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn message(&mut self, field: u32, message: Message) {
        self.bytes(field, &message.0);
    }

    fn bool(&mut self, field: u32, b: bool) {
        if b {
            self.key(field, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u32, n: i64) {
        self.key(field, 0);
        self.varint(n as u64);
    }

    fn double(&mut self, field: u32, f: f64) {
        self.key(field, 1);
        self.0.extend_from_slice(&f.to_le_bytes());
    }
}

/// The items of the array `fields[key]` (none when absent or not an array).
fn array<'a>(fields: &'a Map<String, Value>, key: &str) -> impl Iterator<Item = &'a Value> {
    fields
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// `Any { yaml = 2 }`.
fn any(value: &Value) -> Message {
    let mut m = Message::default();
    m.string(2, &value.to_string());
    m
}

/// `NamedAny { name = 1; value = 2 }` for each `x-` key of `fields`, as `field`.
fn vendor_extensions(m: &mut Message, field: u32, fields: &Map<String, Value>) {
    for (key, value) in fields.iter().filter(|(k, _)| k.starts_with("x-")) {
        let mut named = Message::default();
        named.string(1, key);
        named.message(2, any(value));
        m.message(field, named);
    }
}

/// `NamedX { name = 1; value = 2 }`.
fn named(name: &str, value: Message) -> Message {
    let mut m = Message::default();
    m.string(1, name);
    m.message(2, value);
    m
}

/// `Schema`.
fn schema(value: &Value) -> Message {
    let mut m = Message::default();
    let Value::Object(s) = value else {
        return m;
    };
    let text = |key: &str| s.get(key).and_then(Value::as_str).unwrap_or_default();
    m.string(1, text("$ref"));
    m.string(2, text("format"));
    m.string(3, text("title"));
    m.string(4, text("description"));
    if let Some(default) = s.get("default") {
        m.message(5, any(default));
    }
    for (field, key) in [(7, "maximum"), (9, "minimum")] {
        if let Some(f) = s.get(key).and_then(Value::as_f64) {
            m.double(field, f);
        }
    }
    m.bool(8, s.get("exclusiveMaximum") == Some(&Value::Bool(true)));
    m.bool(10, s.get("exclusiveMinimum") == Some(&Value::Bool(true)));
    for (field, key) in [
        (11, "maxLength"),
        (12, "minLength"),
        (14, "maxItems"),
        (15, "minItems"),
    ] {
        if let Some(n) = s.get(key).and_then(Value::as_i64) {
            m.int64(field, n);
        }
    }
    m.string(13, text("pattern"));
    for name in array(s, "required") {
        m.string(19, name.as_str().unwrap_or_default());
    }
    for value in array(s, "enum") {
        m.message(20, any(value));
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut item = Message::default();
            item.key(2, 0);
            item.varint(u64::from(*b));
            m.message(21, item);
        }
        Some(sub @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema(sub));
            m.message(21, item);
        }
        _ => {}
    }
    if let Some(ty) = s.get("type").and_then(Value::as_str) {
        let mut item = Message::default();
        item.string(1, ty);
        m.message(22, item);
    }
    if let Some(items) = s.get("items") {
        let mut item = Message::default();
        item.message(1, schema(items));
        m.message(23, item);
    }
    for sub in array(s, "allOf") {
        m.message(24, schema(sub));
    }
    if let Some(Value::Object(properties)) = s.get("properties") {
        let mut props = Message::default();
        for (name, sub) in properties {
            props.message(1, named(name, schema(sub)));
        }
        m.message(25, props);
    }
    vendor_extensions(&mut m, 31, s);
    m
}

/// `Operation` (tags, operationId, responses, vendor extensions).
fn operation(value: &Value) -> Message {
    let mut m = Message::default();
    let Value::Object(op) = value else {
        return m;
    };
    for tag in array(op, "tags") {
        m.string(1, tag.as_str().unwrap_or_default());
    }
    m.string(
        5,
        op.get("operationId")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    for parameter in array(op, "parameters") {
        // Query parameters only: `ParametersItem.parameter` → `Parameter.non_body_parameter`
        // → `NonBodyParameter.query_parameter_sub_schema` (in = 2, description = 3,
        // name = 4, type = 6).
        if parameter.get("in").and_then(Value::as_str) != Some("query") {
            continue;
        }
        let text = |key: &str| {
            parameter
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let mut query = Message::default();
        query.string(2, "query");
        query.string(3, text("description"));
        query.string(4, text("name"));
        query.string(6, text("type"));
        let mut non_body = Message::default();
        non_body.message(3, query);
        let mut param = Message::default();
        param.message(2, non_body);
        let mut item = Message::default();
        item.message(1, param);
        m.message(8, item);
    }
    if let Some(Value::Object(responses)) = op.get("responses") {
        let mut codes = Message::default();
        for (code, response) in responses {
            let mut r = Message::default();
            r.string(
                1,
                response
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            );
            if let Some(s) = response.get("schema") {
                let mut item = Message::default();
                item.message(1, schema(s));
                r.message(2, item);
            }
            let mut value = Message::default();
            value.message(1, r);
            codes.message(1, named(code, value));
        }
        m.message(9, codes);
    }
    vendor_extensions(&mut m, 13, op);
    m
}

/// `PathItem` (get = 2, put = 3, post = 4, delete = 5, patch = 8).
fn path_item(value: &Value) -> Message {
    let mut m = Message::default();
    for (field, method) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (8, "patch"),
    ] {
        if let Some(op) = value.get(method) {
            m.message(field, operation(op));
        }
    }
    m
}

/// Encodes a Swagger 2.0 JSON document as an `openapi.v2.Document`.
pub(crate) fn encode_document(doc: &Value) -> Vec<u8> {
    let mut m = Message::default();
    m.string(
        1,
        doc.get("swagger").and_then(Value::as_str).unwrap_or("2.0"),
    );
    if let Some(info) = doc.get("info") {
        let mut i = Message::default();
        i.string(
            1,
            info.get("title")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        i.string(
            2,
            info.get("version")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        m.message(2, i);
    }
    if let Some(Value::Object(paths)) = doc.get("paths") {
        let mut p = Message::default();
        for (path, item) in paths {
            p.message(2, named(path, path_item(item)));
        }
        m.message(8, p);
    }
    if let Some(Value::Object(defs)) = doc.get("definitions") {
        let mut d = Message::default();
        for (name, def) in defs {
            d.message(1, named(name, schema(def)));
        }
        m.message(9, d);
    }
    m.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn encodes_fields_with_gnostic_numbers_and_wire_types() {
        let doc = json!({"swagger": "2.0", "definitions": {"A": {"type": "string", "x-k": 1}}});
        let bytes = encode_document(&doc);
        // Document.swagger (1, length-delimited) = "2.0".
        assert_eq!(&bytes[..5], &[0x0a, 3, b'2', b'.', b'0']);
        // Document.definitions (9) holds NamedSchema{name "A", Schema{type (22) {"string"},
        // vendor_extension (31) {name "x-k", Any{yaml "1"}}}}.
        let schema = [
            0xb2, 0x01, 8, 0x0a, 6, b's', b't', b'r', b'i', b'n', b'g', // type = 22
            0xfa, 0x01, 10, 0x0a, 3, b'x', b'-', b'k', 0x12, 3, 0x12, 1, b'1', // x-k
        ];
        let mut named = vec![0x0a, 1, b'A', 0x12, schema.len() as u8];
        named.extend_from_slice(&schema);
        let mut definitions = vec![0x0a, named.len() as u8];
        definitions.extend_from_slice(&named);
        let mut expected = vec![0x4a, definitions.len() as u8];
        expected.extend_from_slice(&definitions);
        assert_eq!(&bytes[5..], expected.as_slice());
    }
}
