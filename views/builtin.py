"""The built-in view module: the online-shop views over the shop event contract.

It registers its views exactly as a user's view module does (``VIEWS``); ``views.module``
in ``lk.yaml`` names it by default.
"""

from views import (
    cart_state,
    cart_value_by_product,
    conversions,
    corrected_purchases,
    events_by_type,
    purchase_bursts,
    revenue_by_category,
    user_sessions,
)

VIEWS = (
    revenue_by_category.VIEW,
    events_by_type.VIEW,
    user_sessions.VIEW,
    conversions.VIEW,
    cart_state.VIEW,
    purchase_bursts.VIEW,
    corrected_purchases.VIEW,
    cart_value_by_product.VIEW,
)
