# fakekafka as a container: an in-memory Kafka-compatible broker, ready in about a second.
#   docker build -t fakekafka .
#   docker run --rm -p 9092:9092 --name fk fakekafka       # bootstrap.servers=localhost:9092
#   docker exec fk fakekafka ctl describe                  # the control port (9192) is on the container's loopback
# The control port steers everything and sees through ACLs. To steer from outside the container, open it with a
# token, which commands from other hosts must carry (`fakekafka ctl` reads it from the same variable):
#   docker run --rm -p 9092:9092 -p 9192:9192 -e FAKEKAFKA_CONTROL_TOKEN=<secret> fakekafka --port 9092 \
#       --control-host 0.0.0.0 --control-port 9192 --status-every 60
#   FAKEKAFKA_CONTROL_TOKEN=<secret> fakekafka ctl --control localhost:9192 describe
# Arguments after the image name replace CMD and go to `fakekafka serve` (see `fakekafka serve --help`).
# SIGTERM (docker stop) shuts it down cleanly; `docker kill -s USR1` prints a one-line status.
FROM python:3.11-slim

WORKDIR /src
COPY pyproject.toml README.md ./
COPY fakekafka ./fakekafka
COPY wire ./wire
RUN pip install --no-cache-dir --root-user-action=ignore . && rm -rf /src

WORKDIR /
EXPOSE 9092
HEALTHCHECK --interval=5s --timeout=2s --retries=3 \
    CMD ["python", "-c", "import socket; socket.create_connection(('127.0.0.1', 9092), 1).close()"]
# clients outside the container reach it as localhost; inside a compose network, pass --advertised-host <service>
ENTRYPOINT ["fakekafka", "serve", "--host", "0.0.0.0"]
CMD ["--port", "9092", "--advertised-host", "localhost"]
