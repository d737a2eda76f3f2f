// Wire conformance harness: Kafka's own generated message classes (kafka-clients) check fakekafka's codec.
// One source for kafka-clients 4.x and 3.x (the test runs 3.9.1 for the versions 4.x dropped, KIP-896).
//
// Usage: java WireConformance IN.json OUT.json   (driven by tests/conformance/wire/test_conformance.py)
//
// IN holds a batch of jobs; every job is answered in OUT under the same "id", so one JVM start serves
// the whole suite:
//   messages[]:    {id, api, kind: "Request"|"Response", version, bytes: b64, json: {...} | null,
//                   defaults: bool}
//     -> {id, status: ok|unsupported|error, reason, reencoded: b64, trailing, json, records[],
//         from_json: b64, from_json_error, defaults: b64, defaults_error}
//     bytes:     our encoding, read with new XData(ByteBufferAccessor, version) and written back with
//                Message.write (encode()); "json" is XDataJsonConverter.write of what Java read, and
//                records[] lists every records-typed field found in it, decoded with MemoryRecords.
//     json:      our content with snake_case keys; renamed to the Java field names by reflection over
//                the Data class, read with XDataJsonConverter.read and serialized ("from_json").
//     defaults:  also serialize new XData() ("defaults"), to compare with our declared defaults, and
//                describe XData.SCHEMAS[version] ("schema": fields, types, tags), to compare layouts.
//   records_in[]:  {id, bytes: b64}                          -> {id, batches[] | error}
//   records_out[]: {id, codec, base_offset, producer_id, producer_epoch, base_sequence, transactional,
//                   partition_leader_epoch, records: [{timestamp, key, value, headers: [[k, v]]}]}
//                                                            -> {id, bytes: b64, batches[] | error}
// Binary values are base64 (standard alphabet, padded) or null.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.CompactArrayOf;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;
// The record classes sit in .record up to 3.x and in .record.internal from 4.0 (TimestampType stays): both
// imported on demand, with shim/RecordsPackage.java making .internal exist for a 3.x compile.
import org.apache.kafka.common.record.*;
import org.apache.kafka.common.record.internal.*;

public final class WireConformance {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final String PACKAGE = "org.apache.kafka.common.message.";

    /** The Data class of one (API, kind) and its JSON converter, looked up once. */
    private static final class Api {
        final Class<?> data;
        final short lowest;
        final short highest;
        final Constructor<?> reader;
        final Method fromJson;
        final Method toJson;

        Api(String name) throws ReflectiveOperationException {
            data = Class.forName(PACKAGE + name + "Data");
            Class<?> converter = Class.forName(PACKAGE + name + "DataJsonConverter");
            lowest = data.getField("LOWEST_SUPPORTED_VERSION").getShort(null);
            highest = data.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
            reader = data.getConstructor(Readable.class, short.class);
            fromJson = converter.getMethod("read", JsonNode.class, short.class);
            toJson = converter.getMethod("write", data, short.class);
        }
    }

    private static final Map<String, Optional<Api>> APIS = new HashMap<>();

    /** The Data class for a name like "ProduceRequest", or null when this client has none. */
    private static Api api(String name) {
        return APIS.computeIfAbsent(name, n -> {
            try {
                return Optional.of(new Api(n));
            } catch (ReflectiveOperationException e) {
                return Optional.empty();
            }
        }).orElse(null);
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        JsonNode in = mapper.readTree(new File(args[0]));
        ObjectNode out = NODES.objectNode();
        out.put("kafka_version", clientVersion());
        ArrayNode messages = out.putArray("messages");
        for (JsonNode job : in.path("messages")) {
            messages.add(message(job));
        }
        ArrayNode recordsIn = out.putArray("records_in");
        for (JsonNode job : in.path("records_in")) {
            ObjectNode r = recordsIn.addObject().put("id", job.get("id").asInt());
            try {
                r.set("batches", batches(MemoryRecords.readableRecords(ByteBuffer.wrap(b64(job.get("bytes"))))));
            } catch (Exception e) {
                r.put("error", describe(e));
            }
        }
        ArrayNode recordsOut = out.putArray("records_out");
        for (JsonNode job : in.path("records_out")) {
            ObjectNode r = recordsOut.addObject().put("id", job.get("id").asInt());
            try {
                MemoryRecords built = build(job);
                r.put("bytes", b64(MessageUtil.byteBufferToArray(built.buffer())));
                r.set("batches", batches(built));
            } catch (Exception e) {
                r.put("error", describe(e));
            }
        }
        mapper.writeValue(new File(args[1]), out);
    }

    // ------------------------------------------------------------------------------------------ messages

    private static ObjectNode message(JsonNode job) {
        ObjectNode r = NODES.objectNode().put("id", job.get("id").asInt());
        String name = job.get("api").asText() + job.get("kind").asText();
        short version = (short) job.get("version").asInt();
        Api api = api(name);
        if (api == null) {
            return r.put("status", "unsupported").put("reason", "no class " + PACKAGE + name + "Data");
        }
        if (version < api.lowest || version > api.highest) {
            return r.put("status", "unsupported")
                .put("reason", name + "Data supports versions " + api.lowest + "-" + api.highest);
        }
        try {
            ByteBuffer buf = ByteBuffer.wrap(b64(job.get("bytes")));
            Message data = (Message) api.reader.newInstance(new ByteBufferAccessor(buf), version);
            r.put("trailing", buf.remaining());
            r.put("reencoded", b64(encode(data, version)));
            r.set("json", (JsonNode) api.toJson.invoke(null, data, version));
            ArrayNode records = r.putArray("records");
            findRecords(data, "", records);
            r.put("status", "ok");
        } catch (Throwable e) {
            r.put("status", "error").put("reason", "reading our bytes: " + describe(e));
        }
        JsonNode ours = job.get("json");
        if (ours != null && !ours.isNull()) {
            try {
                JsonNode renamed = rename(ours, api.data);
                Message data = (Message) api.fromJson.invoke(null, renamed, version);
                r.put("from_json", b64(encode(data, version)));
            } catch (Throwable e) {
                r.put("from_json_error", describe(e));
            }
        }
        if (job.path("defaults").asBoolean(false)) {
            try {
                r.set("schema", schemaOf(((Schema[]) api.data.getField("SCHEMAS").get(null))[version]));
            } catch (Throwable e) {
                r.put("schema_error", describe(e));
            }
            try {
                Message data = (Message) api.data.getConstructor().newInstance();
                r.put("defaults", b64(encode(data, version)));
            } catch (Throwable e) {
                r.put("defaults_error", describe(e));
            }
        }
        return r;
    }

    /** A Schema as {fields: [[name, type]], tagged: {tag: [name, type]}, flexible, nullable}. */
    @SuppressWarnings("unchecked")
    private static JsonNode schemaOf(Type type) throws ReflectiveOperationException {
        if (type instanceof Schema schema) {
            ObjectNode o = NODES.objectNode();
            ArrayNode fields = o.putArray("fields");
            o.put("flexible", false);
            o.put("nullable", schema.isNullable());
            for (BoundField f : schema.fields()) {
                if (f.def.type instanceof TaggedFields tagged) {
                    o.put("flexible", true);
                    ObjectNode tags = o.putObject("tagged");
                    Field map = TaggedFields.class.getDeclaredField("fields");
                    map.setAccessible(true);
                    for (Map.Entry<Integer, org.apache.kafka.common.protocol.types.Field> e
                            : ((Map<Integer, org.apache.kafka.common.protocol.types.Field>) map.get(tagged)).entrySet()) {
                        tags.putArray(String.valueOf(e.getKey())).add(e.getValue().name).add(schemaOf(e.getValue().type));
                    }
                } else {
                    fields.addArray().add(f.def.name).add(schemaOf(f.def.type));
                }
            }
            return o;
        }
        Optional<Type> element = type.arrayElementType();
        if (element.isPresent()) {
            return NODES.objectNode().<ObjectNode>set("array", schemaOf(element.get()))
                .put("compact", type instanceof CompactArrayOf).put("nullable", type.isNullable());
        }
        String name = type.toString();
        if (name.endsWith("RECORDS") && !name.contains("NULLABLE") && type.isNullable()) {
            // kafka-clients 3.x had only nullable records types, named RECORDS and COMPACT_RECORDS;
            // 4.x names them NULLABLE_RECORDS and COMPACT_NULLABLE_RECORDS beside non-nullable ones
            name = name.replace("RECORDS", "NULLABLE_RECORDS");
        }
        return NODES.textNode(name);
    }

    private static String norm(String name) {
        return name.replace("_", "").toLowerCase(Locale.ROOT);
    }

    private static List<Field> dataFields(Class<?> cls) {
        List<Field> fields = new ArrayList<>();
        for (Field f : cls.getDeclaredFields()) {
            int mod = f.getModifiers();
            if (!Modifier.isStatic(mod) && !f.isSynthetic() && !f.getName().startsWith("_")) {
                f.setAccessible(true);
                fields.add(f);
            }
        }
        return fields;
    }

    /** Our snake_case JSON with keys renamed to the Data class's field names (its JSON names). */
    private static JsonNode rename(JsonNode node, Class<?> cls) {
        Map<String, String> names = new HashMap<>();
        Map<String, java.lang.reflect.Type> types = new HashMap<>();
        for (Field f : dataFields(cls)) {
            names.put(norm(f.getName()), f.getName());
            types.put(f.getName(), f.getGenericType());
        }
        ObjectNode out = NODES.objectNode();
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String name = names.get(norm(e.getKey()));
            if (name == null) {
                throw new IllegalArgumentException(cls.getSimpleName() + " has no field like " + e.getKey());
            }
            out.set(name, renameValue(e.getValue(), types.get(name)));
        }
        return out;
    }

    private static JsonNode renameValue(JsonNode value, java.lang.reflect.Type type) {
        if (value.isObject()) {
            return rename(value, rawClass(type));
        }
        if (value.isArray()) {
            java.lang.reflect.Type elem = elementType(type);
            ArrayNode out = NODES.arrayNode();
            for (JsonNode v : value) {
                out.add(elem == null ? v : renameValue(v, elem));
            }
            return out;
        }
        return value;
    }

    private static Class<?> rawClass(java.lang.reflect.Type type) {
        if (type instanceof ParameterizedType p) {
            return (Class<?>) p.getRawType();
        }
        return (Class<?>) type;
    }

    /** Element type of List<X> or of a generated XCollection (an ImplicitLinkedHashMultiCollection<X>). */
    private static java.lang.reflect.Type elementType(java.lang.reflect.Type type) {
        while (type != null) {
            if (type instanceof ParameterizedType p) {
                return p.getActualTypeArguments()[0];
            }
            type = ((Class<?>) type).getGenericSuperclass();
        }
        return null;
    }

    /** Every records-typed field under obj, at a path of normalised field names like .topicdata[0].records. */
    private static void findRecords(Object obj, String path, ArrayNode out) throws IllegalAccessException {
        if (obj instanceof BaseRecords records) {
            ObjectNode r = out.addObject().put("path", path);
            if (records instanceof MemoryRecords mem) {
                r.put("bytes", b64(MessageUtil.byteBufferToArray(mem.buffer())));
                try {
                    r.set("batches", batches(mem));
                } catch (Exception e) {
                    r.put("error", describe(e));
                }
            } else {
                r.put("error", "records of type " + records.getClass().getName());
            }
        } else if (obj instanceof Message) {
            for (Field f : dataFields(obj.getClass())) {
                findRecords(f.get(obj), path + "." + norm(f.getName()), out);
            }
        } else if (obj instanceof Iterable<?> items) {
            int i = 0;
            for (Object item : items) {
                findRecords(item, path + "[" + i++ + "]", out);
            }
        }
    }

    // ------------------------------------------------------------------------------------------- records

    private static ArrayNode batches(MemoryRecords records) {
        ArrayNode out = NODES.arrayNode();
        for (MutableRecordBatch batch : records.batches()) {
            ObjectNode b = out.addObject();
            b.put("base_offset", batch.baseOffset());
            b.put("last_offset", batch.lastOffset());
            b.put("partition_leader_epoch", batch.partitionLeaderEpoch());
            b.put("magic", batch.magic());
            b.put("compression", batch.compressionType().name);
            b.put("timestamp_type", batch.timestampType().id);
            b.put("max_timestamp", batch.maxTimestamp());
            b.put("producer_id", batch.producerId());
            b.put("producer_epoch", batch.producerEpoch());
            b.put("base_sequence", batch.baseSequence());
            b.put("transactional", batch.isTransactional());
            b.put("control", batch.isControlBatch());
            b.put("valid", batch.isValid());
            b.put("size", batch.sizeInBytes());
            ArrayNode recs = b.putArray("records");
            for (var rec : batch) {  // Record: java.lang has one too
                ObjectNode o = recs.addObject();
                o.put("offset", rec.offset());
                o.put("timestamp", rec.timestamp());
                o.put("key", rec.hasKey() ? b64(MessageUtil.byteBufferToArray(rec.key())) : null);
                o.put("value", rec.hasValue() ? b64(MessageUtil.byteBufferToArray(rec.value())) : null);
                ArrayNode headers = o.putArray("headers");
                for (Header h : rec.headers()) {
                    headers.addArray().add(h.key()).add(h.value() == null ? null : b64(h.value()));
                }
            }
        }
        return out;
    }

    private static MemoryRecords build(JsonNode job) {
        Compression compression = Compression.of(CompressionType.forName(job.get("codec").asText())).build();
        MemoryRecordsBuilder builder = MemoryRecords.builder(
            ByteBuffer.allocate(1024), RecordBatch.CURRENT_MAGIC_VALUE, compression, TimestampType.CREATE_TIME,
            job.get("base_offset").asLong(), RecordBatch.NO_TIMESTAMP, job.get("producer_id").asLong(),
            (short) job.get("producer_epoch").asInt(), job.get("base_sequence").asInt(),
            job.get("transactional").asBoolean(), job.get("partition_leader_epoch").asInt());
        for (JsonNode rec : job.get("records")) {
            List<Header> headers = new ArrayList<>();
            for (JsonNode h : rec.get("headers")) {
                headers.add(new RecordHeader(h.get(0).asText(), b64(h.get(1))));
            }
            builder.append(rec.get("timestamp").asLong(), b64(rec.get("key")), b64(rec.get("value")),
                headers.toArray(new Header[0]));
        }
        return builder.build();
    }

    // ------------------------------------------------------------------------------------------- helpers

    /** A message's bytes at a version, as Kafka writes it (MessageUtil.toByteBuffer, gone in 4.x). */
    private static byte[] encode(Message data, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buf = ByteBuffer.allocate(data.size(cache, version));
        data.write(new ByteBufferAccessor(buf), cache, version);
        return buf.array();
    }

    /** kafka-clients' version, from the resource AppInfoParser reads (that class moved in 4.x). */
    private static String clientVersion() throws java.io.IOException {
        java.util.Properties props = new java.util.Properties();
        try (java.io.InputStream in = Message.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            props.load(in);
        }
        return props.getProperty("version", "unknown");
    }

    private static byte[] b64(JsonNode node) {
        return node == null || node.isNull() ? null : Base64.getDecoder().decode(node.asText());
    }

    private static String b64(byte[] data) {
        return Base64.getEncoder().encodeToString(data);
    }

    private static String describe(Throwable e) {
        while (e.getCause() != null && (e instanceof java.lang.reflect.InvocationTargetException
                || e instanceof RuntimeException && e.getMessage() == null)) {
            e = e.getCause();
        }
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    private WireConformance() {
    }
}
