"""The built-in view module: the five online-shop views over the shop event contract.

It registers its views exactly as a user's view module does (``VIEWS``); ``views.module``
in ``lk.yaml`` names it by default.
"""

from views import cart_state, conversions, events_by_type, revenue_by_category, user_sessions

VIEWS = (
    revenue_by_category.VIEW,
    events_by_type.VIEW,
    user_sessions.VIEW,
    conversions.VIEW,
    cart_state.VIEW,
)
