// The compat suite's driver for KafkaJS (the npm package kafkajs, pure JavaScript), in the agent protocol
// of compat/clients/agent.py (the loop is agent.js).
//
// Usage: node kafkajs.js BOOTSTRAP TIMING_JSON   (NODE_PATH: the node_modules .ci/install.sh made)
//
// How KafkaJS is used, as its users do:
// - produce: one producer.send() per record (each answers its partition and base offset), or one send()
//   of all records for one batch. Codecs: gzip is built in, snappy is kafkajs-snappy; lz4 and zstd need
//   native add-ons, so they are unsupported here.
// - fetch: KafkaJS consumers always join a group (there is no assign()): a throwaway group, subscribe,
//   seek to the offset once running; fromBeginning is the reset policy.
// - createTopics() resolves false for a topic that exists (KafkaJS swallows TOPIC_ALREADY_EXISTS): that is
//   reported as TOPIC_ALREADY_EXISTS. It runs with waitForLeaders: false, as the other clients' CreateTopics:
//   KafkaJS's wait for the leaders retries LEADER_NOT_AVAILABLE but not UNKNOWN_TOPIC_OR_PARTITION, so on
//   Kafka (whose brokers learn of a topic a moment after CreateTopics returns) it fails now and then, and
//   after a validate-only request, which creates nothing, it always fails. deleteTopicRecords() fails ("Topic metadata not loaded") unless the
//   admin client has loaded the topic's metadata, so fetchTopicMetadata() comes first; it returns nothing:
//   the new low watermark is read with fetchTopicOffsets() afterwards.
// - Transactions: producer.transaction() is begin (and, the first time, InitProducerId: KafkaJS fences an
//   older producer only then, not when the producer connects); the transaction object it returns sends,
//   sends offsets (by group id), commits and aborts, and refuses every call once it ended.
// - isolation: consumers read_committed by default (readUncommitted: false); the admin client lists offsets
//   read_committed only (its "latest" is the last stable offset), so a read_uncommitted lookup is unsupported.
// - Unsupported: assigned members, static members (group.instance.id), auto.offset.reset=none, commit
//   metadata, a consumer's position, OffsetDelete, ListOffsets for the max timestamp: KafkaJS has none.
// Errors: a KafkaJSProtocolError by its type (Kafka's error name); KafkaJS's wrappers (retries exceeded,
// aggregate and per-topic errors) are unwrapped to the first such error; request timeouts are TIMEOUT.
'use strict'

const { ClientError, Inbox, Unsupported, hex, serve, unhex } = require('./agent')
const { AssignerProtocol, CompressionCodecs, CompressionTypes, ConfigResourceTypes, Kafka, logLevel } =
  require('kafkajs')
CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')

const [bootstrap, timingJson] = process.argv.slice(2)
const timing = JSON.parse(timingJson)
const opMs = Math.round(timing.op_s * 1000)
const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy }
const CONFIG_SOURCES = ['UNKNOWN', 'DYNAMIC_TOPIC_CONFIG', 'DYNAMIC_BROKER_CONFIG', 'DYNAMIC_DEFAULT_BROKER_CONFIG',
  'STATIC_BROKER_CONFIG', 'DEFAULT_CONFIG', 'DYNAMIC_BROKER_LOGGER_CONFIG', 'CLIENT_METRICS_CONFIG', 'GROUP_CONFIG']
const retry = { initialRetryTime: 100, maxRetryTime: opMs, retries: 5 }
const brokers = bootstrap.split(',').map(b => b.trim()).filter(b => b) // bootstrap.servers: host:port,host:port
const kafka = new Kafka({ clientId: 'compat-kafkajs', brokers, logLevel: logLevel.NOTHING,
  requestTimeout: opMs, retry })
let admin = null
let fetchGroups = 0

async function getAdmin () {
  if (admin === null) {
    admin = kafka.admin({ retry })
    await call(() => admin.connect())
  }
  return admin
}

// ---------------------------------------------------------------------------------------------- errors

function clientError (e) {
  const queue = [e]
  const seen = new Set()
  while (queue.length) {
    const x = queue.shift()
    if (!x || typeof x !== 'object' || seen.has(x)) continue
    seen.add(x)
    if (typeof x.type === 'string' && /^[A-Z_]+$/.test(x.type)) {
      return new ClientError(x.type === 'UNKNOWN' ? 'UNKNOWN_SERVER_ERROR' : x.type, x.name, x.message)
    }
    queue.push(x.cause, x.originalError, ...(x.errors || []), ...(x.groups || []).map((g) => g.error),
      ...(x.partitions || []).map((p) => p.error))
  }
  if (/Timeout/.test(e.name) || /timed? ?out/i.test(e.message)) return new ClientError('TIMEOUT', e.name, e.message)
  return new ClientError(`CLIENT:${e.name}`, e.name, e.message)
}

/** fn's result; what KafkaJS throws as a ClientError (harness failures are left as they are). */
async function call (fn) {
  try {
    return await fn()
  } catch (e) {
    if (e instanceof Unsupported || e instanceof ClientError) throw e
    if (e && typeof e.name === 'string' && e.name.startsWith('KafkaJS')) throw clientError(e)
    throw e
  }
}

// ---------------------------------------------------------------------------------------------- records

function headersObject (h) {
  const out = {}
  for (const [name, value] of h) {
    const v = unhex(value)
    if (!(name in out)) out[name] = v
    else out[name] = [].concat(out[name], [v])
  }
  return out
}

function rec (partition, m) {
  const headers = []
  for (const [name, value] of Object.entries(m.headers || {})) {
    for (const v of Array.isArray(value) ? value : [value]) headers.push([name, hex(v)])
  }
  const ts = Number(m.timestamp)
  return { k: hex(m.key), v: hex(m.value), h: headers, p: partition, o: Number(m.offset), ts: ts >= 0 ? ts : null }
}

async function produce (req) {
  const compression = CODECS[req.codec]
  if (compression === undefined) {
    throw new Unsupported(`KafkaJS has no ${req.codec} codec of its own (lz4 and zstd are native add-ons)`)
  }
  const idempotent = req.idempotent === true
  // idempotent: retried as Kafka's own idempotent producer retries until delivery.timeout.ms (a lost leader's broker
  // takes Kafka broker.session.timeout.ms to replace; five retries from 100 ms give up after about 3 s)
  const producer = kafka.producer({ idempotent, maxInFlightRequests: idempotent ? 1 : undefined,
    retry: idempotent ? { ...retry, retries: 10 } : retry })
  const acks = req.acks === null || req.acks === undefined ? -1 : req.acks
  const messages = req.recs.map((r) => ({
    key: unhex(r.k),
    value: unhex(r.v),
    headers: headersObject(r.h),
    partition: r.p === null ? undefined : r.p,
    timestamp: r.ts === null ? undefined : String(r.ts)
  }))
  await call(() => producer.connect())
  try {
    return await call(async () => {
      const send = (msgs) => producer.send({ topic: req.topic, messages: msgs, acks, timeout: opMs, compression })
      if (!req.one_batch) {
        const out = []
        for (const m of messages) {
          const [meta] = await send([m])
          out.push(meta ? [meta.partition, Number(meta.baseOffset)] : [m.partition === undefined ? -1 : m.partition, null])
        }
        return out
      }
      const metas = await send(messages)
      const base = new Map(metas.map((meta) => [meta.partition, Number(meta.baseOffset)]))
      const only = metas.length === 1 ? metas[0].partition : null
      const next = new Map()
      return messages.map((m) => {
        const p = m.partition === undefined ? only : m.partition
        if (!base.has(p)) return [p === null ? -1 : p, null]
        const i = next.get(p) || 0
        next.set(p, i + 1)
        return [p, base.get(p) + i]
      })
    })
  } finally {
    await producer.disconnect()
  }
}

async function fetch (req) {
  if (req.reset === 'none') throw new Unsupported('KafkaJS has no auto.offset.reset=none')
  fetchGroups += 1
  const isolation = req.isolation ? { readUncommitted: req.isolation === 'read_uncommitted' } : {}
  const consumer = kafka.consumer({ groupId: `compat-kafkajs-fetch-${process.pid}-${fetchGroups}`, maxWaitTimeInMs: 100,
    sessionTimeout: timing.session_timeout_ms, heartbeatInterval: timing.heartbeat_ms, retry, ...isolation })
  const got = []
  await call(() => consumer.connect())
  try {
    await call(() => consumer.subscribe({ topic: req.topic, fromBeginning: req.reset !== 'latest' }))
    await call(() => consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (partition === req.partition) got.push(rec(partition, message))
      }
    }))
    consumer.seek({ topic: req.topic, partition: req.partition, offset: String(req.offset) })
    const deadline = Date.now() + (req.wait_s ?? timing.fetch_s) * 1000
    while (got.length < req.count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  } finally {
    await consumer.disconnect()
  }
  return got.slice(0, req.count)
}

// ---------------------------------------------------------------------------------------------- admin

async function listOffsets (req) {
  if (req.isolation === 'read_uncommitted') {
    throw new Unsupported('KafkaJS\'s admin client lists offsets read_committed only')
  }
  const a = await getAdmin()
  return call(async () => {
    let rows
    if (req.spec === 'earliest' || req.spec === 'latest') {
      rows = (await a.fetchTopicOffsets(req.topic)).map((r) => ({ partition: r.partition,
        offset: req.spec === 'earliest' ? r.low : r.high }))
    } else if (req.spec === 'max_timestamp') {
      throw new Unsupported('KafkaJS has no ListOffsets for the max timestamp (KIP-734)')
    } else {
      rows = await a.fetchTopicOffsetsByTimestamp(req.topic, req.spec)
    }
    const row = rows.find((r) => r.partition === req.partition)
    if (!row) throw new ClientError('UNKNOWN_TOPIC_OR_PARTITION', 'kafkajs', 'no offset listed for the partition')
    const offset = Number(row.offset)
    return offset < 0 ? null : offset
  })
}

async function createTopic (req) {
  const a = await getAdmin()
  const configEntries = Object.entries(req.configs || {}).map(([name, value]) => ({ name, value }))
  const created = await call(() => a.createTopics({ validateOnly: req.validate_only, timeout: opMs, waitForLeaders: false,
    topics: [{ topic: req.topic, numPartitions: req.partitions, replicationFactor: req.replication_factor, configEntries }] }))
  if (created === false && !req.validate_only) {
    throw new ClientError('TOPIC_ALREADY_EXISTS', 'createTopics() resolved false', 'KafkaJS: the topic exists')
  }
  return null
}

async function partitionCount (req) {
  const a = await getAdmin()
  const md = await call(() => a.fetchTopicMetadata({ topics: [req.topic] }))
  const t = md.topics.find((x) => x.name === req.topic)
  if (!t) throw new ClientError('UNKNOWN_TOPIC_OR_PARTITION', 'kafkajs', 'not in metadata')
  return t.partitions.length
}

async function describeConfigs (req) {
  const a = await getAdmin()
  const type = req.resource === 'topic' ? ConfigResourceTypes.TOPIC : ConfigResourceTypes.BROKER
  const resp = await call(() => a.describeConfigs({ includeSynonyms: true,
    resources: [{ type, name: req.name, configNames: req.keys }] }))
  const out = {}
  for (const r of resp.resources) {
    if (r.errorCode) throw clientError({ type: undefined, errors: [], ...r, name: 'describeConfigs' })
    for (const c of r.configEntries) {
      if (!req.keys.includes(c.configName)) continue
      out[c.configName] = {
        value: c.configValue,
        source: CONFIG_SOURCES[c.configSource] || String(c.configSource),
        read_only: c.readOnly,
        sensitive: c.isSensitive,
        synonyms: c.configSynonyms
          ? c.configSynonyms.map((s) => [s.configName, s.configValue, CONFIG_SOURCES[s.configSource] || String(s.configSource)])
          : null
      }
    }
  }
  return out
}

async function alterConfigs (req) {
  const a = await getAdmin()
  const type = req.resource === 'topic' ? ConfigResourceTypes.TOPIC : ConfigResourceTypes.BROKER
  const configEntries = Object.entries(req.configs).map(([name, value]) => ({ name, value }))
  const resp = await call(() => a.alterConfigs({ validateOnly: false, resources: [{ type, name: req.name, configEntries }] }))
  for (const r of resp.resources) {
    if (r.errorCode) throw clientError({ type: undefined, errors: [], ...r, name: 'alterConfigs' })
  }
  return null
}

async function deleteRecords (req) {
  const a = await getAdmin()
  return call(async () => {
    await a.fetchTopicMetadata({ topics: [req.topic] }) // deleteTopicRecords() needs the topic's metadata loaded
    await a.deleteTopicRecords({ topic: req.topic, partitions: [{ partition: req.partition, offset: String(req.before) }] })
    const row = (await a.fetchTopicOffsets(req.topic)).find((r) => r.partition === req.partition)
    return Number(row.low)
  })
}

async function describeGroup (req) {
  const a = await getAdmin()
  const { groups } = await call(() => a.describeGroups([req.group]))
  const g = groups.find((x) => x.groupId === req.group)
  if (g.errorCode) throw clientError({ name: 'describeGroups', message: `error code ${g.errorCode}`, type: g.error && g.error.type })
  const members = g.members.map((m) => {
    const decoded = m.memberAssignment && m.memberAssignment.length
      ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null
    const parts = decoded ? Object.values(decoded.assignment).flat() : []
    return { assignment: parts.sort((x, y) => x - y), instance_id: null }
  })
  return { state: g.state, protocol_type: g.protocolType, protocol: g.protocol, members }
}

async function listGroups () {
  const a = await getAdmin()
  const { groups } = await call(() => a.listGroups())
  const out = {}
  for (const g of groups) out[g.groupId] = { protocol_type: g.protocolType, state: null }
  return out
}

async function committed (req) {
  const a = await getAdmin()
  const topics = await call(() => a.fetchOffsets({ groupId: req.group, topics: [req.topic] }))
  const out = {}
  for (const t of topics) {
    for (const p of t.partitions) {
      if (p.partition < req.partitions && Number(p.offset) >= 0) out[String(p.partition)] = [Number(p.offset), p.metadata]
    }
  }
  return out
}

const ops = {
  produce,
  fetch,
  list_offsets: listOffsets,
  create_topic: createTopic,
  partition_count: partitionCount,
  delete_topic: async (req) => { await call(async () => (await getAdmin()).deleteTopics({ topics: [req.topic], timeout: opMs })); return null },
  create_partitions: async (req) => {
    await call(async () => (await getAdmin()).createPartitions({ validateOnly: req.validate_only, timeout: opMs,
      topicPartitions: [{ topic: req.topic, count: req.count }] }))
    return null
  },
  describe_configs: describeConfigs,
  alter_configs: alterConfigs,
  delete_records: deleteRecords,
  describe_group: describeGroup,
  list_groups: listGroups,
  delete_group: async (req) => { await call(async () => (await getAdmin()).deleteGroups([req.group])); return null },
  delete_offsets: async () => { throw new Unsupported('KafkaJS has no OffsetDelete (deleting a group\'s committed offsets)') },
  committed,
  ...txnOps()
}

// ---------------------------------------------------------------------------------------------- transactions

/** What KafkaJS refuses itself (a transaction begun twice, a call after it ended) as CLIENT_REJECTED. */
async function txnCall (fn) {
  try {
    return await call(fn)
  } catch (e) {
    if (e instanceof ClientError && e.type === 'KafkaJSNonRetriableError' &&
        /ongoing transaction|once ended|Transaction state exception/.test(e.message)) {
      throw new ClientError('CLIENT_REJECTED', e.type, e.message)
    }
    throw e
  }
}

const txns = new Map()
let txnsOpened = 0

function txnOps () {
  const current = (req) => {
    const x = txns.get(req.x)
    if (!x.txn) throw new ClientError('CLIENT_REJECTED', 'kafkajs', 'no transaction begun (transaction() makes one)')
    return x.txn
  }
  return {
    txn_open: async (req) => {
      const timeout = req.timeout_ms === null || req.timeout_ms === undefined ? {} : { transactionTimeout: req.timeout_ms }
      const producer = kafka.producer({ transactionalId: req.transactional_id, idempotent: true, maxInFlightRequests: 1,
        retry, ...timeout })
      await call(() => producer.connect())
      txnsOpened += 1
      const id = `x${txnsOpened}`
      txns.set(id, { producer, txn: null })
      return id
    },
    txn_begin: (req) => txnCall(async () => {
      const x = txns.get(req.x)
      x.txn = await x.producer.transaction()
      return null
    }),
    txn_send: (req) => txnCall(async () => {
      const txn = current(req)
      const out = []
      for (const r of req.recs) {
        const [meta] = await txn.send({ topic: req.topic, acks: -1, timeout: opMs, messages: [{ key: unhex(r.k),
          value: unhex(r.v), headers: headersObject(r.h), partition: r.p === null ? undefined : r.p }] })
        out.push([meta.partition, Number(meta.baseOffset)])
      }
      return out
    }),
    txn_send_offsets: (req) => txnCall(async () => {
      const topics = new Map()
      for (const [topic, partition, offset] of req.offsets) {
        if (!topics.has(topic)) topics.set(topic, [])
        topics.get(topic).push({ partition, offset: String(offset) })
      }
      await current(req).sendOffsets({ consumerGroupId: req.group,
        topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) })
      return null
    }),
    txn_commit: (req) => txnCall(async () => { await current(req).commit(); return null }),
    txn_abort: (req) => txnCall(async () => { await current(req).abort(); return null }),
    txn_close: async (req) => {
      const x = txns.get(req.x)
      txns.delete(req.x)
      if (x) await x.producer.disconnect()
      return null
    }
  }
}

// ---------------------------------------------------------------------------------------------- members

/** A subscribed KafkaJS consumer (eager rebalancing, its RoundRobinAssigner), running on its own. */
async function openMember (req) {
  if (req.assign !== null && req.assign !== undefined) throw new Unsupported('KafkaJS consumers cannot be assigned partitions (no assign())')
  if (req.instance_id !== null && req.instance_id !== undefined) throw new Unsupported('KafkaJS has no static membership (group.instance.id)')
  if (req.offset_reset === 'none') throw new Unsupported('KafkaJS has no auto.offset.reset=none')
  const session = req.session_timeout_ms
  const consumer = kafka.consumer({ groupId: req.group, sessionTimeout: session, maxWaitTimeInMs: 100,
    heartbeatInterval: Math.min(timing.heartbeat_ms, Math.max(1, Math.floor(session / 3))), retry })
  const inbox = new Inbox()
  const { CRASH, GROUP_JOIN, REBALANCING } = consumer.events
  consumer.on(GROUP_JOIN, (e) => inbox.setAssignment(
    Object.entries(e.payload.memberAssignment).flatMap(([t, ps]) => ps.map((p) => [t, p]))))
  consumer.on(REBALANCING, () => inbox.setAssignment([]))
  consumer.on(CRASH, (e) => { inbox.errors.push(clientError(e.payload.error)) })
  await call(() => consumer.connect())
  await call(() => consumer.subscribe({ topic: req.topic, fromBeginning: req.offset_reset !== 'latest' }))
  await call(() => consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => { inbox.records.push(rec(partition, message)) }
  }))
  let closed = false
  return {
    inbox,
    commit: (offsets) => {
      if (offsets.some((o) => o[3] !== null)) throw new Unsupported('KafkaJS commits no metadata with an offset')
      return call(async () => {
        await consumer.commitOffsets(offsets.map(([topic, partition, offset]) => ({ topic, partition, offset: String(offset) })))
        return null
      })
    },
    position: () => { throw new Unsupported('KafkaJS does not expose a consumer\'s position') },
    seek: (topic, partition, offset) => { consumer.seek({ topic, partition, offset: String(offset) }); return null },
    pause: (tps, paused) => {
      const byTopic = {}
      for (const [t, p] of tps) (byTopic[t] = byTopic[t] || []).push(p)
      const list = Object.entries(byTopic).map(([topic, partitions]) => ({ topic, partitions }))
      if (paused) consumer.pause(list)
      else consumer.resume(list)
      return null
    },
    close: async () => {
      if (closed) return null
      closed = true
      await call(() => consumer.disconnect())
      return null
    }
  }
}

serve({ ops, openMember, close: async () => {
  for (const x of txns.values()) await x.producer.disconnect()
  if (admin) await admin.disconnect()
} })
