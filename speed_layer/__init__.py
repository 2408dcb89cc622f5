"""The speed layer: Spark Structured Streaming over ``events``, running the same views.

In Lambda mode it covers what arrived since the latest batch cutoff (one lane,
``lambda-speed``, whose state is rebased onto each new batch run); in Kappa mode the
same code is the only code (one lane per version, see :mod:`kappa`).
"""

from speed_layer.lambda_lane import LAMBDA_LANE, lambda_epoch, run_speed

__all__ = ["LAMBDA_LANE", "lambda_epoch", "run_speed"]
