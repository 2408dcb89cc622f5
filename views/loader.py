"""Load the configured view module into the one registry, and check its views at start.

A view module is an importable name (``views.builtin``, ``mypkg.views``) or a ``.py``
file. It registers views with the same :class:`~views.base.View` API the built-in views
use, in either of two ways:

* ``VIEWS``: an iterable of views, or
* ``register(registry)``: a function that calls ``registry.register(view)``.

It may also set ``KEEP_BUILT_IN`` (names of built-in views to keep beside its own, or
``"all"``); ``views.keep_built_in`` in ``lk.yaml`` overrides it. Everything that can be
checked without Spark is checked when the module loads (:func:`load_registry`); what
needs Spark (the columns ``compute`` returns) is checked once a session exists
(:func:`check_views`). Each failure names the module or file and the problem.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

from pyspark.sql import DataFrame, SparkSession

from config.errors import LkError
from config.settings import Settings
from event_log.contract import ContractError, EventContract
from views.base import View, ViewContext
from views.registry import BUILT_IN, RegistrationError, ViewRegistry, defined_in

BUILT_IN_MODULE = "views.builtin"


class ViewModuleError(LkError, ValueError):
    """A view module failed to load or a view in it is unusable; names module and problem."""

    exit_code = 2
    label = "config error"


def _is_file(module: str) -> bool:
    return module.endswith(".py") or "/" in module or "\\" in module


def import_module(module: str) -> ModuleType:
    """Import a module by name, or execute a ``.py`` file as a module of its own."""
    try:
        if not _is_file(module):
            return importlib.import_module(module)
        path = Path(module)
        if not path.is_file():
            raise ViewModuleError(f"view module {module}: no such file")
        name = f"lk_user_views_{abs(hash(str(path.resolve())))}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ViewModuleError(f"view module {module}: not a Python file")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        spec.loader.exec_module(loaded)
        from pyspark import cloudpickle  # UDFs defined in the file must reach the executors

        cloudpickle.register_pickle_by_value(loaded)
        return loaded
    except ViewModuleError:
        raise
    except Exception as err:  # any error while importing user code is a config error
        raise ViewModuleError(
            f"view module {module}: import failed: {type(err).__name__}: {err}"
        ) from err


def module_views(module: str) -> tuple[list[View], tuple[str, ...] | str | None]:
    """The views a module registers, and its ``KEEP_BUILT_IN`` (None if unset)."""
    loaded = import_module(module)
    keep = getattr(loaded, "KEEP_BUILT_IN", None)
    if hasattr(loaded, "VIEWS"):
        views = list(loaded.VIEWS)
    elif callable(getattr(loaded, "register", None)):
        collector = ViewRegistry()
        try:
            loaded.register(collector)
        except RegistrationError as err:
            raise ViewModuleError(f"view module {module}: {err}") from None
        except Exception as err:
            raise ViewModuleError(
                f"view module {module}: register() failed: {type(err).__name__}: {err}"
            ) from err
        views = list(collector)
    else:
        raise ViewModuleError(f"view module {module}: defines neither VIEWS nor register(registry)")
    for view in views:
        if not isinstance(view, View):
            raise ViewModuleError(f"view module {module}: {view!r} is not a views.base.View")
        if not view.key:
            raise ViewModuleError(f"view module {module}: view {view.name!r} has no key")
    return views, keep


def load_registry(settings: Settings, contract: EventContract) -> ViewRegistry:
    """The one registry: the configured module's views (plus the built-ins it keeps)."""
    module = settings.views.module
    views, keep = module_views(module)
    if module != BUILT_IN_MODULE:
        keep = settings.views.keep_built_in if settings.views.keep_built_in is not None else keep
        names = [v.name for v in BUILT_IN]
        wanted = names if keep == "all" else list(keep or ())
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise ViewModuleError(
                f"view module {module}: keep_built_in names unknown built-in view(s) "
                f"{unknown} (built-in: {', '.join(names)})"
            )
        views = [v for v in BUILT_IN if v.name in wanted] + views
    registry = ViewRegistry(contract=contract)
    for view in views:
        try:
            registry.register(view)
        except RegistrationError as err:
            raise ViewModuleError(f"view module {module}: {err}") from None
    if not len(registry):
        raise ViewModuleError(f"view module {module}: registers no view")
    return registry


def registry_for(settings: Settings) -> ViewRegistry:
    """The registry ``settings`` configure: their event contract and view module.

    ``designs.platform.build`` builds it once per platform and hands it to the engines,
    which never build one themselves; this is for code that has no platform (notebooks).
    """
    from event_log.configured import load_contract

    return load_registry(settings, load_contract(settings.events))


#: How many views Spark analyses at once at start (its analyser runs in the JVM, outside
#: Python's GIL). In a fresh JVM the checks took 1.55-1.61 s side by side, 1.80-1.99 s
#: one view after the other; in a warm JVM about the same either way.
CHECK_THREADS = 4


def check_views(spark: SparkSession, registry: ViewRegistry, settings: Settings) -> None:
    """Each view, run on no events of the contract, returns the columns its key names.

    Spark only analyses the plans (no job runs), so this costs well under a second warm;
    the views are analysed side by side (``CHECK_THREADS``), and the first failing view
    in the registry's order is the one named. The contract's rules are compiled the
    same way.

    Raises:
        ContractError: a rule of the event contract is not valid Spark SQL.
        ViewModuleError: naming the view, where it was defined and the missing columns,
            or the error its compute raised on the contract's events.
    """
    if registry.checked:
        return
    from pyspark.sql import types as T

    from event_log.catalog import PRODUCT
    from event_log.decode import event_schema

    events = spark.createDataFrame([], event_schema(registry.contract))
    table = [f for f in PRODUCT.fields if f.name != "updated_at"]
    catalog = spark.createDataFrame(
        [], T.StructType([*table, T.StructField("updated_at", T.TimestampType())])
    )
    versions = spark.createDataFrame(
        [],
        "product_id long, category string, price decimal(12,2), valid_from timestamp, "
        "partition int, offset long",
    )
    ctx = ViewContext(settings.views, catalog, versions)
    with ThreadPoolExecutor(
        CHECK_THREADS, thread_name_prefix="check-views", initializer=_activate, initargs=(spark,)
    ) as pool:
        contract = pool.submit(_check_contract, spark, registry.contract)
        source = registry.contract.source
        views = [pool.submit(_check_view, view, events, ctx, source) for view in registry]
        contract.result()
        for view in views:
            view.result()
    registry.checked = True


def _activate(spark: SparkSession) -> None:
    """Make ``spark`` this thread's active session, as it is where the views run for real.

    A new thread has none (``SparkSession.getActiveSession()`` is None there), so a view
    that asks for it would fail only its check. PySpark makes a session the calling
    thread's active one whenever it creates a DataFrame.
    """
    spark.createDataFrame([], "active int")


def _check_contract(spark: SparkSession, contract: EventContract) -> None:
    """The contract's rules compile (decoding no records analyses every rule's SQL)."""
    from event_log.decode import decode_events

    raw = spark.createDataFrame(
        [], "key binary, value binary, partition int, offset long, timestamp timestamp"
    )
    try:
        decode_events(raw, contract).columns  # noqa: B018 (analysis checks every rule's SQL)
    except Exception as err:
        raise ContractError(
            f"event contract ({contract.source}): a rule does not compile: {_first_line(err)}"
        ) from None


def _check_view(view: View, events: DataFrame, ctx: ViewContext, source: str) -> None:
    """One view runs on no events (of the contract ``source``) and presents its key."""
    where = defined_in(view)
    try:
        state = view.compute(events, ctx)
        presented = view.serve(state).columns
    except Exception as err:
        raise ViewModuleError(
            f"view {view.name!r} ({where}): compute fails on the events of "
            f"{source}: {type(err).__name__}: {_first_line(err)}"
        ) from None
    # the key identifies a presented row; a state may be finer or coarser (a view that
    # keeps its events as state, like purchase_bursts, derives its key on reading)
    missing = [k for k in view.key if k not in presented]
    if missing:
        raise ViewModuleError(
            f"view {view.name!r} ({where}): compute (then present) returns columns "
            f"{', '.join(presented)}, but its key names {', '.join(missing)}"
        )


def _first_line(err: Exception) -> str:
    """The first line of Spark's message (the rest is its plan or a stack)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else ""
