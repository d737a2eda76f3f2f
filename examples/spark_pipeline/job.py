"""Customer totals: a PySpark Structured Streaming job as it would run in production.

Reads JSON orders from the Kafka topic "orders", works out each order's total, joins the customer's tier from
a static table, keeps running totals per customer (orders, revenue) and writes them to "customer-totals",
keyed by customer, each update as a JSON value. Nothing here knows about fakekafka: the caller hands it a
SparkSession and a bootstrap address, and `format("kafka")` is Spark's Kafka connector (or, in tests without
it, fakekafka's stand-in; see the `spark` fixture).

    python -m spark_pipeline.job --bootstrap kafka:9092 --checkpoint /data/checkpoints/customer-totals
"""

from __future__ import annotations

import argparse

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

ORDER = "id string, customer string, items array<struct<sku:string, price:double, qty:int>>"
TIERS = [("alice", "gold"), ("bob", "silver")]
"""Customer tiers (reference data); anyone else is "bronze"."""


def order_total(items: Column) -> Column:
    return F.aggregate(items, F.lit(0.0), lambda acc, item: acc + item["price"] * item["qty"])


def customer_totals(orders: DataFrame, tiers: DataFrame) -> DataFrame:
    """Kafka records of orders (value: JSON) -> Kafka records of running totals (key: customer, value: JSON with
    customer, tier, orders, revenue). Works on a batch DataFrame and on a stream alike."""
    parsed = orders.select(F.from_json(F.col("value").cast("string"), ORDER).alias("order")).select("order.*")
    enriched = (parsed.withColumn("total", order_total(F.col("items")))
                .join(F.broadcast(tiers), "customer", "left")
                .withColumn("tier", F.coalesce("tier", F.lit("bronze"))))
    totals = enriched.groupBy("customer", "tier").agg(F.count("id").alias("orders"),
                                                       F.round(F.sum("total"), 2).alias("revenue"))
    return totals.select(F.col("customer").alias("key"),
                         F.to_json(F.struct("customer", "tier", "orders", "revenue")).alias("value"))


def start(spark: SparkSession, bootstrap: str, checkpoint: str, *, source: str = "orders",
          sink: str = "customer-totals", available_now: bool = False) -> StreamingQuery:
    """Starts the query. With available_now it processes what the topic holds now and stops (a scheduled run);
    otherwise it runs until stopped. The checkpoint keeps the Kafka offsets and the running totals."""
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source)
              .option("startingOffsets", "earliest")
              .load())
    tiers = spark.createDataFrame(TIERS, "customer string, tier string")
    writer = (customer_totals(orders, tiers).writeStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("topic", sink)
              .option("checkpointLocation", checkpoint)
              .outputMode("update")  # each batch writes the customers whose totals changed
              .queryName("customer-totals"))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--available-now", action="store_true")
    args = parser.parse_args()
    spark = SparkSession.builder.appName("customer-totals").getOrCreate()
    start(spark, args.bootstrap, args.checkpoint, available_now=args.available_now).awaitTermination()


if __name__ == "__main__":
    main()
