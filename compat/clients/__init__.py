"""The client adapters compat drives: `catalog` names them (what each is, which speak KIP-848), `registry`
makes one by name, `base` is the interface every adapter implements (`Client`, `Member`, `TxnProducer`), and
one module per client or family implements it (in process: kafka_python, aiokafka_client, confluent; as
processes: agent, and on it java, golang, node, rust; kcat)."""
