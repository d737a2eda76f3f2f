//! The compat suite's driver for the rdkafka crate (Rust bindings to librdkafka, which the crate builds from
//! the copy it bundles), in the agent protocol of compat/clients/agent.py (the loop is agent.rs).
//!
//! Usage: rdkafka-driver BOOTSTRAP TIMING_JSON
//!
//! How the crate is used, as its users do:
//! - produce: a FutureProducer (send_result per record, then flush and await each delivery).
//! - fetch, list_offsets, committed, partition_count: a BaseConsumer (assign, poll; fetch_watermarks,
//!   offsets_for_times, committed_offsets, fetch_metadata).
//! - admin: the crate's AdminClient (create/delete topics, create partitions, describe configs, delete
//!   records, delete groups); groups are described and listed through fetch_group_list
//!   (rd_kafka_list_groups), the crate's only way.
//! - members: a BaseConsumer polled on a thread of its own; librdkafka is thread-safe, so commit, seek,
//!   position and pause come from the request loop.
//! - transactions: a FutureProducer with transactional.id; the group metadata for
//!   send_offsets_to_transaction comes from a consumer with the group's id that never joins (as
//!   confluent-kafka's adapter does: librdkafka's only way to name a group).
//!
//! Unsupported, because the crate has no call for it: OffsetDelete, ListOffsets for the max timestamp
//! (KIP-734), config synonyms (DescribeConfigs is sent without include_synonyms), a group member's
//! group.instance.id in a group description (rd_kafka_list_groups does not carry it: shown as null).
//!
//! Errors become Kafka's names: a broker error by its code (kafka_errors.rs), librdkafka's own
//! timeouts as TIMEOUT, its unknown topic/partition as UNKNOWN_TOPIC_OR_PARTITION, its auto-offset-reset
//! error as NO_OFFSET_FOR_PARTITION, _FENCED as PRODUCER_FENCED, _STATE (a transactional call in the wrong
//! state) as CLIENT_REJECTED, _FATAL as the broker error that made it fatal; any other as
//! CLIENT:<librdkafka's name>.
//!
//! KIP-848 members log librdkafka's group debug (`cgrp`) to stderr, which a failing cell's report carries.

mod agent;
mod kafka_errors;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::admin::{
    AdminClient, AdminOptions, ConfigSource, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, Timestamp};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{json, Value};

use agent::{rec_json, unhex, CommitOffset, Failure, Inbox, Member, MemberOptions, OpResult, Req, Timing};

/// librdkafka's lines (rust-rdkafka passes them to the `log` crate, target "librdkafka") on stderr with the time
/// of day (UTC): without a logger they went nowhere, and a member that never finished a revocation left nothing.
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.target() == "librdkafka"
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let line = record.args().to_string();
        if line.contains("received op GET_ASSIGNMENT") {
            return; // the harness asking for the assignment, ten times a second
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let s = now.as_secs() % 86_400;
        eprintln!("{:02}:{:02}:{:02}.{:03} {line}", s / 3600, s / 60 % 60, s % 60, now.subsec_millis());
    }

    fn flush(&self) {}
}

fn main() {
    if log::set_logger(&StderrLog).is_ok() {
        log::set_max_level(log::LevelFilter::Debug);
    }
    let (bootstrap, timing) = agent::read_args();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("tokio runtime");
    let mut driver = RdkafkaDriver { bootstrap, timing, runtime, admin: None, txns: HashMap::new(), txns_opened: 0 };
    agent::serve(&mut driver);
}

// ---------------------------------------------------------------------------------------------- errors

/// Kafka's name (or the harness's local name) for a librdkafka error code.
fn code_name(code: RDKafkaErrorCode, fatal: Option<(RDKafkaErrorCode, String)>) -> String {
    use RDKafkaErrorCode as E;
    let local = match code {
        E::MessageTimedOut | E::OperationTimedOut | E::TimedOutQueue => "TIMEOUT",
        E::UnknownTopic | E::UnknownPartition => "UNKNOWN_TOPIC_OR_PARTITION",
        E::AutoOffsetReset | E::NoOffset => "NO_OFFSET_FOR_PARTITION",
        E::Fenced => "PRODUCER_FENCED", // librdkafka's own code for PRODUCER_FENCED / INVALID_PRODUCER_EPOCH
        E::State => "CLIENT_REJECTED",  // a transactional call in the wrong state, refused locally
        E::Fatal => {
            // librdkafka wraps the broker error that made it fatal: name that one
            return match fatal {
                Some((inner, _)) if inner != E::Fatal => code_name(inner, None),
                _ => "CLIENT:Fatal".into(),
            };
        }
        _ => "",
    };
    if !local.is_empty() {
        return local.into();
    }
    let n = code as i32;
    if n >= -1 {
        return kafka_errors::kafka_error_name(n).map(str::to_string).unwrap_or_else(|| format!("UNKNOWN_ERROR_{n}"));
    }
    format!("CLIENT:{code:?}")
}

/// A KafkaError as the harness's ClientError (fatal: the client's fatal error, for _FATAL).
fn failure(e: &KafkaError, fatal: Option<(RDKafkaErrorCode, String)>) -> Failure {
    let kind = format!("{e:?}").split('(').next().unwrap_or("KafkaError").to_string();
    match e {
        KafkaError::AdminOpCreation(_) | KafkaError::ClientConfig(..) | KafkaError::ClientCreation(_) => {
            // refused by librdkafka before anything was sent (a partition count out of range, ...)
            Failure::client("CLIENT_REJECTED", kind, e.to_string())
        }
        _ => match e.rdkafka_error_code() {
            Some(code) => Failure::client(code_name(code, fatal), kind, e.to_string()),
            None => Failure::client(format!("CLIENT:{kind}"), kind, e.to_string()),
        },
    }
}

fn fail(e: KafkaError) -> Failure {
    failure(&e, None)
}

/// librdkafka's notice on a consumer's queue that a broker connection was lost, or for a moment every one: it
/// reconnects (or moves to the new leader) by itself and tells only to inform; not a fetch's or a member's error.
fn connection_notice(e: &KafkaError) -> bool {
    matches!(
        e,
        KafkaError::MessageConsumption(RDKafkaErrorCode::BrokerTransportFailure | RDKafkaErrorCode::AllBrokersDown)
    )
}

fn code_failure(code: RDKafkaErrorCode, what: &str) -> Failure {
    Failure::client(code_name(code, None), "RDKafkaErrorCode", format!("{what}: {code}"))
}

// ---------------------------------------------------------------------------------------------- records

fn headers_of(r: &agent::Rec) -> OwnedHeaders {
    let mut headers = OwnedHeaders::new_with_capacity(r.h.len());
    for (name, value) in &r.h {
        let v = unhex(value);
        headers = headers.insert(Header { key: name, value: v.as_deref() });
    }
    headers
}

fn consumed<M: Message>(m: &M) -> Value {
    let headers: Vec<(String, Option<Vec<u8>>)> = match m.headers() {
        Some(hs) => hs.iter().map(|h| (h.key.to_string(), h.value.map(|v| v.to_vec()))).collect(),
        None => vec![],
    };
    let ts = match m.timestamp() {
        Timestamp::NotAvailable => None,
        Timestamp::CreateTime(t) | Timestamp::LogAppendTime(t) => Some(t),
    };
    rec_json(m.key(), m.payload(), &headers, m.partition(), m.offset(), ts)
}

fn offset_reset(reset: &str) -> &str {
    if reset == "none" { "error" } else { reset }
}

// ---------------------------------------------------------------------------------------------- the driver

struct RdkafkaDriver {
    bootstrap: String,
    timing: Timing,
    runtime: tokio::runtime::Runtime,
    admin: Option<AdminClient<DefaultClientContext>>,
    txns: HashMap<String, Txn>,
    txns_opened: usize,
}

struct Txn {
    producer: FutureProducer,
}

impl RdkafkaDriver {
    fn config(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        // librdkafka's critical lines only: brokers stopped under a client are expected
        c.set("bootstrap.servers", &self.bootstrap).set_log_level(RDKafkaLogLevel::Critical);
        c
    }

    fn consumer(&self, extra: &[(&str, &str)]) -> Result<BaseConsumer, Failure> {
        let mut c = self.config();
        c.set("group.id", "compat-unused").set("enable.auto.commit", "false").set("enable.partition.eof", "false");
        for (k, v) in extra {
            c.set(*k, *v);
        }
        if extra.iter().any(|(k, _)| *k == "debug") {
            c.set_log_level(RDKafkaLogLevel::Debug);
        }
        c.create().map_err(fail)
    }

    /// The admin client, made on first use.
    fn admin(&mut self) -> Result<&AdminClient<DefaultClientContext>, Failure> {
        if self.admin.is_none() {
            self.admin = Some(self.config().create().map_err(fail)?);
        }
        Ok(self.admin.as_ref().unwrap())
    }

    /// Runs an admin call to its end.
    fn admin_call<T, F: std::future::Future<Output = Result<T, KafkaError>>>(
        &mut self, call: impl FnOnce(&AdminClient<DefaultClientContext>, &AdminOptions) -> F,
        opts: AdminOptions) -> Result<T, Failure> {
        self.admin()?;
        let admin = self.admin.as_ref().unwrap();
        self.runtime.block_on(call(admin, &opts)).map_err(fail)
    }

    fn admin_options(&self) -> AdminOptions {
        AdminOptions::new().request_timeout(Some(self.timing.op())).operation_timeout(Some(self.timing.op()))
    }

    fn produce(&self, req: &Req) -> OpResult {
        let topic = req.str("topic");
        let recs: Vec<agent::Rec> = req.get("recs");
        let codec = req.str("codec");
        let one_batch = req.flag("one_batch");
        let mut c = self.config();
        c.set("compression.type", &codec)
            .set("linger.ms", if one_batch { "1000" } else { "0" })
            .set("message.timeout.ms", self.timing.op_ms().to_string())
            .set("topic.metadata.propagation.max.ms", self.timing.metadata_ms.to_string());
        let idempotent: Option<bool> = req.opt("idempotent");
        if idempotent != Some(true) {
            c.set("retries", "0");
        }
        if let Some(i) = idempotent {
            c.set("enable.idempotence", i.to_string());
        }
        if one_batch {
            c.set("batch.num.messages", recs.len().max(1).to_string());
        }
        if let Some(n) = req.opt::<i64>("max_request_bytes") {
            c.set("message.max.bytes", n.to_string());
        }
        if let Some(acks) = req.opt::<i64>("acks") {
            c.set("acks", acks.to_string());
        }
        let producer: FutureProducer = c.create().map_err(fail)?;
        let result = self.send_all(&producer, &topic, &recs, true);
        producer.purge(rdkafka::producer::PurgeConfig::default().queue().inflight());
        result
    }

    /// Sends the records in order, waits for every delivery: [[partition, offset]...].
    fn send_all(&self, producer: &FutureProducer, topic: &str, recs: &[agent::Rec], with_ts: bool) -> OpResult {
        let keys: Vec<(Option<Vec<u8>>, Option<Vec<u8>>)> = recs.iter().map(|r| (unhex(&r.k), unhex(&r.v))).collect();
        let mut futures = Vec::with_capacity(recs.len());
        for (r, (k, v)) in recs.iter().zip(&keys) {
            let mut record: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic).headers(headers_of(r));
            record.key = k.as_deref();
            record.payload = v.as_deref();
            record.partition = r.p;
            if with_ts {
                record.timestamp = r.ts;
            }
            match producer.send_result(record) {
                Ok(f) => futures.push(f),
                Err((e, _)) => return Err(failure(&e, producer.client().fatal_error())),
            }
        }
        let _ = producer.flush(self.timing.op() + Duration::from_secs(5));
        let mut out = Vec::with_capacity(futures.len());
        for (i, f) in futures.into_iter().enumerate() {
            let delivery = self.runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(1), f).await
            });
            match delivery {
                Ok(Ok(Ok(d))) => out.push(json!([d.partition, d.offset])),
                Ok(Ok(Err((e, _)))) => return Err(failure(&e, producer.client().fatal_error())),
                _ => return Err(Failure::client("TIMEOUT", "flush", format!("no delivery report for record {i}"))),
            }
        }
        Ok(Value::Array(out))
    }

    fn fetch(&self, req: &Req) -> OpResult {
        let (topic, partition, offset, count) =
            (req.str("topic"), req.get::<i32>("partition"), req.get::<i64>("offset"), req.get::<usize>("count"));
        let reset = req.str("reset");
        let isolation: Option<String> = req.opt("isolation");
        let mut extra = vec![("auto.offset.reset", offset_reset(&reset))];
        if let Some(i) = &isolation {
            extra.push(("isolation.level", i));
        }
        let consumer = self.consumer(&extra)?;
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&topic, partition, Offset::Offset(offset)).map_err(fail)?;
        consumer.assign(&tpl).map_err(fail)?;
        let wait = req.opt::<f64>("wait_s").map(Duration::from_secs_f64).unwrap_or_else(|| self.timing.fetch());
        let deadline = Instant::now() + wait;
        let mut out = vec![];
        while out.len() < count && Instant::now() < deadline {
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(m)) => out.push(consumed(&m)),
                // a notice, not the fetch's failure: records it then cannot read leave the cell short
                Some(Err(e)) if connection_notice(&e) => {}
                Some(Err(e)) => return Err(fail(e)),
                None => {}
            }
        }
        Ok(Value::Array(out))
    }

    fn list_offsets(&self, req: &Req) -> OpResult {
        let (topic, partition) = (req.str("topic"), req.get::<i32>("partition"));
        let isolation: Option<String> = req.opt("isolation");
        let extra: Vec<(&str, &str)> = isolation.iter().map(|i| ("isolation.level", i.as_str())).collect();
        let consumer = self.consumer(&extra)?;
        let spec = req.0.get("spec").cloned().unwrap_or(Value::Null);
        match spec {
            Value::String(s) if s == "earliest" || s == "latest" => {
                let (low, high) = consumer.fetch_watermarks(&topic, partition, self.timing.op()).map_err(fail)?;
                Ok(json!(if s == "earliest" { low } else { high }))
            }
            Value::String(s) if s == "max_timestamp" => {
                Err(Failure::unsupported("the rdkafka crate has no ListOffsets for the max timestamp (KIP-734)"))
            }
            Value::Number(ts) => {
                let mut tpl = TopicPartitionList::new();
                tpl.add_partition_offset(&topic, partition, Offset::Offset(ts.as_i64().unwrap())).map_err(fail)?;
                let got = consumer.offsets_for_times(tpl, self.timing.op()).map_err(fail)?;
                let elem = got.find_partition(&topic, partition)
                    .ok_or_else(|| Failure::Harness("offsets_for_times answered no such partition".into()))?;
                elem.error().map_err(fail)?;
                Ok(match elem.offset() {
                    Offset::Offset(n) if n >= 0 => json!(n),
                    _ => Value::Null,
                })
            }
            other => Err(Failure::Harness(format!("unknown offset spec {other}"))),
        }
    }

    fn create_topic(&mut self, req: &Req) -> OpResult {
        let topic = req.str("topic");
        let configs: HashMap<String, String> = req.opt("configs").unwrap_or_default();
        let mut new_topic = NewTopic::new(&topic, req.get("partitions"), TopicReplication::Fixed(req.get("replication_factor")));
        for (k, v) in &configs {
            new_topic = new_topic.set(k, v);
        }
        let opts = self.admin_options().validate_only(req.flag("validate_only"));
        topic_results(self.admin_call(|a, o| a.create_topics([&new_topic], o), opts)?)
    }

    fn delete_topic(&mut self, req: &Req) -> OpResult {
        let topic = req.str("topic");
        let opts = self.admin_options();
        topic_results(self.admin_call(|a, o| a.delete_topics(&[&topic], o), opts)?)
    }

    fn create_partitions(&mut self, req: &Req) -> OpResult {
        let topic = req.str("topic");
        let count: i64 = req.get("count");
        let new = NewPartitions::new(&topic, count.max(0) as usize);
        let opts = self.admin_options().validate_only(req.flag("validate_only"));
        topic_results(self.admin_call(|a, o| a.create_partitions([&new], o), opts)?)
    }

    fn describe_configs(&mut self, req: &Req) -> OpResult {
        let name = req.str("name");
        let keys: Vec<String> = req.get("keys");
        let resource = if req.str("resource") == "topic" {
            ResourceSpecifier::Topic(&name)
        } else {
            ResourceSpecifier::Broker(name.parse().map_err(|_| Failure::Harness(format!("broker id {name}")))?)
        };
        let opts = self.admin_options();
        let results = self.admin_call(|a, o| a.describe_configs([&resource], o), opts)?;
        let mut out = serde_json::Map::new();
        for r in results {
            let r = r.map_err(|code| code_failure(code, "describe_configs"))?;
            for e in r.entries.iter().filter(|e| keys.contains(&e.name)) {
                let source = match e.source {
                    ConfigSource::DynamicTopic => "DYNAMIC_TOPIC_CONFIG",
                    ConfigSource::DynamicBroker => "DYNAMIC_BROKER_CONFIG",
                    ConfigSource::DynamicDefaultBroker => "DYNAMIC_DEFAULT_BROKER_CONFIG",
                    ConfigSource::StaticBroker => "STATIC_BROKER_CONFIG",
                    ConfigSource::Default => "DEFAULT_CONFIG",
                    ConfigSource::Unknown => "UNKNOWN",
                };
                out.insert(e.name.clone(), json!({"value": e.value, "source": source, "read_only": e.is_read_only,
                                                  "sensitive": e.is_sensitive, "synonyms": null}));
            }
        }
        Ok(Value::Object(out))
    }

    fn delete_records(&mut self, req: &Req) -> OpResult {
        let (topic, partition, before) = (req.str("topic"), req.get::<i32>("partition"), req.get::<i64>("before"));
        let mut tpl = TopicPartitionList::new();
        let offset = if before < 0 { Offset::End } else { Offset::Offset(before) };
        tpl.add_partition_offset(&topic, partition, offset).map_err(fail)?;
        let opts = self.admin_options();
        let got = self.admin_call(|a, o| a.delete_records(&tpl, o), opts)?;
        let elem = got.find_partition(&topic, partition)
            .ok_or_else(|| Failure::Harness("delete_records answered no such partition".into()))?;
        elem.error().map_err(fail)?;
        match elem.offset() {
            Offset::Offset(n) => Ok(json!(n)),
            other => Err(Failure::Harness(format!("delete_records answered {other:?}"))),
        }
    }

    fn describe_group(&self, req: &Req) -> OpResult {
        let group = req.str("group");
        let consumer = self.consumer(&[])?;
        let list = consumer.fetch_group_list(Some(&group), self.timing.op()).map_err(fail)?;
        // rd_kafka_list_groups describes only the groups ListGroups lists: one that does not exist is absent
        let g = list.groups().iter().find(|g| g.name() == group)
            .ok_or_else(|| Failure::client("GROUP_ID_NOT_FOUND", "fetch_group_list", "the group is not listed"))?;
        let mut members = vec![];
        for m in g.members() {
            let mut parts = m.assignment().map(assigned_partitions).unwrap_or_default();
            parts.sort();
            members.push(json!({"assignment": parts, "instance_id": null}));
        }
        Ok(json!({"state": g.state(), "protocol_type": g.protocol_type(), "protocol": g.protocol(), "members": members}))
    }

    fn list_groups(&self) -> OpResult {
        let consumer = self.consumer(&[])?;
        let list = consumer.fetch_group_list(None, self.timing.op()).map_err(fail)?;
        let mut out = serde_json::Map::new();
        for g in list.groups() {
            let state = if g.state().is_empty() { Value::Null } else { json!(g.state()) };
            out.insert(g.name().to_string(), json!({"protocol_type": g.protocol_type(), "state": state}));
        }
        Ok(Value::Object(out))
    }

    fn delete_group(&mut self, req: &Req) -> OpResult {
        let group = req.str("group");
        let opts = self.admin_options();
        let results = self.admin_call(|a, o| a.delete_groups(&[&group], o), opts)?;
        for r in results {
            r.map_err(|(_, code)| code_failure(code, "delete_groups"))?;
        }
        Ok(Value::Null)
    }

    fn partition_count(&self, req: &Req) -> OpResult {
        let topic = req.str("topic");
        let consumer = self.consumer(&[])?;
        let md = consumer.fetch_metadata(Some(&topic), self.timing.op()).map_err(fail)?;
        let t = md.topics().iter().find(|t| t.name() == topic)
            .ok_or_else(|| Failure::client("UNKNOWN_TOPIC_OR_PARTITION", "Metadata", "not in metadata"))?;
        if let Some(err) = t.error() {
            return Err(code_failure(RDKafkaErrorCode::from(err), "metadata"));
        }
        Ok(json!(t.partitions().len()))
    }

    fn committed(&self, req: &Req) -> OpResult {
        let (group, topic, partitions) = (req.str("group"), req.str("topic"), req.get::<i32>("partitions"));
        let consumer = self.consumer(&[("group.id", &group)])?;
        let mut tpl = TopicPartitionList::new();
        for p in 0..partitions {
            tpl.add_partition(&topic, p);
        }
        let got = consumer.committed_offsets(tpl, self.timing.op()).map_err(fail)?;
        let mut out = serde_json::Map::new();
        for e in got.elements() {
            if let Offset::Offset(o) = e.offset() {
                if o >= 0 {
                    out.insert(e.partition().to_string(), json!([o, e.metadata()]));
                }
            }
        }
        Ok(Value::Object(out))
    }

    // --- transactions ------------------------------------------------------------------------------

    fn txn(&self, req: &Req) -> Result<&Txn, Failure> {
        let x = req.str("x");
        self.txns.get(&x).ok_or_else(|| Failure::Harness(format!("no transactional producer {x}")))
    }

    fn txn_call(&self, req: &Req, f: impl FnOnce(&FutureProducer) -> Result<(), KafkaError>) -> OpResult {
        let txn = self.txn(req)?;
        f(&txn.producer).map_err(|e| failure(&e, txn.producer.client().fatal_error()))?;
        Ok(Value::Null)
    }

    fn txn_op(&mut self, op: &str, req: &Req) -> OpResult {
        let t = self.timing.op();
        match op {
            "txn_open" => {
                let mut c = self.config();
                c.set("transactional.id", req.str("transactional_id")).set("linger.ms", "0")
                    .set("message.timeout.ms", self.timing.op_ms().to_string());
                if let Some(ms) = req.opt::<i64>("timeout_ms") {
                    c.set("transaction.timeout.ms", ms.to_string());
                }
                let producer: FutureProducer = c.create().map_err(fail)?;
                producer.init_transactions(t).map_err(|e| failure(&e, producer.client().fatal_error()))?;
                self.txns_opened += 1;
                let id = format!("x{}", self.txns_opened);
                self.txns.insert(id.clone(), Txn { producer });
                Ok(json!(id))
            }
            "txn_begin" => self.txn_call(req, |p| p.begin_transaction()),
            "txn_send" => {
                let txn = self.txn(req)?;
                let recs: Vec<agent::Rec> = req.get("recs");
                self.send_all(&txn.producer, &req.str("topic"), &recs, false)
            }
            "txn_send_offsets" => {
                let group = req.str("group");
                let offsets: Vec<(String, i32, i64)> = req.get("offsets");
                let consumer = self.consumer(&[("group.id", &group)])?;
                let metadata = consumer.group_metadata()
                    .ok_or_else(|| Failure::Harness("the consumer has no group metadata".into()))?;
                let mut tpl = TopicPartitionList::new();
                for (topic, p, o) in &offsets {
                    tpl.add_partition_offset(topic, *p, Offset::Offset(*o)).map_err(fail)?;
                }
                self.txn_call(req, |p| p.send_offsets_to_transaction(&tpl, &metadata, t))
            }
            "txn_commit" => self.txn_call(req, |p| p.commit_transaction(t)),
            "txn_abort" => self.txn_call(req, |p| p.abort_transaction(t)),
            "txn_close" => {
                if let Some(txn) = self.txns.remove(&req.str("x")) {
                    txn.producer.purge(rdkafka::producer::PurgeConfig::default().queue().inflight());
                    let _ = txn.producer.flush(Duration::ZERO);
                }
                Ok(Value::Null)
            }
            _ => Err(Failure::unsupported(format!("this driver has no {op}"))),
        }
    }
}

/// The first failed topic of an admin answer, or null.
fn topic_results(results: Vec<Result<String, (String, RDKafkaErrorCode)>>) -> OpResult {
    for r in results {
        r.map_err(|(topic, code)| code_failure(code, &topic))?;
    }
    Ok(Value::Null)
}

/// The partitions of a consumer protocol Assignment (version, [topic, [partition]], user data), every
/// topic's together, as the other drivers report them.
fn assigned_partitions(b: &[u8]) -> Vec<i32> {
    fn take<const N: usize>(b: &[u8], pos: &mut usize) -> Option<[u8; N]> {
        let out = b.get(*pos..*pos + N)?.try_into().ok()?;
        *pos += N;
        Some(out)
    }
    let mut out = vec![];
    let mut pos = 2; // the version
    let parse = |out: &mut Vec<i32>, pos: &mut usize| -> Option<()> {
        let topics = i32::from_be_bytes(take::<4>(b, pos)?);
        for _ in 0..topics.max(0) {
            let len = i16::from_be_bytes(take::<2>(b, pos)?);
            *pos += len.max(0) as usize;
            let n = i32::from_be_bytes(take::<4>(b, pos)?);
            for _ in 0..n.max(0) {
                out.push(i32::from_be_bytes(take::<4>(b, pos)?));
            }
        }
        Some(())
    };
    let _ = parse(&mut out, &mut pos);
    out
}

impl agent::Driver for RdkafkaDriver {
    fn op(&mut self, op: &str, req: &Req) -> Option<OpResult> {
        Some(match op {
            "produce" => self.produce(req),
            "fetch" => self.fetch(req),
            "list_offsets" => self.list_offsets(req),
            "create_topic" => self.create_topic(req),
            "partition_count" => self.partition_count(req),
            "delete_topic" => self.delete_topic(req),
            "create_partitions" => self.create_partitions(req),
            "describe_configs" => self.describe_configs(req),
            "delete_records" => self.delete_records(req),
            "describe_group" => self.describe_group(req),
            "list_groups" => self.list_groups(),
            "delete_group" => self.delete_group(req),
            "delete_offsets" => Err(Failure::unsupported(
                "the rdkafka crate has no OffsetDelete (deleting a group's committed offsets)")),
            "committed" => self.committed(req),
            _ if op.starts_with("txn_") => self.txn_op(op, req),
            _ => return None,
        })
    }

    fn open_member(&mut self, o: MemberOptions) -> Result<Box<dyn Member>, Failure> {
        let session = o.session_timeout_ms;
        let heartbeat = self.timing.heartbeat_ms.min((session / 3).max(1));
        let mut extra = vec![
            ("group.id".to_string(), o.group.clone()),
            ("auto.offset.reset".into(), offset_reset(&o.offset_reset).to_string()),
            ("enable.partition.eof".into(), "true".into()),
        ];
        match o.group_protocol.as_deref() {
            // KIP-848: the broker sets the session and heartbeat interval (librdkafka ignores its own)
            // and they log librdkafka's group debug: twice a member on Kafka 4.4 never finished giving up the
            // partitions a second member's join took from it, and neither broker's log told why
            Some("consumer") => {
                extra.push(("group.protocol".into(), "consumer".into()));
                extra.push(("debug".into(), "cgrp".into()));
            }
            Some(other) => return Err(Failure::unsupported(format!("group.protocol={other}"))),
            None => {
                extra.push(("session.timeout.ms".into(), session.to_string()));
                extra.push(("heartbeat.interval.ms".into(), heartbeat.to_string()));
            }
        }
        if let Some(id) = &o.instance_id {
            extra.push(("group.instance.id".into(), id.clone()));
        }
        let extra: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let consumer = Arc::new(self.consumer(&extra)?);
        match &o.assign {
            None => consumer.subscribe(&[&o.topic]).map_err(fail)?,
            Some(parts) => {
                let mut tpl = TopicPartitionList::new();
                for p in parts {
                    tpl.add_partition(&o.topic, *p);
                }
                consumer.assign(&tpl).map_err(fail)?;
            }
        }
        Ok(Box::new(PolledMember::start(consumer, o.assign.is_some(), self.timing.op())))
    }

    fn close(&mut self) {
        for (_, txn) in self.txns.drain() {
            txn.producer.purge(rdkafka::producer::PurgeConfig::default().queue().inflight());
        }
        self.admin = None;
    }
}

// ---------------------------------------------------------------------------------------------- members

/// A BaseConsumer polled on its own thread; what it receives goes to the inbox.
struct PolledMember {
    consumer: Arc<BaseConsumer>,
    inbox: Arc<Inbox>,
    eof: Arc<Mutex<HashMap<(String, i32), i64>>>,
    assigned_manually: bool,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    op_timeout: Duration,
}

impl PolledMember {
    fn start(consumer: Arc<BaseConsumer>, assigned_manually: bool, op_timeout: Duration) -> PolledMember {
        let inbox = Arc::new(Inbox::default());
        let eof = Arc::new(Mutex::new(HashMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (consumer, inbox, eof, stop) = (consumer.clone(), inbox.clone(), eof.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match consumer.poll(Duration::from_millis(100)) {
                        Some(Ok(m)) => {
                            eof.lock().unwrap().remove(&(m.topic().to_string(), m.partition()));
                            inbox.add(consumed(&m));
                        }
                        // enable.partition.eof: where the consumer stands before it has read anything
                        Some(Err(KafkaError::PartitionEOF(p))) => {
                            if let Ok(pos) = consumer.position() {
                                for e in pos.elements().iter().filter(|e| e.partition() == p) {
                                    if let Offset::Offset(o) = e.offset() {
                                        eof.lock().unwrap().insert((e.topic().to_string(), p), o);
                                    }
                                }
                            }
                        }
                        Some(Err(e)) if connection_notice(&e) => {}
                        Some(Err(e)) => {
                            inbox.add_error(failure(&e, consumer.client().fatal_error()));
                            std::thread::sleep(Duration::from_millis(100));
                        }
                        None => {}
                    }
                    if let Ok(tpl) = consumer.assignment() {
                        inbox.set_assignment(tpl.elements().iter().map(|e| (e.topic().to_string(), e.partition())));
                    }
                }
            })
        };
        PolledMember { consumer, inbox, eof, assigned_manually, stop, thread: Some(thread), op_timeout }
    }
}

impl Member for PolledMember {
    fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    fn commit(&self, offsets: Vec<CommitOffset>) -> Result<(), Failure> {
        let mut tpl = TopicPartitionList::new();
        for o in &offsets {
            let mut e = tpl.add_partition(&o.topic, o.partition);
            e.set_offset(Offset::Offset(o.offset)).map_err(fail)?;
            if let Some(m) = &o.metadata {
                e.set_metadata(m);
            }
        }
        self.consumer.commit(&tpl, CommitMode::Sync).map_err(|e| failure(&e, None))
    }

    /// librdkafka's position is the last consumed offset + 1 (invalid before any message); until then the
    /// partition-EOF event tells where the consumer stands.
    fn position(&self, topic: &str, partition: i32) -> Result<Option<i64>, Failure> {
        let pos = self.consumer.position().map_err(fail)?;
        if let Some(e) = pos.find_partition(topic, partition) {
            if let Offset::Offset(o) = e.offset() {
                if o >= 0 {
                    return Ok(Some(o));
                }
            }
        }
        Ok(self.eof.lock().unwrap().get(&(topic.to_string(), partition)).copied())
    }

    fn seek(&self, topic: &str, partition: i32, offset: i64) -> Result<(), Failure> {
        if self.assigned_manually {
            // a manual assignment: assign again from there (seek needs a running fetcher)
            let current = self.consumer.assignment().map_err(fail)?;
            let mut tpl = TopicPartitionList::new();
            for e in current.elements() {
                let at = if e.topic() == topic && e.partition() == partition { Offset::Offset(offset) } else { Offset::Stored };
                tpl.add_partition_offset(e.topic(), e.partition(), at).map_err(fail)?;
            }
            return self.consumer.assign(&tpl).map_err(fail);
        }
        self.consumer.seek(topic, partition, Offset::Offset(offset), self.op_timeout).map_err(fail)
    }

    fn pause(&self, tps: Vec<(String, i32)>, paused: bool) -> Result<(), Failure> {
        let mut tpl = TopicPartitionList::new();
        for (t, p) in &tps {
            tpl.add_partition(t, *p);
        }
        if paused { self.consumer.pause(&tpl) } else { self.consumer.resume(&tpl) }.map_err(fail)
    }

    /// Leaves the group (LeaveGroup, unless static) as the consumer closes.
    fn close(&mut self) -> Result<(), Failure> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if self.consumer.close_queue().is_ok() {
            let deadline = Instant::now() + self.op_timeout;
            while !self.consumer.closed() && Instant::now() < deadline {
                let _ = self.consumer.poll(Duration::from_millis(100));
            }
        }
        Ok(())
    }
}
