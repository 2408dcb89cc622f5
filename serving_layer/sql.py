"""Serving views as Spark SQL temp views, so analysts can query them by name.

::

    register_views(spark, platform.serving_source(spark), platform.registry)
    spark.sql("SELECT * FROM revenue_by_category WHERE category = 'books'")

Each temp view is ``view.serve(state)`` over the serving source's table for that view
(the same rows :func:`serving_layer.read.read_view` gives, without its ordering: order
in SQL). The temp views name the tables of the source found at registration: call
:func:`register_views` again after a new batch run (Lambda) or a version switch (Kappa).
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from lake.source import ServingSource
from views.registry import ViewRegistry


def register_views(spark: SparkSession, source: ServingSource, registry: ViewRegistry) -> list[str]:
    """Create or replace one temp view per served view, named after the view.

    Args:
        spark: the session the temp views are registered in.
        source: where the design publishes each view (``Platform.serving_source``).
        registry: views to register.

    Returns:
        The names registered, in registry order. A view the source has not computed is
        not registered (and a stale temp view of that name is dropped).
    """
    registered: list[str] = []
    for view in registry:
        table = source.tables.get(view.name)
        if table is None:
            spark.catalog.dropTempView(view.name)
            continue
        state = table.read(spark)
        view.serve(state).createOrReplaceTempView(view.name)
        registered.append(view.name)
    return registered
