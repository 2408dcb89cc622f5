"""Measuring the platform: one implementation for ``lk compare`` and ``benchmarks/``.

* :mod:`measure.stats` - percentiles, lag trend, median and spread;
* :mod:`measure.generator` - a load generator in a process of its own, on a fixed
  schedule, reporting its schedule lag (coordinated omission made visible);
* :mod:`measure.live` - the shop-event source the generator sends (probes, late,
  duplicate and malformed events);
* :mod:`measure.resources` - CPU-seconds and peak RSS of a process tree;
* :mod:`measure.machine` - the machine and versions, an isolated broker, bytes on disk.
"""
