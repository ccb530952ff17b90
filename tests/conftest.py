"""Shared test configuration.

Hypothesis runs a bounded number of examples in CI (profile "ci", the default); set
``SOURCEGRAD_HYPOTHESIS_PROFILE=thorough`` locally for many more.
"""

import os

import numpy as np
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
settings.register_profile(
    "thorough",
    max_examples=500,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
settings.load_profile(os.environ.get("SOURCEGRAD_HYPOTHESIS_PROFILE", "ci"))

np.seterr(all="ignore")
