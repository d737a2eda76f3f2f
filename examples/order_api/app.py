"""A small HTTP service that takes orders and produces each to Kafka from its request handler (FastAPI, with
aiokafka's producer opened and closed by the app's lifespan). It knows nothing about fakekafka: its tests
(test_app.py) point it at the `kafka` fixture's cluster.

    POST /orders  {"id": "o-1", "customer": "alice", "amount": 12.5, "note": ""}
        202 {"topic": "orders", "partition": 1, "offset": 0}     once Kafka has acknowledged the record
        422                                                       a malformed order: nothing is produced
        413                                                       the broker refused the record as too large
        503                                                       Kafka refused it or did not answer in time

The record's key is the customer (so one customer's orders stay in order, on one partition), its value the
order as JSON, and it carries the request's X-Request-ID header (a generated one when absent) as the
`request-id` header: the consumer downstream can tie a record to the request that made it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError, MessageSizeTooLargeError
from fastapi import FastAPI, Header, HTTPException, Request, status
from pydantic import BaseModel, Field

TOPIC = "orders"


class Order(BaseModel):
    id: str = Field(min_length=1)
    customer: str = Field(min_length=1)
    amount: float = Field(gt=0)
    note: str = ""


class Accepted(BaseModel):
    topic: str
    partition: int
    offset: int


def create_app(bootstrap_servers: str, *, request_timeout_ms: int = 10_000) -> FastAPI:
    """The service, producing to `bootstrap_servers` (acks=all, idempotent: a retried send is stored once)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap_servers, acks="all", enable_idempotence=True,
                                    request_timeout_ms=request_timeout_ms)
        await producer.start()
        app.state.producer = producer
        try:
            yield
        finally:
            await producer.stop()  # sends what is queued, then closes

    app = FastAPI(title="orders", lifespan=lifespan)

    @app.post("/orders", status_code=status.HTTP_202_ACCEPTED, response_model=Accepted)
    async def place_order(order: Order, request: Request,
                          x_request_id: str | None = Header(default=None)) -> Accepted:
        producer: AIOKafkaProducer = request.app.state.producer
        request_id = x_request_id or str(uuid.uuid4())
        try:
            meta = await producer.send_and_wait(TOPIC, order.model_dump_json().encode(),
                                                key=order.customer.encode(),
                                                headers=[("request-id", request_id.encode())])
        except MessageSizeTooLargeError as e:
            raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"Kafka refused the order: {e}") from e
        except KafkaError as e:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, f"Kafka did not take the order: {e}") from e
        return Accepted(topic=meta.topic, partition=meta.partition, offset=meta.offset)

    return app
