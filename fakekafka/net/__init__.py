"""The network edge: listeners, framing, connections, TLS and SASL; bytes in, handlers' answers out."""
