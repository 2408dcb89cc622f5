"""The Lambda batch layer: recompute every view over the whole retained log, on Delta."""

from batch_layer.job import BatchResult, read_batch_state, run_batch

__all__ = ["BatchResult", "read_batch_state", "run_batch"]
