"""The lake pieces every layer stands on: offset ranges, the quarantine, serving sources.

The batch layer, the speed layer and the two designs share these; none of them owns
them, so they live a floor below all of them.
"""
