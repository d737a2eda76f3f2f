// Kafka 4 moved the record classes (MemoryRecords, RecordBatch, ...) from org.apache.kafka.common.record to
// org.apache.kafka.common.record.internal, with the same API. WireConformance imports both packages on
// demand, so one source compiles against kafka-clients 4.x and 3.x; this empty class makes the .internal
// package exist for a 3.x compile (on 4.x it just sits beside Kafka's own classes in that package).
package org.apache.kafka.common.record.internal;

final class RecordsPackage {
    private RecordsPackage() {
    }
}
