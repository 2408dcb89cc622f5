"""The speed layer: Spark Structured Streaming over ``events``, running the same views.

A lane (:mod:`speed_layer.lane`) is one streaming job with its own checkpoint, state
and progress log. The Lambda design runs one lane on top of the batch layer's runs
(:mod:`designs.lambda_arch`); Kappa runs one lane per version of the views (:mod:`kappa`).
"""
