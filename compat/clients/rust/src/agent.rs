//! The Rust side of the compat suite's agent protocol (compat/clients/agent.py): JSON lines on stdin, one
//! answer per request on stdout, in order. The driver (main.rs) gives `serve` its ops (the Client methods,
//! by the protocol's op names) and a way to open members; this module owns the loop, the member table and
//! the error shapes, as compat/clients/go/agent does for the Go drivers.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::{json, Value};

/// What an op can fail with, kept apart as the harness shows them differently.
#[derive(Debug)]
pub enum Failure {
    /// The client reported an error: Kafka's error name (or TIMEOUT, NO_OFFSET_FOR_PARTITION,
    /// CLIENT_REJECTED, CLIENT:<name>), the client's type name and its message.
    Client { code: String, kind: String, message: String },
    /// The client has no way to do this (the cell shows "unsupported", with why).
    Unsupported(String),
    /// The driver itself failed.
    Harness(String),
}

impl Failure {
    pub fn client(code: impl Into<String>, kind: impl Into<String>, message: impl Into<String>) -> Failure {
        Failure::Client { code: code.into(), kind: kind.into(), message: message.into() }
    }

    pub fn unsupported(why: impl Into<String>) -> Failure {
        Failure::Unsupported(why.into())
    }
}

pub type OpResult = Result<Value, Failure>;

/// compat.clients.base.Timing: the waits the harness chose for this broker.
#[derive(Debug, Clone, Deserialize)]
pub struct Timing {
    pub op_s: f64,
    pub fetch_s: f64,
    #[allow(dead_code)] // the harness waits for groups itself
    pub group_s: f64,
    pub heartbeat_ms: i64,
    pub metadata_ms: i64,
}

impl Timing {
    pub fn op(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.op_s)
    }

    pub fn op_ms(&self) -> i64 {
        (self.op_s * 1000.0) as i64
    }

    pub fn fetch(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.fetch_s)
    }
}

/// A record in the protocol's form: bytes as hex, null as None.
#[derive(Debug, Clone, Deserialize)]
pub struct Rec {
    pub k: Option<String>,
    pub v: Option<String>,
    #[serde(default)]
    pub h: Vec<(String, Option<String>)>,
    pub p: Option<i32>,
    #[allow(dead_code)] // only consumed records carry one
    #[serde(default)]
    pub o: i64,
    pub ts: Option<i64>,
}

/// The bytes of a protocol hex string (None for null).
pub fn unhex(s: &Option<String>) -> Option<Vec<u8>> {
    s.as_ref().map(|s| hex::decode(s).expect("bad hex from the harness"))
}

fn to_hex(b: Option<&[u8]>) -> Value {
    match b {
        Some(b) => Value::String(hex::encode(b)),
        None => Value::Null,
    }
}

/// A consumed record in the protocol's form (ts None: the record has none).
pub fn rec_json(key: Option<&[u8]>, value: Option<&[u8]>, headers: &[(String, Option<Vec<u8>>)], partition: i32,
                offset: i64, ts: Option<i64>) -> Value {
    let h: Vec<Value> = headers.iter().map(|(k, v)| json!([k, to_hex(v.as_deref())])).collect();
    json!({"k": to_hex(key), "v": to_hex(value), "h": h, "p": partition, "o": offset, "ts": ts})
}

/// One request's arguments, by name.
pub struct Req(pub serde_json::Map<String, Value>);

impl Req {
    /// The argument, decoded (None when absent or null).
    pub fn opt<T: for<'de> Deserialize<'de>>(&self, k: &str) -> Option<T> {
        match self.0.get(k) {
            None | Some(Value::Null) => None,
            Some(v) => Some(serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("argument {k}: {e}"))),
        }
    }

    /// The argument, which the harness always sends.
    pub fn get<T: for<'de> Deserialize<'de>>(&self, k: &str) -> T {
        self.opt(k).unwrap_or_else(|| panic!("argument {k} missing"))
    }

    pub fn str(&self, k: &str) -> String {
        self.get(k)
    }

    pub fn flag(&self, k: &str) -> bool {
        self.opt(k).unwrap_or(false)
    }
}

/// What member_open carries besides the group and topic.
pub struct MemberOptions {
    pub group: String,
    pub topic: String,
    pub assign: Option<Vec<i32>>,
    pub offset_reset: String,
    pub instance_id: Option<String>,
    pub session_timeout_ms: i64,
    /// None: the classic protocol; Some("consumer"): KIP-848's.
    pub group_protocol: Option<String>,
}

/// One offset a member is asked to commit.
pub struct CommitOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub metadata: Option<String>,
}

/// One consumer with a group.id, polling on its own thread (so it takes part in rebalances).
pub trait Member {
    fn inbox(&self) -> &Inbox;
    fn commit(&self, offsets: Vec<CommitOffset>) -> Result<(), Failure>;
    fn position(&self, topic: &str, partition: i32) -> Result<Option<i64>, Failure>;
    fn seek(&self, topic: &str, partition: i32, offset: i64) -> Result<(), Failure>;
    fn pause(&self, tps: Vec<(String, i32)>, paused: bool) -> Result<(), Failure>;
    fn close(&mut self) -> Result<(), Failure>;
}

/// The client pointed at one cluster.
pub trait Driver {
    /// The op (produce, fetch, committed, list_offsets, txn_...), or None when the driver has no such op.
    fn op(&mut self, op: &str, req: &Req) -> Option<OpResult>;
    fn open_member(&mut self, o: MemberOptions) -> Result<Box<dyn Member>, Failure>;
    fn close(&mut self);
}

/// What a polling member keeps for the harness: records received, errors seen, the partitions it holds.
/// Shared by the poll thread and the request loop.
#[derive(Default)]
pub struct Inbox {
    records: Mutex<Vec<Value>>,
    errors: Mutex<Vec<Failure>>,
    assigned: Mutex<BTreeSet<(String, i32)>>,
}

impl Inbox {
    pub fn add(&self, rec: Value) {
        self.records.lock().unwrap().push(rec);
    }

    pub fn add_error(&self, e: Failure) {
        self.errors.lock().unwrap().push(e);
    }

    pub fn set_assignment(&self, tps: impl IntoIterator<Item = (String, i32)>) {
        *self.assigned.lock().unwrap() = tps.into_iter().collect();
    }

    fn assignment(&self) -> Value {
        json!(self.assigned.lock().unwrap().iter().map(|(t, p)| json!([t, p])).collect::<Vec<_>>())
    }

    fn take(&self) -> Value {
        Value::Array(std::mem::take(&mut *self.records.lock().unwrap()))
    }

    fn take_errors(&self) -> Value {
        let errs = std::mem::take(&mut *self.errors.lock().unwrap());
        Value::Array(errs.into_iter().map(|e| match e {
            Failure::Client { code, kind, message } => json!({"code": code, "type": kind, "message": message}),
            Failure::Unsupported(why) | Failure::Harness(why) =>
                json!({"code": "HARNESS", "type": "driver", "message": why}),
        }).collect())
    }
}

/// Reads BOOTSTRAP TIMING_JSON from the command line.
pub fn read_args() -> (String, Timing) {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: rdkafka-driver BOOTSTRAP TIMING_JSON");
        std::process::exit(2);
    }
    let timing = serde_json::from_str(&args[2]).unwrap_or_else(|e| {
        eprintln!("timing: {e}");
        std::process::exit(2)
    });
    (args[1].clone(), timing)
}

/// Answers requests from stdin with `driver` until "quit" or the end of input.
pub fn serve(driver: &mut dyn Driver) {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut members: HashMap<String, Box<dyn Member>> = HashMap::new();
    let mut opened = 0;
    for line in stdin.lock().lines() {
        let line = line.expect("reading stdin");
        let mut req: serde_json::Map<String, Value> = serde_json::from_str(&line).unwrap_or_else(|e| {
            eprintln!("bad request: {e}");
            std::process::exit(2)
        });
        let id = req.remove("id").unwrap_or(Value::Null);
        let op = match req.remove("op") {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        if op == "quit" {
            for m in members.values_mut() {
                let _ = m.close();
            }
            driver.close();
            writeln!(out, "{}", json!({"id": id, "ok": true, "result": null})).unwrap();
            out.flush().unwrap();
            return;
        }
        let req = Req(req);
        // a panic in the driver is the harness's error, not the client's answer
        let result = catch_unwind(AssertUnwindSafe(|| handle(driver, &mut members, &mut opened, &op, &req)))
            .unwrap_or_else(|p| {
                let why = p.downcast_ref::<String>().cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                Err(Failure::Harness(format!("panic in {op}: {why}")))
            });
        let answer = match result {
            Ok(v) => json!({"id": id, "ok": true, "result": v}),
            Err(Failure::Client { code, kind, message }) =>
                json!({"id": id, "ok": false, "error": {"code": code, "type": kind, "message": message}}),
            Err(Failure::Unsupported(why)) => json!({"id": id, "ok": false, "unsupported": why}),
            Err(Failure::Harness(why)) => json!({"id": id, "ok": false, "harness": why}),
        };
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
    for m in members.values_mut() {
        let _ = m.close();
    }
    driver.close();
}

fn handle(driver: &mut dyn Driver, members: &mut HashMap<String, Box<dyn Member>>, opened: &mut usize, op: &str,
          req: &Req) -> OpResult {
    if let Some(result) = driver.op(op, req) {
        return result;
    }
    if op == "member_open" {
        let o = MemberOptions {
            group: req.str("group"),
            topic: req.str("topic"),
            assign: req.opt("assign"),
            offset_reset: req.str("offset_reset"),
            instance_id: req.opt("instance_id"),
            session_timeout_ms: req.get("session_timeout_ms"),
            group_protocol: req.opt("group_protocol"),
        };
        let m = driver.open_member(o)?;
        *opened += 1;
        let id = format!("m{opened}");
        members.insert(id.clone(), m);
        return Ok(json!(id));
    }
    if !op.starts_with("member_") {
        return Err(Failure::unsupported(format!("this driver has no {op}")));
    }
    let mid = req.str("m");
    let m = members.get_mut(&mid).ok_or_else(|| Failure::Harness(format!("no member {mid}")))?;
    match op {
        "member_assignment" => Ok(m.inbox().assignment()),
        "member_take" => Ok(m.inbox().take()),
        "member_errors" => Ok(m.inbox().take_errors()),
        "member_commit" => {
            let raw: Vec<(String, i32, i64, Option<String>)> = req.get("offsets");
            let offsets = raw.into_iter()
                .map(|(topic, partition, offset, metadata)| CommitOffset { topic, partition, offset, metadata })
                .collect();
            m.commit(offsets).map(|_| Value::Null)
        }
        "member_position" => m.position(&req.str("topic"), req.get("partition")).map(|p| json!(p)),
        "member_seek" => m.seek(&req.str("topic"), req.get("partition"), req.get("offset")).map(|_| Value::Null),
        "member_pause" | "member_resume" => m.pause(req.get("tps"), op == "member_pause").map(|_| Value::Null),
        "member_close" => m.close().map(|_| Value::Null),
        _ => Err(Failure::unsupported(format!("this driver has no {op}"))),
    }
}
