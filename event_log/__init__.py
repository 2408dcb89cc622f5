"""The event log: schema, workload generator, producer and the Spark-side decoder."""
