"""The Lambda design: batch run k ⊕ the speed layer's results after its cutoff ``C_k``.

It composes the two engines (``batch_layer`` publishes runs, ``speed_layer`` runs a
lane) without either importing the other: the speed lane's epochs follow the batch
layer's published runs (:mod:`designs.lambda_arch.epochs`), and readers are served the newest
run with the lane's epoch on it (:mod:`designs.lambda_arch.source`).
"""

from designs.lambda_arch.epochs import LAMBDA_LANE, lambda_epoch, run_speed
from designs.lambda_arch.source import lambda_source

__all__ = ["LAMBDA_LANE", "lambda_epoch", "lambda_source", "run_speed"]
