// A Go service beside a Python one: it reads the Avro records a Python producer wrote through confluent-kafka's
// AvroSerializer, with franz-go's schema registry client (pkg/sr) finding each record's writer schema by the id
// in its Confluent header and hamba/avro decoding it, then writes one record the same way for Python to read.
//
//	go_registry BOOTSTRAP REGISTRY_URL TOPIC_IN COUNT TOPIC_OUT
//
// prints one JSON line per record read, then {"produced": ID} with the schema id it wrote with.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 6 {
		fail("usage: go_registry BOOTSTRAP REGISTRY_URL TOPIC_IN COUNT TOPIC_OUT")
	}
	bootstrap, url, topicIn, topicOut := os.Args[1], os.Args[2], os.Args[3], os.Args[5]
	count, err := strconv.Atoi(os.Args[4])
	if err != nil {
		fail("COUNT: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	registry, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		fail("registry client: %v", err)
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topicIn),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	if err != nil {
		fail("kafka client: %v", err)
	}
	defer client.Close()

	var header sr.ConfluentHeader
	schemas := map[int]avro.Schema{}
	lastID := -1
	for read := 0; read < count; {
		fetches := client.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			fail("fetch: %v", errs)
		}
		for _, record := range fetches.Records() {
			id, payload, err := header.DecodeID(record.Value)
			if err != nil {
				fail("record at offset %d: %v", record.Offset, err)
			}
			schema, ok := schemas[id]
			if !ok {
				found, err := registry.SchemaByID(ctx, id)
				if err != nil {
					fail("schema %d: %v", id, err)
				}
				if schema, err = avro.Parse(found.Schema); err != nil {
					fail("schema %d does not parse: %v", id, err)
				}
				schemas[id] = schema
			}
			var value map[string]any
			if err := avro.Unmarshal(schema, payload, &value); err != nil {
				fail("record at offset %d: %v", record.Offset, err)
			}
			line, _ := json.Marshal(map[string]any{"schema_id": id, "value": value})
			fmt.Println(string(line))
			lastID = id
			read++
		}
	}

	// one record back, framed with the same schema id, as a Go producer with a registry-aware serde writes it
	payload, err := avro.Marshal(schemas[lastID], map[string]any{"id": "go-1", "qty": 7})
	if err != nil {
		fail("encode: %v", err)
	}
	value, err := header.AppendEncode(nil, lastID, nil)
	if err != nil {
		fail("header: %v", err)
	}
	value = append(value, payload...)
	if err := client.ProduceSync(ctx, &kgo.Record{Topic: topicOut, Value: value}).FirstErr(); err != nil {
		fail("produce: %v", err)
	}
	line, _ := json.Marshal(map[string]any{"produced": lastID})
	fmt.Println(string(line))
}
