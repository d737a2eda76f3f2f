"""JAAS lines as Kafka's JaasConfig tokenizes and parses them, and the listener-prefixed broker configs
(`listener.name.<l>.<mechanism>.sasl.jaas.config`, `listener.name.<l>.sasl.enabled.mechanisms`,
`listener.name.<l>.ssl.*`) as BrokerConfig takes them."""

from __future__ import annotations

import pytest

from fakekafka.model.config import PLAIN_LOGIN_MODULE, BrokerConfig, InvalidConfig
from fakekafka.model.jaas import JaasEntry, JaasError, parse_jaas_config, server_jaas_entry

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_an_entry_with_quoted_and_bare_values_comments_and_escapes() -> None:
    text = (f'{PLAIN_LOGIN_MODULE}  Required\n user_alice="a/b; c=d" user_bob=bob-secret '
            "user_carol='it\\'s' /* a comment */ user_dave=\"tab\\there\" // to the end\n;")
    assert parse_jaas_config(text) == [JaasEntry(PLAIN_LOGIN_MODULE, "REQUIRED", {
        "user_alice": "a/b; c=d", "user_bob": "bob-secret", "user_carol": "it's", "user_dave": "tab\there"})]
    assert parse_jaas_config(f"{SCRAM} required; {SCRAM} optional;")[1] == JaasEntry(SCRAM, "OPTIONAL", {})


def test_an_unquoted_slash_comments_out_the_rest_of_the_line() -> None:
    """`/` is a comment character of Kafka's tokenizer: an unquoted value ends there, and so does the line."""
    with pytest.raises(JaasError, match="^JAAS config entry not terminated by semi-colon$"):
        parse_jaas_config(f"{PLAIN_LOGIN_MODULE} required user_a=x/y;")
    assert parse_jaas_config(f"{PLAIN_LOGIN_MODULE} required user_a=x/y\n;")[0].options == {"user_a": "x"}


@pytest.mark.parametrize(("text", "message"), [
    ("", "Login module not specified in JAAS config"),
    ("   /* only a comment */ ", "Login module not specified in JAAS config"),
    ("Module", "Login module control flag not specified in JAAS config"),
    ("Module ;", "Login module control flag is not available in the JAAS config"),
    ("Module maybe;", "Invalid login module control flag 'maybe' in JAAS config"),
    ("Module required user_a;", "Value not specified for key 'user_a' in JAAS config"),
    ("Module required user_a=;", "Value not specified for key 'user_a' in JAAS config"),
    ("Module required =x;", "Value not specified for key 'null' in JAAS config"),
    ('Module required user_a="x"', "JAAS config entry not terminated by semi-colon"),
])
def test_malformed_lines_refused_in_kafkas_words(text: str, message: str) -> None:
    with pytest.raises(JaasError) as e:
        parse_jaas_config(text)
    assert str(e.value) == message


def test_a_broker_takes_exactly_one_login_module() -> None:
    assert server_jaas_entry(f"{SCRAM} required;").login_module == SCRAM
    with pytest.raises(JaasError, match="^JAAS config property contains 2 login modules, should be 1 module$"):
        server_jaas_entry(f"{SCRAM} required; {SCRAM} required;")


def _plain(users: dict[str, str], module: str = PLAIN_LOGIN_MODULE) -> str:
    return f"{module} required " + " ".join(f'user_{u}="{p}"' for u, p in users.items()) + ' username="admin";'


def test_plain_users_sasl_mechanisms_and_tls_per_listener() -> None:
    config = BrokerConfig.from_properties({
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": _plain({"alice": "a-secret", "bob": "b-secret"}),
        "listener.name.partners.plain.sasl.jaas.config": _plain({"carol": "c-secret"}),
        "listener.name.other.plain.sasl.jaas.config": _plain({"dave": "d"}, SCRAM),
        "listener.name.partners.scram-sha-256.sasl.jaas.config": f"{SCRAM} required;",
        "listener.name.partners.sasl.enabled.mechanisms": "plain, SCRAM-SHA-256",
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.keystore.location": "/k.pem", "listener.name.mtls.ssl.key.password": "pw",
        "ssl.keystore.location": "/broker.pem", "ssl.client.auth": "requested"})
    assert config.plain_users("SASL_PLAINTEXT") == {"alice": "a-secret", "bob": "b-secret"}
    assert config.plain_users("PARTNERS") == {"carol": "c-secret"}
    assert config.plain_users("OTHER") == {}  # only a PlainLoginModule's options are PLAIN users, as in Kafka
    assert config.plain_users("ELSEWHERE") is None  # no JAAS line: the cluster's users
    assert config.sasl_mechanisms("PARTNERS") == ["PLAIN", "SCRAM-SHA-256"]
    assert config.sasl_mechanisms("SASL_PLAINTEXT") == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert config.listener_ssl("MTLS", "SASL_SSL") == ("/k.pem", "", "required", "pw")
    assert config.listener_ssl("SSL", "SSL") == ("/broker.pem", "", "requested", "")
    assert config.listener_ssl("SASL_SSL", "SASL_SSL") == ("/broker.pem", "", "none", "")  # KIP-684


@pytest.mark.parametrize(("name", "value", "refusal"), [
    ("listener.name.sasl_plaintext.plain.sasl.jaas.config", f"{PLAIN_LOGIN_MODULE} required user_a;",
     r"^Invalid value \[hidden\] for configuration listener.name.sasl_plaintext.plain.sasl.jaas.config: Value not "
     r"specified for key 'user_a' in JAAS config$"),
    ("listener.name.sasl_plaintext.plain.sasl.jaas.config", 'com.example.Mine required user_a="x";',
     "No LoginModule found for com.example.Mine"),
    ("listener.name.sasl_plaintext.gssapi.sasl.jaas.config", "com.sun.security.auth.module.Krb5LoginModule required;",
     "fakekafka does not offer GSSAPI"),
    ("listener.name.sasl_plaintext.PLAIN.sasl.jaas.config", f"{PLAIN_LOGIN_MODULE} required;",
     "Kafka reads the mechanism in lower case"),
    ("listener.name.SASL_PLAINTEXT.plain.sasl.jaas.config", f"{PLAIN_LOGIN_MODULE} required;",
     r"under listener.name.sasl_plaintext. \(its name in lower case\)"),
    ("listener.name.sasl_plaintext.sasl.jaas.config", f"{PLAIN_LOGIN_MODULE} required;",
     "only with a SASL mechanism prefix too"),
    ("sasl.jaas.config", f"{PLAIN_LOGIN_MODULE} required;", "only with its listener and mechanism prefixes"),
    ("listener.name.ssl.ssl.client.auth", "sometimes", "String must be one of: required, requested, none"),
    ("listener.name.ssl.num.partitions", "3", "fakekafka applies num.partitions to every listener"),
    ("listener.name.ssl.plain.connections.max.reauth.ms", "1000", "applies connections.max.reauth.ms to every"),
    ("listener.name.ssl.no.such.config", "1", "^The configuration 'listener.name.ssl.no.such.config' was supplied "
     "but isn't a known config.$"),
])
def test_listener_configs_refused_in_words(name: str, value: str, refusal: str) -> None:
    with pytest.raises(InvalidConfig, match=refusal) as e:
        BrokerConfig.from_properties({name: value})
    assert "user_a=" not in str(e.value)  # a JAAS line is a password: never repeated


def test_listener_configs_fakekafka_does_not_model_are_taken_as_their_unprefixed_names() -> None:
    config = BrokerConfig.from_properties({"listener.name.ssl.ssl.keystore.password": "secret",
                                           "listener.name.ssl.ssl.enabled.protocols": "TLSv1.3"})
    assert config.listener_value("SSL", "ssl.enabled.protocols") == "TLSv1.3"
